"""An Iceberg table's files on GCS or Azure, through petsync's own file systems.

pyiceberg's pyarrow FileIO builds its own GCS and Azure clients from catalog properties,
and there are settings it cannot be given: GCS with no credentials (an emulator; it would
ask the metadata server for a token instead), Azure from a connection string, and the
``az://`` URIs petsync accepts. So on those stores the catalog names this FileIO
(``py-io-impl``, set by :func:`petsync.formats.iceberg.file_properties`): every file of
the table goes through :func:`petsync.storage.filesystem.open_filesystem`, with the
endpoint and credentials :mod:`petsync.storage.credentials` chose, as the dated folders'
files do. Loaded by pyiceberg itself, never at petsync's import.
"""

from __future__ import annotations

from pyarrow.fs import FileSystem
from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.typedef import EMPTY_DICT, Properties

from petsync.storage.filesystem import open_filesystem
from petsync.storage.location import SCHEMES, parse_location

_OWN_STORES = ("gcs", "azure")


class StoreFileIO(PyArrowFileIO):
    """pyiceberg's pyarrow FileIO with petsync's file system for gs://, abfs:// and az://."""

    @staticmethod
    def parse_location(location: str, properties: Properties = EMPTY_DICT) -> tuple[str, str, str]:
        scheme, _, rest = location.partition("://")
        if SCHEMES.get(scheme.lower()) not in _OWN_STORES:
            return PyArrowFileIO.parse_location(location, properties)
        place = parse_location(location)
        # pyarrow's GCS and Azure file systems name a file BUCKET/KEY (the container for
        # Azure, whichever way the URI names the account).
        return scheme, rest.split("/", 1)[0], f"{place.bucket}/{place.prefix}"

    def _initialize_fs(self, scheme: str, netloc: str | None = None) -> FileSystem:
        if SCHEMES.get(scheme.lower()) not in _OWN_STORES:
            return super()._initialize_fs(scheme, netloc)
        return open_filesystem(parse_location(f"{scheme}://{netloc}"))
