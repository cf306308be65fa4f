"""The OpenAPI 3 document the reference server serves at ``/v1/openapi.json``.

Written by hand from the interface document, plus what this server adds where the interface
is silent (each described as "this server" in its description): the ``after`` keyset
parameter and ``Link`` header of listPets, 400 for a bad ``limit`` or ``status`` filter, and
the 429/503 answers of fault injection. Tests load it with schemathesis and run it against
the app, so it has to stay true.
"""

from __future__ import annotations

import copy
from typing import Any

from petsync.core.interface import LIMIT_DEFAULT, LIMIT_MAX, LIMIT_MIN
from petsync.core.models import STATUS_VALUES

_ERROR_REF = {"$ref": "#/components/schemas/Error"}


def _error(description: str, headers: dict[str, Any] | None = None) -> dict[str, Any]:
    response: dict[str, Any] = {
        "description": description,
        "content": {"application/json": {"schema": _ERROR_REF}},
    }
    if headers:
        response["headers"] = headers
    return response


_UNAUTHORIZED = _error("API key missing or invalid.")
_TOO_MANY = _error(
    "Rate limited (this server, when started with --rate-limit).",
    {"Retry-After": {"description": "Seconds to wait.", "schema": {"type": "integer"}}},
)
_UNAVAILABLE = _error("Unavailable (this server, when started with --fail-rate).")
_DEFAULT = _error("Any other error, as an Error body.")

_DOCUMENT: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {
        "title": "Petstore",
        "version": "1.0.0",
        "description": (
            "The Petstore interface, served by petsync's reference server. Pagination beyond "
            '`limit` is this server\'s choice: an RFC 8288 `Link` header with rel="next" '
            "over a keyset cursor (`after`)."
        ),
    },
    "servers": [{"url": "/v1"}],
    "security": [{"bearerAuth": []}],
    "paths": {
        "/pets": {
            "get": {
                "operationId": "listPets",
                "summary": "List animals",
                "parameters": [
                    {
                        "name": "limit",
                        "in": "query",
                        "required": False,
                        "description": "Maximum number of animals returned.",
                        "schema": {
                            "type": "integer",
                            "format": "int32",
                            "minimum": LIMIT_MIN,
                            "maximum": LIMIT_MAX,
                            "default": LIMIT_DEFAULT,
                        },
                    },
                    {
                        "name": "status",
                        "in": "query",
                        "required": False,
                        "description": "Keeps only animals with that availability status.",
                        "schema": {"$ref": "#/components/schemas/PetStatus"},
                    },
                    {
                        "name": "after",
                        "in": "query",
                        "required": False,
                        "description": (
                            "This server: keyset cursor, the last id of the previous page "
                            "(taken from the Link header; clients need not build it)."
                        ),
                        "schema": {"type": "integer", "format": "int64"},
                    },
                ],
                "responses": {
                    "200": {
                        "description": "A page of animals, ordered by id.",
                        "headers": {
                            "Link": {
                                "description": (
                                    'RFC 8288 link with rel="next" when the page is full.'
                                ),
                                "schema": {"type": "string"},
                            }
                        },
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/Pets"}}
                        },
                    },
                    "400": _error("This server: `limit` not in 1..100, or an unknown `status`."),
                    "401": _UNAUTHORIZED,
                    "429": _TOO_MANY,
                    "503": _UNAVAILABLE,
                    "default": _DEFAULT,
                },
            },
            "post": {
                "operationId": "createPet",
                "summary": "Add an animal",
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/NewPet"}}
                    },
                },
                "responses": {
                    "201": {
                        "description": "The created animal with its assigned id.",
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}
                        },
                    },
                    "400": _error("Required fields missing or values invalid."),
                    "401": _UNAUTHORIZED,
                    "413": _error("This server: request body over 1 MiB."),
                    "429": _TOO_MANY,
                    "503": _UNAVAILABLE,
                    "default": _DEFAULT,
                },
            },
        },
        "/pets/{petId}": {
            "get": {
                "operationId": "getPet",
                "summary": "Get an animal (deprecated: use GET /pets with the status filter)",
                "deprecated": True,
                "parameters": [
                    {
                        "name": "petId",
                        "in": "path",
                        "required": True,
                        "description": "Identifier of the animal.",
                        "schema": {"type": "integer", "format": "int64"},
                    }
                ],
                "responses": {
                    "200": {
                        "description": "The animal.",
                        "headers": {
                            "Deprecation": {
                                "description": "RFC 9745 deprecation date.",
                                "schema": {"type": "string"},
                            },
                            "Sunset": {
                                "description": "RFC 8594: removal on 5 December 2030.",
                                "schema": {"type": "string"},
                            },
                        },
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}
                        },
                    },
                    "401": _UNAUTHORIZED,
                    "404": _error("The animal does not exist (or petId is not an int64)."),
                    "429": _TOO_MANY,
                    "503": _UNAVAILABLE,
                    "default": _DEFAULT,
                },
            }
        },
    },
    "components": {
        "securitySchemes": {"bearerAuth": {"type": "http", "scheme": "bearer"}},
        "schemas": {
            "PetStatus": {
                "type": "string",
                "description": "Availability status.",
                "enum": list(STATUS_VALUES),
            },
            "NewPet": {
                "type": "object",
                "required": ["name", "categoryId"],
                "properties": {
                    "name": {"type": "string", "minLength": 1},
                    "categoryId": {"type": "integer", "format": "int64"},
                    "status": {"$ref": "#/components/schemas/PetStatus"},
                },
            },
            "Pet": {
                "type": "object",
                "required": ["id", "name", "categoryId"],
                "properties": {
                    "id": {"type": "integer", "format": "int64"},
                    "name": {"type": "string"},
                    "categoryId": {"type": "integer", "format": "int64"},
                    "status": {"$ref": "#/components/schemas/PetStatus"},
                },
            },
            "Pets": {"type": "array", "items": {"$ref": "#/components/schemas/Pet"}},
            "Error": {
                "type": "object",
                "required": ["code", "message", "status"],
                "properties": {
                    "code": {"type": "string"},
                    "message": {"type": "string"},
                    "status": {"type": "integer", "description": "Equals the HTTP status."},
                },
            },
        },
    },
}


def build_openapi() -> dict[str, Any]:
    """A fresh copy of the document (callers may change theirs freely)."""
    return copy.deepcopy(_DOCUMENT)
