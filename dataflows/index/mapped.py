"""Rows taken out of Arrow-backed columns without copying the whole column (a helper module, not a Hamilton module):
a loaded KB's texts and comments are memory-mapped in chunks (`cra.drivers.kb.mapped`), of which a request, or a
re-index, reads only the rows it needs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from cra.dataflows.distinct import distinct


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
        for c in distinct(chunk_of)
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


def file_texts(kb_contents: pd.DataFrame, files) -> dict[int, str]:
    """file_id -> text of the given files, read row by row (`values_at`: a KB's texts are memory-mapped)."""
    file_ids = kb_contents["file_id"].to_numpy()
    held = np.flatnonzero(np.isin(file_ids, files))
    held = held[np.unique(file_ids[held], return_index=True)[1]]  # one text per file
    return dict(zip(file_ids[held].tolist(), values_at(kb_contents["text"], held)))
