"""Which spreadsheet column holds which NewPet field.

Headers match the fields ``name``, ``categoryId`` and ``status`` case-, space- and
underscore-insensitively (``categoryId``, ``category_id``, ``Category ID`` all match
``categoryId``; so does ``Category`` when no column is headed so). ``--map "Column=field"``
names a column for a field when its header says something else; a mapped field no longer
matches by header. Columns whose header starts
with ``petsync_`` are petsync's own (reject and accepted files) and ignored on input, so a
fixed reject file imports as it is. Every other column is carried to the output files and
not sent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from petsync.core.errors import InputError
from petsync.core.settings_table import MAP
from petsync.core.wording import Placeholder, Said, joined, words

FIELDS: tuple[str, ...] = ("name", "categoryId", "status")
REQUIRED_FIELDS: tuple[str, ...] = ("name", "categoryId")
PETSYNC_PREFIX = "petsync_"
# A header read as categoryId when no column is headed so (nor mapped to it).
CATEGORY_ALIAS = "category"
# The column of created ids in accepted files: such a file must never be imported again.
ACCEPTED_MARKER = "petsync_id"


def category_key(name: str) -> str:
    """How category names are compared (``--category-map``): case and spaces ignored.

    >>> category_key(" Guinea  Pig "), category_key("guineapig")
    ('guineapig', 'guineapig')
    """
    return "".join(name.casefold().split())


def match_key(header: str) -> str:
    """The form headers are compared in: lower case, without spaces and underscores.

    >>> match_key(" Category_ID "), match_key("categoryId")
    ('categoryid', 'categoryid')
    """
    return "".join(ch for ch in header.casefold() if not ch.isspace() and ch != "_")


_FIELD_BY_KEY = {match_key(field): field for field in FIELDS}


def is_petsync_column(header: str) -> bool:
    """True for the ``petsync_*`` columns petsync adds to the files it writes."""
    return header.strip().casefold().startswith(PETSYNC_PREFIX)


@dataclass(frozen=True)
class ColumnMap:
    """Column index (0-based) of each field; ``status`` may be absent.

    ``carried`` lists the indexes of the columns copied to output files: every column but
    the ``petsync_*`` ones.
    """

    name: int
    categoryId: int  # noqa: N815 - the API's spelling
    status: int | None
    carried: tuple[int, ...]
    mapped: tuple[str, ...] = ()  # fields named by a mapping, not by their header
    ignored_maps: tuple[str, ...] = ()  # mappings naming a column this file lacks
    # The category map's ids by category_key(name), and the map's file name.
    category_names: Mapping[str, int] | None = None
    category_map_name: str = ""

    def field_at(self, index: int) -> str | None:
        """The field column ``index`` holds, if any."""
        for field in FIELDS:
            if getattr(self, field) == index:
                return field
        return None

    def carried_fields(self, width: int) -> dict[int, str]:
        """``{position: field}``: where the fields sit among the carried cells of a row of a
        sheet ``width`` columns wide.

        >>> resolve_columns(["notes", "name", "categoryId"], [], Path()).carried_fields(3)
        {1: 'name', 2: 'categoryId'}
        """
        kept = (i for i in self.carried if i < width)
        return {
            position: field
            for position, index in enumerate(kept)
            if (field := self.field_at(index)) is not None
        }

    def output_header(self, header: Sequence[str]) -> list[str]:
        """The carried columns' headers as output files write them.

        A column read through ``--map`` is written under its field's name, so the reject
        file reads again with no ``--map``; another column whose header would then match
        that field too gets `` (unused)`` after its header.

        >>> cols = resolve_columns(["Pet", "Name", "cat"], ["Pet=name", "cat=categoryId"], Path())
        >>> cols.output_header(["Pet", "Name", "cat"])
        ['name', 'Name (unused)', 'categoryId']
        """
        out: list[str] = []
        for index in self.carried:
            field = self.field_at(index)
            title = header[index] if index < len(header) else ""
            if field is not None and field in self.mapped:
                out.append(field)
            elif field is None and _FIELD_BY_KEY.get(match_key(title)) in self.mapped:
                out.append(f"{title} (unused)")
            else:
                out.append(title)
        return out

    def unsent(self, header: Sequence[str]) -> list[str]:
        """The headers of the carried columns no field is read from: written, not sent.

        >>> cols = resolve_columns(["name", "categoryId", "photoUrls", ""], [], Path())
        >>> cols.unsent(["name", "categoryId", "photoUrls", ""])
        ['photoUrls']
        """
        return [
            header[i]
            for i in self.carried
            if i < len(header) and header[i].strip() and self.field_at(i) is None
        ]

    def map_hints(self, header: Sequence[str]) -> list[Said]:
        """The mappings that would send an unsent column, where its header suggests a
        field no column holds (only ``status`` can be missing: the others are required).

        >>> cols = resolve_columns(["name", "categoryId", "Pet state"], [], Path())
        >>> [str(hint) for hint in cols.map_hints(["name", "categoryId", "Pet state"])]
        ['mappings="Pet state=status"']
        """
        if self.status is not None:
            return []
        hints: list[Said] = []
        for title in self.unsent(header):
            key = match_key(title)
            if "status" in key or "state" in key:
                hints.append(words(MAP.given(Placeholder(f'"{title.strip()}=status"'))))
        return hints

    def describe(self, header: Sequence[str]) -> dict[str, str]:
        """``{field: header}`` for the journal and the summary."""
        out = {"name": header[self.name], "categoryId": header[self.categoryId]}
        if self.status is not None:
            out["status"] = header[self.status]
        return out


def parse_mapping(text: str) -> tuple[str, str]:
    """Split one ``--map "Column=field"`` value into (column, field)."""
    column, sep, field = text.rpartition("=")
    if not sep or not column.strip() or not field.strip():
        raise InputError(
            MAP.given(Placeholder(repr(text)))
            + ' must look like "Column=field", e.g. '
            + MAP.given(Placeholder('"Pet name=name"'))
            + f" (fields: {', '.join(FIELDS)})"
        )
    canonical = _FIELD_BY_KEY.get(match_key(field))
    if canonical is None:
        raise InputError(
            MAP.given(Placeholder(repr(text)))
            + f": {field.strip()!r} is not a field; use one of {', '.join(FIELDS)}"
        )
    return column.strip(), canonical


def resolve_columns(header: Sequence[str], mappings: Sequence[str], path: Path) -> ColumnMap:
    """Find the column of each field, or raise :class:`InputError` naming the columns found."""
    found = ", ".join(repr(h) for h in header)
    if any(title.strip().casefold() == ACCEPTED_MARKER for title in header):
        raise InputError(
            f"{path} has a {ACCEPTED_MARKER} column: it lists pets petsync already created "
            "(an accepted file); importing it would create them again. Import the original "
            "file, its reject file or its uncertain file instead"
        )
    chosen: dict[str, int] = {}
    mapped: set[str] = set()
    ignored: list[str] = []
    seen_fields: set[str] = set()
    for text in mappings:
        column, field = parse_mapping(text)
        if field in seen_fields:
            raise InputError(
                f"{path}: field {field!r} is mapped twice with "
                + MAP
                + f"; map each field once. Columns found: {found}"
            )
        seen_fields.add(field)
        index = _find_mapped_column(header, column, path, found)
        if index is None:  # a map written for another sheet: this one reads by its headers
            ignored.append(text)
            continue
        chosen[field] = index
        mapped.add(field)
    by_header: dict[str, list[int]] = {}
    for index, title in enumerate(header):
        if is_petsync_column(title) or index in chosen.values():
            continue
        matched = _FIELD_BY_KEY.get(match_key(title))
        if matched is not None and matched not in chosen:
            by_header.setdefault(matched, []).append(index)
    for field, indexes in by_header.items():
        if len(indexes) > 1:
            columns = " and ".join(f"{header[i]!r} (column {i + 1})" for i in indexes)
            raise InputError(
                f"{path}: field {field!r} matches two columns, {columns}; rename one, or pass "
                + MAP.given(Placeholder(f'"COLUMN={field}"'))
                + " to say which one holds it"
            )
        chosen[field] = indexes[0]
    if "categoryId" not in chosen:
        # Staff head the column "Category" (numbers, or names a --category-map reads).
        loose = [
            i
            for i, title in enumerate(header)
            if match_key(title) == CATEGORY_ALIAS and i not in chosen.values()
        ]
        if len(loose) == 1:
            chosen["categoryId"] = loose[0]
    missing = [field for field in REQUIRED_FIELDS if field not in chosen]
    if missing:
        names = " and ".join(repr(f) for f in missing)
        unmatched = joined(
            "",
            (
                " (" + MAP.given(Placeholder(repr(text))) + " names no column of this file)"
                for text in ignored
            ),
        )
        raise InputError(
            f"{path}: no column for {names}; columns found: {found}"
            + unmatched
            + f". Name the header {' and '.join(missing)}, or pass "
            + MAP.given(Placeholder(f'"COLUMN={missing[0]}"'))
        )
    carried = tuple(i for i, title in enumerate(header) if not is_petsync_column(title))
    return ColumnMap(
        name=chosen["name"],
        categoryId=chosen["categoryId"],
        status=chosen.get("status"),
        carried=carried,
        mapped=tuple(field for field in FIELDS if field in mapped),
        ignored_maps=tuple(ignored),
    )


def names_fields(cells: Sequence[str], mappings: Sequence[str], path: Path) -> bool:
    """True when ``cells``, as a header, name the fields as :func:`resolve_columns` reads
    them (``name`` and ``categoryId`` by header or ``--map``).

    >>> names_fields(["Name", "categoryId"], [], Path()), names_fields(["April"], [], Path())
    (True, False)
    """
    if not any(cell.strip() for cell in cells):
        return False
    try:
        resolve_columns(cells, mappings, path)
    except InputError:
        return False
    return True


def closest_to_fields(rows: Sequence[Sequence[str]], mappings: Sequence[str]) -> int | None:
    """The index of the row of ``rows`` with most cells naming a field or a ``--map``
    column; None when none does.

    >>> closest_to_fields([["April"], ["name", "notes"], ["name", "cat"]], ["cat=categoryId"])
    2
    """
    keys = {match_key(field) for field in FIELDS}
    for text in mappings:
        try:
            keys.add(match_key(parse_mapping(text)[0]))
        except InputError:
            continue
    best: int | None = None
    best_score = 0
    for index, cells in enumerate(rows):
        score = sum(1 for cell in cells if match_key(cell) in keys)
        if score > best_score:
            best, best_score = index, score
    return best


def _find_mapped_column(header: Sequence[str], column: str, path: Path, found: str) -> int | None:
    """The index of the column ``--map`` names; None when this file has no such column."""
    exact = [i for i, title in enumerate(header) if title.strip() == column]
    if len(exact) == 1:
        return exact[0]
    loose = [i for i, title in enumerate(header) if match_key(title) == match_key(column)]
    if len(exact) > 1 or len(loose) > 1:
        raise InputError(
            f"{path}: " + MAP + f" names column {column!r}, and two columns have that header; "
            f"rename one. Columns found: {found}"
        )
    if not loose:
        return None
    return loose[0]
