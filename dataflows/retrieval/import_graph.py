"""The import edges indexed by each end, so that a request finds the edges touching a few files without a pass over
all of them (a large repository has millions: OpenJDK 17 has 2.2M, and a request asked for them about ten times).

Built once per loaded KB (`cra.drivers.retrieval.retriever.request_overrides`); the answers are the edge rows,
ascending, that a mask over the whole table would have given, so callers keep the table's order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class ImportGraph:
    """Edge rows grouped by source file and by destination file (CSR: rows of file f at offsets[f]:offsets[f+1])."""

    src: np.ndarray
    dst: np.ndarray
    from_order: np.ndarray
    from_offsets: np.ndarray
    into_order: np.ndarray
    into_offsets: np.ndarray

    def __len__(self) -> int:
        return len(self.src)

    def rows_from(self, files) -> np.ndarray:
        """Rows (ascending) of the edges whose source is one of files."""
        return _rows(self.from_order, self.from_offsets, files)

    def rows_into(self, files) -> np.ndarray:
        """Rows (ascending) of the edges whose destination is one of files."""
        return _rows(self.into_order, self.into_offsets, files)


def _grouped(ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows ordered by end (stable: ascending within an end) and each end's start in that order."""
    order = np.argsort(ends, kind="stable")
    counts = np.bincount(ends, minlength=1) if len(ends) else np.zeros(1, dtype=np.int64)
    return order, np.concatenate([[0], np.cumsum(counts)])


def import_graph(kb_edges: pd.DataFrame) -> ImportGraph:
    """The edges of kb_edges indexed by source and by destination file id (non-negative integers)."""
    none = np.zeros(0, dtype=np.int64)  # (an empty table may come without its columns)
    src = kb_edges["src_file_id"].to_numpy() if len(kb_edges) else none  # (their own dtype: what callers had)
    dst = kb_edges["dst_file_id"].to_numpy() if len(kb_edges) else none
    (from_order, from_offsets), (into_order, into_offsets) = _grouped(src), _grouped(dst)
    return ImportGraph(src, dst, from_order, from_offsets, into_order, into_offsets)


def _rows(order: np.ndarray, offsets: np.ndarray, files) -> np.ndarray:
    """The rows of the given files' groups, ascending (a file without edges, or an unknown id, has none)."""
    files = np.unique(np.asarray(files, dtype=np.int64))
    files = files[(files >= 0) & (files < len(offsets) - 1)]
    low, high = offsets[files], offsets[files + 1]
    counts = high - low
    gather = np.repeat(low - (np.cumsum(counts) - counts), counts) + np.arange(counts.sum())
    return np.sort(order[gather])
