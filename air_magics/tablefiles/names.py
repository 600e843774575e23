"""Table names: validated three-part names and how they map onto the embedded store.

Only plain identifiers are accepted (letters, digits, ``_``; not starting with a digit), so a name
can never carry quotes, backticks, semicolons or whitespace into SQL; it is still quoted with
backticks whenever it is used.

The embedded Spark (Hive metastore) has one catalog; built-in Spark cannot serve writable tables in
a catalog named ``main``. So on the embedded store ``catalog.schema.table`` lives in the database
``<catalog>__<schema>`` of ``spark_catalog``; ``schema.table`` means ``main.schema.table`` and a bare
``table`` means ``main.default.table``. Against a remote session names pass through unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import TableNameError

__all__ = ["TableName", "DEFAULT_CATALOG", "DEFAULT_SCHEMA", "SEP"]

DEFAULT_CATALOG = "main"
DEFAULT_SCHEMA = "default"
SEP = "__"
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}\Z")


def _quote(part: str) -> str:
    return "`" + part.replace("`", "``") + "`"


@dataclass(frozen=True)
class TableName:
    catalog: str
    schema: str
    table: str

    @classmethod
    def parse(cls, text: str) -> TableName:
        """``[catalog.][schema.]table`` as text (the defaults fill missing parts)."""
        if not isinstance(text, str) or not text.strip():
            raise TableNameError(f"table name {text!r} is empty: write catalog.schema.table")
        return cls.from_parts(text.strip().split("."), text)

    @classmethod
    def from_parts(cls, parts: Sequence[str], text: str | None = None) -> TableName:
        """A name from its 1-3 parts as a parser split them (a quoted ```t.x``` is one part, never two:
        joining and splitting again would name another table). *text* is what the error quotes."""
        parts = list(parts)
        if not 1 <= len(parts) <= 3 or not all(_IDENT.match(p) for p in parts) or any(SEP in p for p in parts[:2]):
            shown = text if text is not None else ".".join(p if _IDENT.match(p) else _quote(p) for p in parts)
            raise TableNameError(
                f"invalid table name {shown!r}: use [catalog.][schema.]table made of letters, digits and '_' "
                f"(no quotes, backticks, dots inside a part, spaces or '{SEP}' in catalog/schema)"
            )
        while len(parts) < 3:
            parts.insert(0, DEFAULT_SCHEMA if len(parts) == 1 else DEFAULT_CATALOG)
        return cls(*parts)

    @property
    def database(self) -> str:
        """The embedded store's database for this catalog and schema."""
        return f"{self.catalog}{SEP}{self.schema}"

    def embedded_sql(self) -> str:
        return f"{_quote('spark_catalog')}.{_quote(self.database)}.{_quote(self.table)}"

    def remote_sql(self) -> str:
        return ".".join(_quote(p) for p in (self.catalog, self.schema, self.table))

    def sql(self, embedded: bool) -> str:
        return self.embedded_sql() if embedded else self.remote_sql()

    def __str__(self) -> str:
        return f"{self.catalog}.{self.schema}.{self.table}"


def split_database(database: str) -> tuple[str, str] | None:
    """``main__default`` -> ``("main", "default")``; ``None`` for databases we did not create."""
    if SEP not in database:
        return None
    cat, _, sch = database.partition(SEP)
    return (cat, sch) if cat and sch else None
