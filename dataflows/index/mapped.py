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


def int_chunks(values: pd.Series) -> list[np.ndarray] | None:
    """An integer column's values without a copy: a view of a mapped table's column (Arrow-backed, no nulls) as its
    chunks' own arrays, any other as its one array (converting a view's 13M file ids took 50 MB and 30 ms, and a node
    did it up to three times); None when the values are not integers."""
    if not len(values):
        return []
    if isinstance(values.dtype, pd.ArrowDtype) and pa.types.is_integer(values.dtype.pyarrow_dtype):
        chunked = values.array._pa_array
        if chunked.null_count == 0:
            return [c.to_numpy(zero_copy_only=True) for c in chunked.chunks if len(c)]
    array = values.to_numpy()
    return [array] if array.dtype.kind in "iu" else None


def ascending(chunks: list[np.ndarray]) -> bool:
    """Whether the chunks' values (`int_chunks`) ascend, within and across chunks."""
    return all((c[1:] >= c[:-1]).all() for c in chunks) and all(a[-1] <= b[0] for a, b in zip(chunks, chunks[1:]))


def sorted_search(chunks: list[np.ndarray], keys, side: str = "left") -> np.ndarray:
    """np.searchsorted over the ascending values of `int_chunks`: the rows before a key in the whole column are those
    before it in each chunk, summed (keys searched in each chunk's own type where they fit: no cast of the column)."""
    keys = np.asarray(keys)
    out = np.zeros(keys.shape, dtype=np.int64)
    for chunk in chunks:
        fits = keys.dtype.kind in "iu" and chunk.dtype.kind in "iu"
        out += np.searchsorted(chunk, _as_type(keys, chunk.dtype) if fits else keys, side)
    return out


def same_ints(
    chunks: list[np.ndarray], lo: int, hi: int, others: list[np.ndarray], other_lo: int, other_hi: int
) -> bool:
    """Whether rows lo:hi of one column and other_lo:other_hi of another (`int_chunks`) hold the same values, compared
    a stretch of both chunks at a time: no copy of either (OpenJDK's 20M symbol term ids, 160 MB each as int64)."""
    if hi - lo != other_hi - other_lo:
        return False
    a, b = _stretches(chunks, lo, hi), _stretches(others, other_lo, other_hi)
    i = j = at_a = at_b = 0
    while i < len(a) and j < len(b):
        n = min(len(a[i]) - at_a, len(b[j]) - at_b)
        if not np.array_equal(a[i][at_a : at_a + n], b[j][at_b : at_b + n]):
            return False
        at_a, at_b = at_a + n, at_b + n
        if at_a == len(a[i]):
            i, at_a = i + 1, 0
        if at_b == len(b[j]):
            j, at_b = j + 1, 0
    return True


def _stretches(chunks: list[np.ndarray], lo: int, hi: int) -> list[np.ndarray]:
    """Views of the chunks' parts that hold rows lo:hi of the whole column, in order."""
    out, start = [], 0
    for chunk in chunks:
        end = start + len(chunk)
        if end > lo and start < hi:
            out.append(chunk[max(lo - start, 0) : min(hi, end) - start])
        start = end
    return [piece for piece in out if len(piece)]


def ints_at(chunks: list[np.ndarray], rows) -> np.ndarray:
    """The values at these row positions of the column `int_chunks` gave."""
    rows = np.asarray(rows, dtype=np.int64)
    if not len(rows):
        return np.zeros(0, dtype=np.int64)
    if len(chunks) == 1:
        return chunks[0][rows]
    offsets = np.cumsum([0] + [len(c) for c in chunks])
    which = np.searchsorted(offsets, rows, side="right") - 1
    out = np.empty(len(rows), dtype=np.result_type(*chunks))
    for k in np.unique(which):
        out[which == k] = chunks[k][rows[which == k] - offsets[k]]
    return out


def _as_type(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Integer values as dtype where they fit (a binary search of an int32 column for int64 values converts the whole
    column first), else as they are."""
    info = np.iinfo(dtype)
    fits = not len(values) or (info.min <= values.min() and values.max() <= info.max)
    return values.astype(dtype) if fits else values
