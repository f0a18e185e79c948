"""The import edges indexed by source file, so that a request finds the edges touching a few files without passing
over all of them more than it must (a large repository has millions: OpenJDK 17 has 2.2M, and a request asked for
them about ten times, building frames of millions of pairs on the way).

Built once per loaded KB (`cra.drivers.retrieval.retriever.request_overrides`) at the cost of one stable sort of the
sources (the KB writes edges sorted by source: then a linear pass). Edges into files are found by a boolean table
over every edge (a few milliseconds): indexing destinations too would cost a real sort of millions of ids on every
cold start. The answers are the edge rows, ascending, that a mask over the whole table gives, so callers keep the
table's order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from cra.dataflows.distinct import distinct

MASK_SHARE = 8  # a walk touching more than 1/MASK_SHARE of the edges looks them up by a table over every edge


@dataclass(frozen=True)
class ImportGraph:
    """Edge rows grouped by source file (CSR: the rows of file f are order[offsets[f]:offsets[f + 1]])."""

    src: np.ndarray
    dst: np.ndarray
    order: np.ndarray
    offsets: np.ndarray
    crossing: np.ndarray  # per edge: its two files differ (not a self-import)

    def __len__(self) -> int:
        return len(self.src)

    def rows_from(self, files) -> np.ndarray:
        """Rows (ascending) of the edges whose source is one of files: gathered from their groups, or (most of the
        edges: the gather and its sort would cost more) by a table over every edge."""
        ids = self._known(files)
        if int((self.offsets[ids + 1] - self.offsets[ids]).sum()) * MASK_SHARE > len(self):
            return np.flatnonzero(self._table(ids)[self.src])
        low, high = self.offsets[ids], self.offsets[ids + 1]
        counts = high - low
        gather = np.repeat(low - (np.cumsum(counts) - counts), counts) + np.arange(counts.sum())
        return np.sort(self.order[gather])

    def rows_into(self, files) -> np.ndarray:
        """Rows (ascending) of the edges whose destination is one of files."""
        return np.flatnonzero(self._table(self._known(files))[self.dst])

    def neighbours(self, files) -> np.ndarray:
        """The distinct files one import from files, in either direction (self-imports aside), ascending: marked
        in a table over file ids, never a frame of the (up to millions of) pairs."""
        ids = self._known(files)
        table = self._table(ids)
        hit = np.zeros(len(table), dtype=bool)
        if int((self.offsets[ids + 1] - self.offsets[ids]).sum()) * MASK_SHARE > len(self):
            hit[self.dst[table[self.src] & self.crossing]] = True
        else:
            out = self.rows_from(ids)
            hit[self.dst[out[self.crossing[out]]]] = True
        hit[self.src[table[self.dst] & self.crossing]] = True
        return np.flatnonzero(hit)

    def _known(self, files) -> np.ndarray:
        """The distinct ids of files within the range of file ids the edges have (int64, ascending)."""
        ids = distinct(np.asarray(files, dtype=np.int64))
        return ids[(ids >= 0) & (ids < len(self.offsets) - 1)]

    def _table(self, ids: np.ndarray) -> np.ndarray:
        """A boolean lookup table over every file id an edge has: True at ids."""
        table = np.zeros(len(self.offsets) - 1, dtype=bool)
        table[ids] = True
        return table


def import_graph(kb_edges: pd.DataFrame) -> ImportGraph:
    """The edges of kb_edges indexed by source file id (file ids: non-negative integers)."""
    none = np.zeros(0, dtype=np.int64)  # (an empty table may come without its columns)
    src = kb_edges["src_file_id"].to_numpy() if len(kb_edges) else none  # (their own dtype: what callers had)
    dst = kb_edges["dst_file_id"].to_numpy() if len(kb_edges) else none
    top = int(max(src.max(), dst.max())) + 1 if len(src) else 0
    offsets = np.concatenate([[0], np.cumsum(np.bincount(src, minlength=top))])  # (a file id past either end: no rows)
    return ImportGraph(src, dst, np.argsort(src, kind="stable"), offsets, src != dst)
