"""BM25 over a (doc, term, tf) frame: a query weights the postings of its own terms, a few array slices.

Built from the KB's `file_terms` / `symbol_terms` tables at index time and persisted with the KB in the compact
form of `Bm25Index.arrays()` (sorted vocabulary, term offsets, postings), so loading a KB only reads arrays back
(`Bm25Index.from_arrays`). A query touches only the postings of its own terms: its cost does not grow with the
repository. No weight is persisted: a query term's weights come from its postings' term counts, the docs' lengths,
its df, N and the mean length (O(df), `Bm25Index.weights`), so a lexicon patched after an edit (`patched`) re-weights
nothing.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

K1 = 0.9  # Lucene defaults as in the eval README's baseline
B = 0.4
_CHUNK = 1 << 20  # postings whose doc lengths are summed at once (float64 temporaries of 8 MB, not of 20M postings)
ARRAYS = ("vocab", "starts", "doc_ids", "postings_doc", "postings_tf", "doc_len")  # the persisted form, in this order


def stable_order(codes: np.ndarray) -> np.ndarray:
    """np.argsort(codes, kind="stable") for codes in [0, 2**32), as two 16-bit radix passes (numpy radix-sorts
    16-bit keys): about twice as fast on a million postings."""
    codes = np.asarray(codes)  # (4 bytes a row, no copy of int32 codes: a posting array is tens of millions of rows)
    codes = codes.view(np.uint32) if codes.dtype == np.int32 else codes.astype(np.uint32)
    rows = np.int32 if len(codes) < 2**31 else np.int64  # positions kept as int32: half the memory of argsort's
    order = np.argsort(codes.astype(np.uint16), kind="stable").astype(rows)  # by the low 16 bits (the cast wraps)
    high = codes[order]
    high >>= 16
    high = high.astype(np.uint16)
    return order[np.argsort(high, kind="stable")]


class ArrowVocabulary:
    """A sorted Arrow string array as a sequence of str (what bisect needs): a term is decoded where it is looked at,
    and the vocabulary (millions of terms on a large repository) is never a Python string per term."""

    def __init__(self, array: pa.Array):
        self.array = array

    def __len__(self) -> int:
        return len(self.array)

    def __getitem__(self, i: int) -> str:
        return self.array[i].as_py()


def sorted_term_codes(terms: pd.Series) -> tuple[np.ndarray, ArrowVocabulary]:
    """(int32 code of each row's term, distinct terms in code-point order), by Arrow's dictionary encoding: whatever
    the terms' dtype (Arrow strings, objects, a categorical in any category order)."""
    values = pa.array(terms, from_pandas=True)  # Arrow-backed strings: the column's own buffers, not copied
    values = values if isinstance(values, pa.ChunkedArray) else pa.chunked_array([values])
    # one dictionary for all chunks: dictionary_encode makes one, a categorical (one chunk) has one
    encoded = values.unify_dictionaries() if pa.types.is_dictionary(values.type) else pc.dictionary_encode(values)
    dictionary = encoded.chunk(0).dictionary
    indices = np.concatenate([chunk.indices.to_numpy(zero_copy_only=False) for chunk in encoded.chunks])
    used = np.flatnonzero(np.bincount(indices, minlength=len(dictionary)))  # (a categorical may hold unused ones)
    order = used[pc.sort_indices(dictionary.take(pa.array(used))).to_numpy()]  # UTF-8 byte order = code-point order
    rank = np.full(len(dictionary), -1, dtype=np.int32)
    rank[order] = np.arange(len(order), dtype=np.int32)
    return rank[indices], ArrowVocabulary(dictionary.take(pa.array(order)))


def _doc_positions(docs: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """(int32 position of each row's doc among the distinct docs in sorted order, those docs): by run boundaries when
    rows come in doc order (a KB's term tables), which takes no hash table and no int64 codes, else by factorize."""
    values = docs.to_numpy()
    if values.dtype.kind in "iu" and len(values) and (values[1:] >= values[:-1]).all():
        starts = np.empty(len(values), dtype=bool)
        starts[0] = True
        np.not_equal(values[1:], values[:-1], out=starts[1:])
        positions = np.cumsum(starts, dtype=np.int32)
        positions -= 1
        return positions, values[starts]
    positions, distinct = pd.factorize(docs, sort=True)
    return positions.astype(np.int32), np.asarray(distinct)


@dataclass(frozen=True, eq=False)
class Bm25Index:
    vocab: (
        np.ndarray | ArrowVocabulary
    )  # distinct terms, sorted (object array or Arrow strings): found by binary search
    starts: np.ndarray  # postings of vocab[i] are [starts[i], starts[i + 1])
    doc_ids: np.ndarray  # the doc id (file_id / symbol_id) of each doc position
    postings_doc: np.ndarray  # doc position of each posting, grouped by term
    postings_tf: np.ndarray  # the term's count in the doc, of each posting
    doc_len: np.ndarray  # each doc's term count (float64 sums of integers: exact)
    k1: float = K1
    b: float = B

    @classmethod
    def from_terms(cls, frame: pd.DataFrame, doc_col: str, k1: float = K1, b: float = B) -> Bm25Index:
        """Index a frame with columns (doc_col, term, tf)."""
        if frame.empty:
            empty = np.array([], dtype=np.int64)
            return cls.from_arrays(np.array([], dtype=object), np.zeros(1, dtype=np.int64), empty, empty, empty, empty)
        # the rows' codes first, while nothing else is held: ordering postings by term takes most of the memory
        term_codes, vocab = sorted_term_codes(frame["term"])
        df = np.bincount(term_codes, minlength=len(vocab))
        doc_pos, doc_ids = _doc_positions(frame[doc_col])  # (int32 row arrays: a large KB's postings are 20M rows)
        if (doc_pos[1:] >= doc_pos[:-1]).all():
            order = stable_order(term_codes)  # postings by term, then doc: whatever order rows came in
        else:
            by_doc = stable_order(doc_pos)
            order = by_doc[stable_order(term_codes[by_doc])]
            del by_doc
        del term_codes
        postings_doc = doc_pos[order]
        tf = frame["tf"].to_numpy()
        postings_tf = tf[order]
        del order
        doc_len = np.zeros(len(doc_ids))
        for start in range(0, len(doc_pos), _CHUNK):  # sums of integer counts: exact in any grouping
            doc_len += np.bincount(
                doc_pos[start : start + _CHUNK], weights=tf[start : start + _CHUNK], minlength=len(doc_ids)
            )
        del doc_pos
        starts = np.concatenate([[0], np.cumsum(df)])  # postings by term: each term's df postings in a row
        return cls.from_arrays(vocab, starts, doc_ids, postings_doc, postings_tf, doc_len, k1, b)

    @classmethod
    def from_arrays(cls, vocab, starts, doc_ids, postings_doc, postings_tf, doc_len, k1=K1, b=B) -> Bm25Index:
        """The index from its persisted arrays (`arrays()`), as numpy arrays of the stored types."""
        vocab = vocab if isinstance(vocab, ArrowVocabulary) else np.asarray(vocab, dtype=object)
        return cls(
            vocab,
            np.asarray(starts, dtype=np.int64),
            np.asarray(doc_ids),
            np.asarray(postings_doc, dtype=np.int32),
            np.asarray(postings_tf, dtype=np.int32),
            np.asarray(doc_len, dtype=np.float64),
            k1,
            b,
        )

    @cached_property
    def avg_len(self) -> float:
        """The docs' mean length, what BM25 normalises a doc's length by (an exact sum of integers, divided once:
        the same figure however the lengths are laid out)."""
        return (self.doc_len.mean() if len(self.doc_len) else 0.0) or 1.0

    def idf(self, df: np.ndarray) -> np.ndarray:
        """Each document frequency's inverse document frequency (BM25's, never negative)."""
        return np.log(1.0 + (len(self.doc_ids) - df + 0.5) / (df + 0.5))

    def weights(self, start: int, end: int, idf: float) -> np.ndarray:
        """The BM25 weights (idf * saturated tf) of the postings [start, end) of one term, computed when a query asks
        for that term (O(df)), so an index patched after an edit re-weights nothing. Each step of the formula in
        this order, so a score is the same float however many postings were weighted at once."""
        k1, b = self.k1, self.b
        counts = self.postings_tf[start:end].astype(np.float64)
        # weight = idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * doc_len / avg_len))
        norm = self.doc_len[self.postings_doc[start:end]]
        norm *= b
        norm /= self.avg_len
        norm += 1.0 - b
        norm *= k1
        norm += counts
        weight = np.full(end - start, idf)
        weight *= counts
        weight *= k1 + 1.0
        weight /= norm
        return weight

    def arrays(self) -> dict[str, np.ndarray]:
        """The compact persisted form: name -> array, names as in ARRAYS."""
        return {name: getattr(self, name) for name in ARRAYS}

    def patched(self, new_ids: np.ndarray, added: pd.DataFrame, doc_col: str) -> Bm25Index:
        """The index `from_terms` builds over this one's docs renumbered and some of them replaced, from this one's
        postings and the added docs' rows only: no term of the kept docs is decoded, sorted or counted again.

        new_ids: each doc position's new doc id (in doc_ids order, increasing where kept), -1 for a doc dropped (gone,
        or changed and among `added`); added: (doc_col, term, tf) rows of the docs that are new or changed, in any
        order, no doc of them kept. Nothing is weighted here: a query weights its own terms' postings (`weights`)."""
        new_ids = np.asarray(new_ids, dtype=np.int64)
        kept = new_ids >= 0
        if (np.diff(new_ids[kept]) <= 0).any():
            raise ValueError("kept docs must keep their order")
        added_ids = added[doc_col].to_numpy()
        doc_ids = np.sort(np.concatenate([new_ids[kept], np.unique(added_ids)]))  # (np.union1d hashes all of them)
        if (np.diff(doc_ids) <= 0).any():
            raise ValueError("an added doc is also kept")
        doc_ids = doc_ids.astype(np.asarray(self.doc_ids).dtype)
        position = np.full(len(new_ids), -1, dtype=np.int64)  # old doc position -> new doc position
        position[kept] = np.searchsorted(doc_ids, new_ids[kept])
        # the vocabulary: the added rows' terms not known yet go in at their sorted places
        codes, terms = sorted_term_codes(added["term"]) if len(added) else (np.array([], np.int32), None)
        vocab = (
            self.vocab
            if isinstance(self.vocab, ArrowVocabulary)
            else ArrowVocabulary(pa.array(self.vocab, pa.string()))
        )
        words = terms.array.to_pylist() if terms is not None else []
        at = np.array([bisect.bisect_left(vocab, w) for w in words], dtype=np.int64)
        known = np.array([i < len(vocab) and vocab[i] == w for i, w in zip(at, words)], dtype=bool)
        fresh_at = at[~known]  # insertion points (old codes) of the new terms, ascending with them
        shift = np.searchsorted(fresh_at, np.arange(len(vocab)), side="right")
        old_code = np.arange(len(vocab)) + shift  # old term code -> new
        added_code = np.empty(len(words), dtype=np.int64)
        added_code[known] = old_code[at[known]]
        added_code[~known] = fresh_at + np.arange(len(fresh_at))
        merged = np.empty(len(vocab) + len(fresh_at), dtype=np.int64)  # new code -> (old code, or V_old + new term)
        merged[old_code] = np.arange(len(vocab))
        merged[added_code[~known]] = len(vocab) + np.arange(len(fresh_at))
        fresh_terms = pa.array([w for w, k in zip(words, known) if not k], type=vocab.array.type)
        new_vocab = ArrowVocabulary(pa.concat_arrays([vocab.array, fresh_terms]).take(pa.array(merged)))
        # postings: the kept ones stay in (term, doc) order under both renumberings; the added ones go in between, found
        # term by term among the kept postings of their term (int32 arrays the length of the postings, no int64 keys)
        doc_of = position.astype(np.int32)[self.postings_doc]
        keep = doc_of >= 0
        starts = np.asarray(self.starts, dtype=np.int64)
        kept_df = np.zeros(len(merged), dtype=np.int64)
        if len(keep):
            kept_df[old_code] = np.add.reduceat(keep, starts[:-1], dtype=np.int64) if len(vocab) else 0
        doc_of, tf = doc_of[keep], np.asarray(self.postings_tf)[keep]
        del keep
        kept_starts = np.concatenate([[0], np.cumsum(kept_df)])
        add_term = added_code[codes]
        add_doc = np.searchsorted(doc_ids, added_ids).astype(np.int32)
        add_tf = added["tf"].to_numpy().astype(np.int32)
        order = np.lexsort((add_doc, add_term))
        add_term, add_doc, add_tf = add_term[order], add_doc[order], add_tf[order]
        into = np.empty(len(add_term), dtype=np.int64)
        bounds = np.flatnonzero(np.diff(add_term)) + 1
        for first, last in zip(np.r_[0, bounds], np.r_[bounds, len(add_term)]) if len(add_term) else ():
            lo, hi = kept_starts[add_term[first]], kept_starts[add_term[first] + 1]
            into[first:last] = lo + np.searchsorted(doc_of[lo:hi], add_doc[first:last])
        postings_doc = np.insert(doc_of, into, add_doc)
        postings_tf = np.insert(tf, into, add_tf)
        df = kept_df + np.bincount(add_term, minlength=len(merged))
        n = len(doc_ids)
        if not df.all():  # terms only the dropped docs had: gone from the vocabulary, as from a fresh one
            new_vocab, df = ArrowVocabulary(new_vocab.array.filter(pa.array(df > 0))), df[df > 0]
        doc_len = np.zeros(n)
        doc_len[position[kept]] = np.asarray(self.doc_len)[kept]
        doc_len += np.bincount(add_doc, weights=add_tf, minlength=n)
        starts = np.concatenate([[0], np.cumsum(df)])
        return Bm25Index.from_arrays(new_vocab, starts, doc_ids, postings_doc, postings_tf, doc_len, self.k1, self.b)

    def _span(self, term: str) -> tuple[int, int] | None:
        """[start, end) of the term's postings, None when the vocabulary does not have it."""
        i = bisect.bisect_left(self.vocab, term)  # any sorted sequence of str: an array, or a memory-mapped one
        if i >= len(self.vocab) or self.vocab[i] != term:
            return None
        return int(self.starts[i]), int(self.starts[i + 1])

    def totals(self, query_terms: Iterable[str]) -> np.ndarray:
        """BM25 score of every doc for the query terms (repeated terms count, sub-linearly), in doc_ids order."""
        total = np.zeros(len(self.doc_ids))
        found = [(span, count) for term, count in Counter(query_terms).items() if (span := self._span(term))]
        idfs = self.idf(np.array([end - start for (start, end), _ in found], dtype=np.int64))
        for ((start, end), count), idf in zip(found, idfs):
            weight = self.weights(start, end, idf)
            np.add.at(total, self.postings_doc[start:end], weight * (1.0 + np.log(count)))
        return total

    def scores(self, query_terms: Iterable[str]) -> pd.Series:
        """`totals` indexed by doc id."""
        return pd.Series(self.totals(query_terms), index=self.doc_ids)

    def scores_at(self, query_terms: Iterable[str], ids: np.ndarray) -> np.ndarray:
        """`scores(...).reindex(ids).fillna(0)` by binary search over the sorted doc ids: no hash table over every
        doc (745k symbols on OpenJDK: 12 ms a request) for the few dozen a caller asks about."""
        total = self.totals(query_terms)
        doc_ids, ids = np.asarray(self.doc_ids), np.asarray(ids)
        if not len(doc_ids):
            return np.zeros(len(ids))
        at = np.minimum(np.searchsorted(doc_ids, ids), len(doc_ids) - 1)
        return np.where(doc_ids[at] == ids, total[at], 0.0)

    def document_frequency(self, term: str) -> int:
        """How many docs contain the term (0 when unknown): lets callers drop terms that match everything."""
        span = self._span(term)
        return 0 if span is None else span[1] - span[0]
