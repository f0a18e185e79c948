"""Tables kept as uncompressed Arrow IPC files and memory-mapped when read (a helper module, not a Hamilton
module): every file's text and every comment, of which a request, or a parse worker, reads only the rows it needs.
`cra.drivers.kb.store` stores the KB's mapped tables with these; the index writes its contents table with them before the
parse, so that the tree's texts are on disk, not in the driver's memory, while the files are parsed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from cra.dataflows.index.schema import TABLES, arrow_schema

BATCH_ROWS = 10_000  # rows of texts converted and written at once: all of OpenJDK's texts at once took 0.5 GB more
TEXT_TABLES = frozenset({"contents", "comments"})  # (other tables' rows are small: converted a million at a time)


def write_mapped(frame: pd.DataFrame | None, table: str, path: Path) -> None:
    """One KB table (the schema's columns; None or empty: no rows) as an Arrow IPC file, a batch of rows at a time."""
    if frame is None or frame.empty:  # typed by the schema, whatever an empty frame's columns were inferred as
        frame = pd.DataFrame({c: pd.Series(dtype=object) for c in TABLES[table]})
    frame, schema = frame[list(TABLES[table])], arrow_schema(table)
    rows = BATCH_ROWS if table in TEXT_TABLES else 1 << 20
    batches = (
        pa.Table.from_pandas(frame.iloc[start : start + rows], schema=schema, preserve_index=False)
        for start in range(0, len(frame), rows)
    )
    write_batches(batches, table, path)


def write_batches(batches, table: str, path: Path) -> None:
    """One KB table as an Arrow IPC file from Arrow tables of its rows (in the schema's columns and types)."""
    with pa.ipc.new_file(path, arrow_schema(table)) as writer:
        for batch in batches:
            writer.write_table(batch)


def taken(column: pa.Array | pa.ChunkedArray, rows: np.ndarray) -> pa.Array:
    """column.take(rows), without first concatenating a chunked column's chunks, as Arrow's take on a ChunkedArray
    does (a copy of the whole column: OpenJDK's 500 MB of texts for each batch of rows)."""
    rows = np.asarray(rows, dtype=np.int64)
    if isinstance(column, pa.Array):
        return column.take(pa.array(rows))
    bounds = np.cumsum([0, *(len(chunk) for chunk in column.chunks)])
    chunk_of = np.searchsorted(bounds, rows, side="right") - 1
    by_chunk = np.argsort(chunk_of, kind="stable")
    parts = [
        column.chunk(int(c)).take(pa.array(rows[by_chunk][chunk_of[by_chunk] == c] - bounds[c]))
        for c in np.unique(chunk_of)
    ]
    grouped = pa.concat_arrays(parts) if parts else pa.array([], type=column.type)
    return grouped.take(pa.array(np.argsort(by_chunk, kind="stable")))  # back in the order asked for


def values_at(values: pd.Series, rows) -> list:
    """The values at a few row positions as Python objects. An Arrow-backed column (a loaded KB's, memory-mapped in
    chunks) is taken chunk by chunk (`taken`): pandas' take concatenates every chunk first, which cost a request on
    OpenJDK's 525 MB of file texts a second to read four of them, and a re-index of Django 50 ms for its manifests."""
    if not hasattr(values.array, "__arrow_array__"):
        return values.iloc[rows].tolist()
    return taken(pa.array(values.array), rows).to_pylist()


def read_mapped(path: Path, arrow_backed: bool = True) -> pd.DataFrame:
    """A frame over the memory-mapped file, zero-copy where columns are Arrow-backed (all of them, or with
    arrow_backed False as a Parquet table reads: strings as pandas strings, integers as numpy)."""
    return _table(path).to_pandas(types_mapper=pd.ArrowDtype if arrow_backed else None)


def texts_of(path: Path, file_ids) -> list[str]:
    """The texts of these file_ids in a contents file (ordered by file_id, as the index writes it)."""
    table = _table(path)
    ids = table.column("file_id").to_numpy()
    rows = np.searchsorted(ids, np.asarray(file_ids, dtype=ids.dtype))
    if len(rows) and (rows.max() >= len(ids) or (ids[rows] != np.asarray(file_ids)).any()):
        raise KeyError(f"file ids missing from {path}")
    return taken(table.column("text"), rows).to_pylist()


def _table(path: Path) -> pa.Table:
    return pa.ipc.open_file(pa.memory_map(str(path), "r")).read_all()
