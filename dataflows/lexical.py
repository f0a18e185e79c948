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

from cra.dataflows.distinct import distinct

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


SPLICE_EVENTS = 20_000  # places up to which `spliced` copies the runs between them one by one


def sorted_positions(vocab: pa.Array, terms: pa.Array) -> np.ndarray:
    """bisect_left of each term in a sorted Arrow string array (UTF-8 byte order = code-point order), all terms a
    halving step at a time: a changed file's thousand terms among a million in some 20 vectorised steps, instead of
    a Python string decoded per probe."""
    lo, hi = np.zeros(len(terms), dtype=np.int64), np.full(len(terms), len(vocab), dtype=np.int64)
    while len(vocab) and (open_ := lo < hi).any():
        mid = np.minimum((lo + hi) // 2, len(vocab) - 1)
        below = pc.less(vocab.take(pa.array(mid)), terms).to_numpy(zero_copy_only=False)
        lo = np.where(open_ & below, mid + 1, lo)
        hi = np.where(open_ & ~below, mid, hi)
    return lo


def spliced(
    source: np.ndarray, drops: np.ndarray, into: np.ndarray, values: np.ndarray, remap: np.ndarray | None = None
) -> np.ndarray:
    """source without the elements at `drops` (ascending), with values[k] put before element into[k] (ascending),
    copied a run at a time between these places (each run's values looked up in `remap` when given): a patch of a
    few changed docs moves the postings once, without a mask, an index or a copy of them per step."""
    if len(drops) + len(into) > SPLICE_EVENTS:  # many places: two vectorised passes beat a Python loop over them
        out = np.delete(source, drops)
        out = remap[out] if remap is not None else out
        return np.insert(out, into - np.searchsorted(drops, into), values)
    out = np.empty(len(source) - len(drops) + len(values), dtype=source.dtype)
    events = sorted([(int(i), 0, k) for k, i in enumerate(into)] + [(int(i), 1, -1) for i in drops])
    cursor = done = 0
    for index, is_drop, k in events + [(len(source), 2, -1)]:
        n = index - cursor
        if n > 0:
            if remap is None:
                out[done : done + n] = source[cursor:index]
            else:
                np.take(remap, source[cursor:index], out=out[done : done + n])
            done, cursor = done + n, index
        if is_drop == 0:
            out[done] = values[k]
            done += 1
        elif is_drop == 1:
            cursor = index + 1
    return out


class Scoring:
    """What a BM25 index answers a query with, from its `doc_ids`, `doc_len`, `k1`, `b` and the postings of each
    term (`postings_of`): shared by the index as built (`Bm25Index`) and one with an edit's docs layered over it
    (`cra.dataflows.lexicon_layers.LayeredIndex`), so both score a doc with the same floats."""

    @cached_property
    def avg_len(self) -> float:
        """The docs' mean length, what BM25 normalises a doc's length by (an exact sum of integers, divided once:
        the same figure however the lengths are laid out)."""
        return (self.doc_len.mean() if len(self.doc_len) else 0.0) or 1.0

    def idf(self, df: np.ndarray) -> np.ndarray:
        """Each document frequency's inverse document frequency (BM25's, never negative)."""
        return np.log(1.0 + (len(self.doc_ids) - df + 0.5) / (df + 0.5))

    def posting_weights(self, docs: np.ndarray, tf: np.ndarray, idf: float) -> np.ndarray:
        """The BM25 weights (idf * saturated tf) of one term's postings (doc positions, term counts), computed when a
        query asks for that term (O(df)), so an index patched after an edit re-weights nothing. Each step of the
        formula in this order, so a score is the same float however many postings were weighted at once."""
        k1, b = self.k1, self.b
        counts = tf.astype(np.float64)
        # weight = idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * doc_len / avg_len))
        norm = self.doc_len[docs]
        norm *= b
        norm /= self.avg_len
        norm += 1.0 - b
        norm *= k1
        norm += counts
        weight = np.full(len(docs), idf)
        weight *= counts
        weight *= k1 + 1.0
        weight /= norm
        return weight

    def totals(self, query_terms: Iterable[str]) -> np.ndarray:
        """BM25 score of every doc for the query terms (repeated terms count, sub-linearly), in doc_ids order."""
        total = np.zeros(len(self.doc_ids))
        found = [(p, count) for term, count in Counter(query_terms).items() if (p := self.postings_of(term))]
        idfs = self.idf(np.array([len(docs) for (docs, _), _ in found], dtype=np.int64))
        for ((docs, tf), count), idf in zip(found, idfs):
            np.add.at(total, docs, self.posting_weights(docs, tf, idf) * (1.0 + np.log(count)))
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
        found = self.postings_of(term)
        return 0 if found is None else len(found[0])


def term_codes(vocab: pa.Array, terms: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(each term's place in a sorted vocabulary, whether the vocabulary has it there), all terms a halving step at
    a time (`sorted_positions`)."""
    terms = terms.cast(vocab.type)
    at = sorted_positions(vocab, terms)
    found = at < len(vocab)
    if found.any():
        found[found] = pc.equal(vocab.take(pa.array(at[found])), terms.filter(pa.array(found))).to_numpy(
            zero_copy_only=False
        )
    return at, found


def vocabulary_with(vocab: pa.Array, words: pa.Array) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """A sorted vocabulary with these sorted distinct words put in at their places where it lacks them: (the new
    vocabulary, each old term's code in it, each word's code in it)."""
    at, known = term_codes(vocab, words)
    fresh_at = at[~known]  # insertion points (old codes) of the new terms, ascending with them
    old_code = np.arange(len(vocab)) + np.searchsorted(fresh_at, np.arange(len(vocab)), side="right")  # -> new
    word_code = np.empty(len(words), dtype=np.int64)
    word_code[known] = old_code[at[known]]
    word_code[~known] = fresh_at + np.arange(len(fresh_at))
    fresh, bounds = words.filter(pa.array(~known)), np.r_[0, fresh_at, len(vocab)]
    new_vocab = pa.concat_arrays(
        [vocab.slice(bounds[0], bounds[1])]
        + [
            piece
            for k in range(len(fresh_at))
            for piece in (fresh.slice(k, 1), vocab.slice(bounds[k + 1], bounds[k + 2] - bounds[k + 1]))
        ]
    )
    return new_vocab, old_code, word_code


def vocab_array(vocab: np.ndarray | ArrowVocabulary) -> pa.Array:
    """A vocabulary as an Arrow string array (its own, when it is one)."""
    return vocab.array if isinstance(vocab, ArrowVocabulary) else pa.array(np.asarray(vocab, dtype=object), pa.string())


@dataclass(frozen=True, eq=False)
class Bm25Index(Scoring):
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

    @property
    def n_postings(self) -> int:
        """How many (term, doc) postings the index holds: as many as its term table has rows."""
        return int(self.starts[-1]) if len(self.starts) else 0

    def postings_of(self, term: str) -> tuple[np.ndarray, np.ndarray] | None:
        """The doc positions and term counts of a term's postings (views), None when the vocabulary lacks it."""
        span = self._span(term)
        return None if span is None else (self.postings_doc[span[0] : span[1]], self.postings_tf[span[0] : span[1]])

    def term_counts(self) -> tuple[pa.Array, np.ndarray]:
        """The sorted vocabulary and each term's document frequency."""
        return vocab_array(self.vocab), np.diff(np.asarray(self.starts, dtype=np.int64))

    def codes_of(self, terms: pa.Array) -> tuple[np.ndarray, np.ndarray]:
        """(each term's code, whether the vocabulary has it): `term_codes` in this index's vocabulary."""
        return term_codes(vocab_array(self.vocab), terms)

    def counts_of(self, terms: pa.Array) -> np.ndarray:
        """The document frequency of each of these terms (0 for those the vocabulary lacks)."""
        at, found = self.codes_of(terms)
        starts = np.asarray(self.starts, dtype=np.int64)
        counts = np.zeros(len(terms), dtype=np.int64)
        counts[found] = starts[at[found] + 1] - starts[at[found]]
        return counts

    def arrays(self) -> dict[str, np.ndarray]:
        """The compact persisted form: name -> array, names as in ARRAYS."""
        return {name: getattr(self, name) for name in ARRAYS}

    def patched(self, new_ids: np.ndarray, added: pd.DataFrame, doc_col: str) -> Bm25Index:
        """The index `from_terms` builds over this one's docs renumbered and some of them replaced, from this one's
        postings and the added docs' rows only: no term of the kept docs is decoded, sorted or counted again, and
        the postings are copied a run at a time between the few places a change touches (`spliced`).

        new_ids: each doc position's new doc id (in doc_ids order, increasing where kept), -1 for a doc dropped (gone,
        or changed and among `added`); added: (doc_col, term, tf) rows of the docs that are new or changed, in any
        order, no doc of them kept. Nothing is weighted here: a query weights its own terms' postings (`weights`)."""
        new_ids = np.asarray(new_ids, dtype=np.int64)
        kept = new_ids >= 0
        if (np.diff(new_ids[kept]) <= 0).any():
            raise ValueError("kept docs must keep their order")
        added_ids = added[doc_col].to_numpy()
        doc_ids = np.sort(np.concatenate([new_ids[kept], distinct(added_ids)]))
        if (np.diff(doc_ids) <= 0).any():
            raise ValueError("an added doc is also kept")
        doc_ids = doc_ids.astype(np.asarray(self.doc_ids).dtype)
        kept_at = np.flatnonzero(kept)
        position = np.full(len(new_ids), -1, dtype=np.int64)  # old doc position -> new doc position
        position[kept] = np.searchsorted(doc_ids, new_ids[kept])
        # the vocabulary: the added rows' terms not known yet go in at their sorted places
        vocab = vocab_array(self.vocab)
        codes, terms = sorted_term_codes(added["term"]) if len(added) else (np.array([], np.int32), None)
        words = terms.array.cast(vocab.type) if terms is not None else pa.array([], vocab.type)
        new_vocab, old_code, added_code = vocabulary_with(vocab, words)
        # postings: the dropped docs' found in one pass; the kept ones stay in (term, doc) order under both numberings
        starts = np.asarray(self.starts, dtype=np.int64)
        old_doc, old_tf = np.asarray(self.postings_doc), np.asarray(self.postings_tf)
        drops = np.flatnonzero((~kept)[old_doc]) if not kept.all() else np.array([], dtype=np.int64)
        df = np.zeros(len(new_vocab), dtype=np.int64)
        df[old_code] = np.diff(starts) - np.bincount(np.searchsorted(starts, drops, "right") - 1, minlength=len(vocab))
        # the added postings by (term, doc), each put before the first posting of a kept doc that comes after it
        add_term = added_code[codes]
        add_doc = np.searchsorted(doc_ids, added_ids).astype(np.int32)
        add_tf = added["tf"].to_numpy().astype(np.int32)
        order = np.lexsort((add_doc, add_term))
        add_term, add_doc, add_tf = add_term[order], add_doc[order], add_tf[order]
        df += np.bincount(add_term, minlength=len(df))
        next_kept = np.r_[kept_at, len(new_ids)][np.searchsorted(position[kept], add_doc)]  # its old position
        into = np.empty(len(add_term), dtype=np.int64)
        runs = np.flatnonzero(np.diff(add_term)) + 1
        for first, last in zip(np.r_[0, runs], np.r_[runs, len(add_term)]) if len(add_term) else ():
            old = int(np.searchsorted(old_code, add_term[first]))  # the old term it is, or comes before when new
            if old < len(vocab) and old_code[old] == add_term[first]:
                lo, hi = starts[old], starts[old + 1]
                into[first:last] = lo + np.searchsorted(old_doc[lo:hi], next_kept[first:last])
            else:
                into[first:last] = starts[old]
        remap = None if np.array_equal(position[kept], kept_at) else position.astype(old_doc.dtype)
        postings_doc = spliced(old_doc, drops, into, add_doc, remap)
        postings_tf = spliced(old_tf, drops, into, add_tf)
        if not df.all():  # terms only the dropped docs had: gone from the vocabulary, as from a fresh one
            new_vocab, df = new_vocab.filter(pa.array(df > 0)), df[df > 0]
        n = len(doc_ids)
        doc_len = np.zeros(n)
        doc_len[position[kept]] = np.asarray(self.doc_len)[kept]
        doc_len += np.bincount(add_doc, weights=add_tf, minlength=n)
        starts = np.concatenate([[0], np.cumsum(df)])
        return Bm25Index.from_arrays(
            ArrowVocabulary(new_vocab), starts, doc_ids, postings_doc, postings_tf, doc_len, self.k1, self.b
        )

    def _span(self, term: str) -> tuple[int, int] | None:
        """[start, end) of the term's postings, None when the vocabulary does not have it."""
        i = bisect.bisect_left(self.vocab, term)  # any sorted sequence of str: an array, or a memory-mapped one
        if i >= len(self.vocab) or self.vocab[i] != term:
            return None
        return int(self.starts[i]), int(self.starts[i + 1])
