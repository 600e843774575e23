"""Tables through Spark Connect: read to pandas/NumPy/Arrow, write, list, export to Parquet on a volume.

The session is a ``spark`` already in the notebook, a remote ``sc://`` URL (or ``SPARK_REMOTE``), or an
embedded local Spark Connect server started on first use (see :mod:`air_magics.tables.server`).
pyspark is imported only when a function here is called.
"""

from ..tablefiles.names import TableName
from .export import ExportResult, export_table
from .ops import describe_table, list_tables, read_sql, read_table, write_table
from .server import stop_server
from .session import Session, get_session

__all__ = [
    "read_table",
    "read_sql",
    "write_table",
    "list_tables",
    "describe_table",
    "export_table",
    "ExportResult",
    "TableName",
    "get_session",
    "Session",
    "stop_server",
]
