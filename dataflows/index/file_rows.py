"""The rows of a few files in a table ordered by file_id (a KB's term tables), found by binary search and replaced
by slices: a re-index that changes a few of OpenJDK's files touches neither the 13M file term rows it keeps nor a
mask over them (a helper module, not a Hamilton module)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from cra.dataflows.distinct import distinct, distinct_union
from cra.dataflows.index.frames import ids_in
from cra.dataflows.index.mapped import ascending, int_chunks, sorted_search

SPLICE_MAX_FILES = 256  # files a re-index may replace the rows of by slices of the previous table (beyond: mask + sort)
SEARCH_MAX_FILES = 4096  # files whose rows are found by binary search (beyond: a mask over every row)


def replaced_files(indexed_files: pd.DataFrame, previous_files: pd.DataFrame) -> np.ndarray:
    """The file ids whose previous rows go (sorted, distinct): the files this run did not reuse (changed or new) and
    the previous ones it does not index under the same id (gone)."""
    reused = indexed_files["reused"].fillna(False).astype(bool).to_numpy()
    before = previous_files["file_id"]
    return distinct_union(
        indexed_files.loc[~reused, "file_id"].to_numpy(dtype=np.int64),
        before[~ids_in(before, indexed_files.loc[reused, "file_id"])].to_numpy(dtype=np.int64),
    )


def file_row_spans(file_ids: pd.Series, files) -> tuple[np.ndarray, np.ndarray] | None:
    """(first row, end row) of each of `files` (sorted, distinct) in a file_id column in order, by binary search: the
    rows of a few files out of OpenJDK's 13M without a pass over them, nor a copy of a view's column (`int_chunks`);
    None when the column is not in order."""
    chunks = int_chunks(file_ids)
    if chunks is None or not ascending(chunks):
        return None
    files = np.asarray(files, dtype=np.int64)
    return sorted_search(chunks, files, side="left"), sorted_search(chunks, files, side="right")


def rows_of_files(frame: pd.DataFrame, files) -> np.ndarray:
    """Positions of the rows of these files in a frame with a file_id column, in row order: by `file_row_spans`
    when they are few and the column is in order, else by a mask."""
    files = distinct(np.asarray(files, dtype=np.int64))
    spans = file_row_spans(frame["file_id"], files) if len(files) <= SEARCH_MAX_FILES else None
    if spans is None:
        return np.flatnonzero(ids_in(frame["file_id"], files))
    starts, ends = spans
    return np.concatenate([np.arange(a, b) for a, b in zip(starts, ends)] + [np.zeros(0, dtype=np.int64)])


def spliced_files(previous: pd.DataFrame, replaced: np.ndarray, counted: pd.DataFrame) -> pd.DataFrame | None:
    """previous (in file_id order) with the rows of the `replaced` files (sorted, distinct) dropped and `counted` (rows
    of some of them, in file_id order) put in their place, as slices: what mask + concat + stable sort give, when few
    files changed and some previous rows stay; None otherwise (or when either side is out of order). The counted
    rows take the previous rows' column types (a view's: Arrow-backed)."""
    if not len(previous) or len(replaced) > SPLICE_MAX_FILES:
        return None
    new_ids = counted["file_id"].to_numpy()
    if not np.isin(distinct(new_ids), replaced).all():
        return None
    spans = file_row_spans(previous["file_id"], replaced)
    if spans is None or (new_ids[1:] < new_ids[:-1]).any() or (spans[1] - spans[0]).sum() == len(previous):
        return None
    new_spans = file_row_spans(counted["file_id"], replaced)
    counted = counted.astype({c: previous[c].dtype for c in counted.columns if c in previous.columns})
    pieces, done = [], 0
    for start, end, new_start, new_end in zip(*spans, *new_spans):
        pieces += [previous.iloc[done:start], counted.iloc[new_start:new_end]]
        done = max(done, end)
    pieces.append(previous.iloc[done:])
    pieces = [piece for piece in pieces if len(piece)]
    return pd.concat(pieces, ignore_index=True) if pieces else previous.iloc[:0]
