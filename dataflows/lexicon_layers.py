"""A BM25 index with an edit's docs layered over it: what a re-index after a small edit persists instead of a
patched copy of the whole lexicon.

Patching a lexicon (`Bm25Index.patched`) copies every posting: OpenJDK's file terms are 13M postings, 127 MB read
and written again for a one-line edit. A `LayeredIndex` keeps the previous lexicon as it is (its file is linked into
the new version) and adds a small one over the docs that changed or are new (the delta) and, for each doc of the
base, its id now or -1 where it was dropped. Queries score it with the same floats as the patched index: a doc's
postings are its own in either layer, every weight takes the same length, mean length and document frequency, and
a doc receives its terms' weights in the same order. Once the delta outgrows a share of the base the two are folded
into one index again (`cra.drivers.kb.store`), as a full index always writes.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd
import pyarrow as pa

from cra.dataflows.lexical import Bm25Index, Scoring, vocab_array, vocabulary_with


@dataclass(frozen=True, eq=False)
class LayeredIndex(Scoring):
    base: Bm25Index  # the lexicon as a past run wrote it
    base_ids: np.ndarray  # each base doc position's doc id now, -1 where dropped (increasing where kept)
    delta: Bm25Index  # the docs that are not the base's: changed or new, under their ids now
    postings: int | None = None  # n_postings as the run that wrote the layers counted it (None: counted here)

    @property
    def k1(self) -> float:
        return self.base.k1

    @property
    def b(self) -> float:
        return self.base.b

    @cached_property
    def _layout(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(doc ids, each base position's doc position now or -1, each delta position's doc position now, lengths)."""
        base_ids = np.asarray(self.base_ids, dtype=np.int64)
        kept = base_ids >= 0
        delta_ids = np.asarray(self.delta.doc_ids, dtype=np.int64)
        # (two ascending runs: a stable sort merges them in one pass, 3 ms for OpenJDK's 1.2M symbols, not 100)
        doc_ids = np.sort(np.concatenate([base_ids[kept], delta_ids]), kind="stable")
        doc_ids = doc_ids.astype(np.asarray(self.base.doc_ids).dtype)
        base_at = np.full(len(base_ids), -1, dtype=np.int64)
        base_at[kept] = np.searchsorted(doc_ids, base_ids[kept])
        delta_at = np.searchsorted(doc_ids, delta_ids)
        doc_len = np.zeros(len(doc_ids))
        doc_len[base_at[kept]] = np.asarray(self.base.doc_len)[kept]
        doc_len[delta_at] = self.delta.doc_len
        return doc_ids, base_at, delta_at, doc_len

    @property
    def doc_ids(self) -> np.ndarray:
        return self._layout[0]

    @property
    def doc_len(self) -> np.ndarray:
        return self._layout[3]

    def postings_of(self, term: str) -> tuple[np.ndarray, np.ndarray] | None:
        """The doc positions (now) and term counts of a term's postings in both layers, None when it has none."""
        _, base_at, delta_at, _ = self._layout
        docs, tfs = [], []
        for index, at in ((self.base, base_at), (self.delta, delta_at)):
            found = index.postings_of(term)
            if found is not None:
                positions = at[found[0]]
                alive = positions >= 0
                docs.append(positions[alive])
                tfs.append(found[1][alive])
        if not docs or not sum(map(len, docs)):
            return None
        return (np.concatenate(docs), np.concatenate(tfs)) if len(docs) > 1 else (docs[0], tfs[0])

    @cached_property
    def _dropped_counts(self) -> np.ndarray:
        """Per base term, how many of its postings are of dropped docs (one pass over the base's postings)."""
        dropped = np.asarray(self.base_ids) < 0
        starts = np.asarray(self.base.starts, dtype=np.int64)
        if not dropped.any():
            return np.zeros(len(starts) - 1, dtype=np.int64)
        rows = np.flatnonzero(dropped[self.base.postings_doc])
        return np.bincount(np.searchsorted(starts, rows, "right") - 1, minlength=len(starts) - 1)

    @property
    def n_postings(self) -> int:
        """Postings of both layers but those of dropped docs (counting these is a pass over the base's postings:
        45 ms on OpenJDK's 13M, so a persisted index gives the count it was written with)."""
        if self.postings is not None:
            return self.postings
        return self.base.n_postings - int(self._dropped_counts.sum()) + self.delta.n_postings

    def term_counts(self) -> tuple[pa.Array, np.ndarray]:
        """The sorted vocabulary of both layers and each term's document frequency (0 for a term only dropped docs
        had)."""
        vocab, counts = self.base.term_counts()
        words, delta_counts = self.delta.term_counts()
        merged, old_code, word_code = vocabulary_with(vocab, words.cast(vocab.type))
        out = np.zeros(len(merged), dtype=np.int64)
        out[old_code] = counts - self._dropped_counts
        out[word_code] += delta_counts
        return merged, out

    def counts_of(self, terms: pa.Array) -> np.ndarray:
        """The document frequency of each of these terms (0 for those neither layer has)."""
        at, found = self.base.codes_of(terms)
        starts, kept = np.asarray(self.base.starts, dtype=np.int64), at[found]
        counts = np.zeros(len(terms), dtype=np.int64)
        counts[found] = starts[kept + 1] - starts[kept] - self._dropped_counts[kept]
        return counts + self.delta.counts_of(terms)

    def delta_rows(self, doc_col: str) -> pd.DataFrame:
        """The delta's (doc_col, term, tf) rows."""
        delta = self.delta
        df = np.diff(np.asarray(delta.starts, dtype=np.int64))
        return pd.DataFrame(
            {
                doc_col: np.asarray(delta.doc_ids)[delta.postings_doc],
                "term": pd.Series(vocab_array(delta.vocab).take(pa.array(np.repeat(np.arange(len(df)), df)))),
                "tf": np.asarray(delta.postings_tf),
            }
        )

    def merged(self, doc_col: str = "doc") -> Bm25Index:
        """The one index these layers are (what `Bm25Index.from_terms` builds over the same rows, bit for bit)."""
        return self.base.patched(self.base_ids, self.delta_rows(doc_col), doc_col)


Lexicon = Bm25Index | LayeredIndex  # what a KB's persisted lexicon is read as
