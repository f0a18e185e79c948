"""The files table (facts + tokens + parse errors + history + concepts), file contents and the run's stats."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from cra.dataflows.distinct import distinct
from cra.dataflows.index.file_rows import replaced_files, rows_of_files, spliced_files
from cra.dataflows.index.frames import (
    conform,
    doc_count,
    ids_in,
    kept_rows,
    numpy_ints,
    ordered_by,
    positions_in,
    previous_table,
    take_rows,
)
from cra.dataflows.index.mapped import ascending, int_chunks
from cra.dataflows.index.schema import arrow_schema
from cra.dataflows.index.storage import BATCH_ROWS, CarriedRows, ContentsStore
from cra.dataflows.lexical import ArrowVocabulary, sorted_term_codes, term_codes
from cra.dataflows.lexicon_layers import Lexicon

MAX_CONCEPTS = 10
CONCEPT_LISTS = pa.list_(pa.string())  # a files table's concepts: Arrow lists throughout (read, carried, written)


def kb_concept_terms(
    parsed_concept_terms: pd.DataFrame, indexed_files: pd.DataFrame, previous_kb: dict[str, pd.DataFrame] | None
) -> pd.DataFrame:
    """(file_id, term, tf) over each file's identifiers (symbol names), docstrings and comments, what its concepts are
    scored on: counted by the parse for new/changed files, the previous rows for unchanged ones; ordered by file_id."""
    counted = parsed_concept_terms
    previous = previous_table(previous_kb, "concept_terms")
    reused = indexed_files["reused"].fillna(False).astype(bool).to_numpy()
    spliced = None
    if previous_kb and "files" in previous_kb:
        spliced = spliced_files(previous, replaced_files(indexed_files, previous_kb["files"]), counted)
    if spliced is not None:  # (a few files changed: their rows replaced in place, no mask or sort over every row)
        return conform(spliced, "concept_terms")
    previous = numpy_ints(previous)
    carried = kept_rows(previous, ids_in(previous["file_id"], indexed_files.loc[reused, "file_id"]))
    frames = [
        f for f in (carried, counted.astype({"term": carried["term"].dtype}) if len(carried) else counted) if len(f)
    ]
    terms = pd.concat(frames, ignore_index=True) if frames else counted
    return conform(ordered_by(terms, "file_id"), "concept_terms")


def file_concepts(
    kb_concept_terms: pd.DataFrame,
    kb_file_terms: pd.DataFrame,
    indexed_files: pd.DataFrame,
    previous_files: pd.DataFrame,
    previous_kb: dict[str, pd.DataFrame] | None,
    previous_file_lexicon: Lexicon | None = None,
) -> pd.DataFrame:
    """Up to 10 most distinctive terms per file_id (`concepts`): tf over the file's identifiers, docstrings and comments
    (kb_concept_terms; files without any: their full-text terms) times idf from the whole KB's document frequencies
    (derived from kb_file_terms); ordered by score then term. With each file's `concept_lo`, `concept_hi`: the range
    of log(1 + number of files) + 1 over which these stay its top terms in order (`_scored_concepts`).
    A file's score changes only with its own terms, the number of files and the document frequencies of its terms: an
    unchanged file none of whose terms changed document frequency carries its previous concepts over (exactly what
    scoring it again would give), the others are scored. A term whose document frequency rose scores lower in every
    file: a file's top 10 changes with it only when the term is in it, so only the files citing it are scored again (a
    comment appended to one of OpenJDK's files adds a word to hundreds of files' terms, to few files' concepts).
    When the number of files moves (a file added or deleted), every idf moves by the same amount and the order of
    nearly tied terms with it: a file carries its concepts while the new number lies in its range (OpenJDK: scoring
    every file again took 2.4 s).
    The document frequencies of the few files' terms are the previous lexicon's (previous_file_lexicon, when it is
    that of the previous file terms) plus the change: counting them over OpenJDK's 13M rows took 0.3-0.9 s."""
    reused = indexed_files["reused"].fillna(False).astype(bool).to_numpy()
    ids = pd.Index(indexed_files["file_id"].astype("int64"))
    before = previous_files.set_index("file_id").reindex(ids[reused])
    carried = (
        _concept_lists(before["concepts"][before["concepts"].notna()])
        if reused.any()
        else _concept_lists(pd.Series(dtype=object))
    )
    bounds = pd.DataFrame({c: before[c] if c in before else np.nan for c in BOUNDS}, index=before.index)
    previous_terms = previous_table(previous_kb, "file_terms")
    changed = _frequency_changes(kb_file_terms, indexed_files, previous_files["file_id"], previous_terms)
    n_files = doc_count(kb_file_terms["file_id"])
    recount = n_files != doc_count(previous_terms["file_id"])
    doubt = pd.Index([], dtype="int64")  # carried files whose concepts may have moved
    if recount:
        doubt = carried.index[~_within(bounds.reindex(carried.index), n_files)]
    fallen = changed.index[changed < 0]
    # a file deleted lowers the frequency of every term it held, in most files: all are checked, none searched for
    every = recount and len(fallen) > 0 and len(carried) > CHECK_MIN_FILES
    if len(changed) and not every:
        doubt = doubt.union(_files_citing(changed.index[changed > 0], carried))
        if len(fallen):  # (a term that scores higher may enter any top 10 of a file holding it)
            doubt = doubt.union(_files_holding(fallen, kb_concept_terms, kb_file_terms).intersection(carried.index))
    doubt = carried.index if every else doubt
    kept = bounds.reindex(carried.index).assign(concepts=carried)[["concepts", *BOUNDS]].drop(doubt)
    if len(doubt) > CHECK_MIN_FILES:  # checked (`_still_on_top`) before any is scored again
        checked = carried.index if len(doubt) > len(carried) / 2 else doubt  # (every file's rows: shared, not taken)
        rows = _concept_tf(kb_concept_terms, kb_file_terms, checked)
        frequencies = _frequencies_of(rows, changed, kb_file_terms, previous_file_lexicon, previous_terms)
        held = [_still_on_top(carried.reindex(_distinct_ids(tf["file_id"])), tf, frequencies) for tf in rows]
        held = [h[h.index.isin(carried.index) & ~h.index.isin(kept.index)] for h in held]
        if any(len(h) for h in held):
            kept = pd.concat([kept, *(h.assign(concepts=carried.reindex(h.index)) for h in held if len(h))])
    rows = _concept_tf(kb_concept_terms, kb_file_terms, ids.difference(kept.index))
    frequencies = _frequencies_of(rows, changed, kb_file_terms, previous_file_lexicon, previous_terms)
    kept = kept[["concepts", *BOUNDS]] if len(kept) else None
    parts = [part for part in (kept, *(_scored_concepts(tf, frequencies) for tf in rows)) if part is not None]
    parts = [part for part in parts if len(part)]
    if not parts:
        return pd.DataFrame({"concepts": _concept_lists(pd.Series(dtype=object)), **{c: [] for c in BOUNDS}})
    return pd.concat(parts).sort_index() if len(parts) > 1 else parts[0]


CHECK_MIN_FILES = 256  # more carried files than this in doubt: checked (`_still_on_top`) before any is scored again
BOUNDS = ("concept_lo", "concept_hi")  # the range of log(1 + number of files) + 1 over which a file's concepts hold
BOUND_MARGIN = 1e-6  # (relative) a new value this close to a bound counts as outside: float rounding stays clear of it


def _frequencies_of(
    rows: list[pd.DataFrame],
    changed: pd.Series,
    kb_file_terms: pd.DataFrame,
    lexicon: Lexicon | None,
    previous_terms: pd.DataFrame,
) -> tuple[int, pa.Array, np.ndarray]:
    """The document frequencies the terms of these rows are scored with: of their terms only when they are a few
    files' (from the previous lexicon plus the change, when it is that of the previous file terms), else of all."""
    few = sum(len(tf) for tf in rows) < len(kb_file_terms) // 4
    if _lexicon_of(lexicon, previous_terms):
        if few:
            return _updated_frequencies(lexicon, changed, _distinct_terms(rows), kb_file_terms)
        return _lexicon_frequencies(lexicon, changed, kb_file_terms)
    return _document_frequencies(kb_file_terms, _distinct_terms(rows) if few else None)


def _within(bounds: pd.DataFrame, n_files: int) -> np.ndarray:
    """Which files' concepts hold for this number of files (strictly inside their range, by a margin; no range: no)."""
    level = np.log1p(n_files) + 1.0
    margin = BOUND_MARGIN * max(1.0, abs(level))
    lo, hi = (bounds[c].to_numpy(dtype=float, na_value=np.nan) for c in BOUNDS)
    return (lo + margin < level) & (level < hi - margin)


def _concept_lists(concepts: pd.Series) -> pd.Series:
    """A concepts column as Arrow lists of strings, whatever it was read as (Arrow lists; Python lists or arrays): the
    files table is written, digested and searched for terms without a Python list per file (OpenJDK: 59,581)."""
    if isinstance(concepts.dtype, pd.ArrowDtype) and concepts.dtype.pyarrow_dtype == CONCEPT_LISTS:
        return concepts
    lists = pa.array(concepts.to_numpy(dtype=object), type=CONCEPT_LISTS, from_pandas=True)
    return pd.Series(pd.arrays.ArrowExtensionArray(lists), index=concepts.index, copy=False)


def _list_array(concepts: pd.Series) -> pa.Array:
    """The Arrow array of a concepts column (`_concept_lists`), in one chunk."""
    lists = pa.array(_concept_lists(concepts))  # (a ChunkedArray, as Arrow-backed columns give)
    return lists.combine_chunks() if isinstance(lists, pa.ChunkedArray) else lists


def _files_citing(terms: pd.Index, concepts: pd.Series) -> pd.Index:
    """The file_ids (index of `concepts`, lists of terms per file) whose concepts include one of these terms."""
    if not len(terms) or not len(concepts):
        return pd.Index([], dtype="int64")
    lists = _list_array(concepts)
    cited = pc.is_in(pc.list_flatten(lists), value_set=pa.array(list(terms), type=pa.string()))
    rows = pc.list_parent_indices(lists).to_numpy()[cited.to_numpy(zero_copy_only=False)]
    return pd.Index(concepts.index.to_numpy()[distinct(rows)], dtype="int64")


def _concept_tf(kb_concept_terms: pd.DataFrame, kb_file_terms: pd.DataFrame, files: pd.Index) -> list[pd.DataFrame]:
    """(file_id, term, tf) rows the concepts of `files` are scored on, in two frames over disjoint files (a file's
    concepts depend on its rows alone, so they are scored apart instead of stacked into a copy): their concept terms;
    for files without any, their full-text terms. Rows are shared, not copied, where every file's are taken; a few
    files' rows are found by binary search (`rows_of_files`)."""
    with_concepts = _distinct_ids(kb_concept_terms["file_id"])
    fallback_files = files.difference(with_concepts)
    frames = [
        kb_concept_terms
        if with_concepts.isin(files).all()
        else take_rows(kb_concept_terms, rows_of_files(kb_concept_terms, files)),
        take_rows(kb_file_terms, rows_of_files(kb_file_terms, fallback_files)) if len(fallback_files) else None,
    ]
    return [f[["file_id", "term", "tf"]] for f in frames if f is not None and len(f)]


def _distinct_ids(ids: pd.Series) -> pd.Index:
    """The distinct values of an id column in order of first appearance (by run boundaries when in order, chunk by
    chunk: `int_chunks`)."""
    chunks = int_chunks(ids)
    if chunks is not None and len(ids) and ascending(chunks):
        firsts = [c[np.r_[True, c[1:] != c[:-1]]] for c in chunks]
        return pd.Index(distinct(np.concatenate(firsts)) if len(firsts) > 1 else firsts[0])
    return pd.Index(pd.unique(ids.to_numpy()))


def _files_holding(terms: pd.Index, kb_concept_terms: pd.DataFrame, kb_file_terms: pd.DataFrame) -> pd.Index:
    """Files whose concepts are scored on one of these terms (as _concept_tf picks their rows): looked up by Arrow,
    in the full-text terms only over the rows of the files without concept terms."""
    concept_ids = kb_concept_terms["file_id"]
    in_concepts = concept_ids.to_numpy()[_holds(kb_concept_terms["term"], terms)]
    fallback_files = _distinct_ids(kb_file_terms["file_id"]).difference(_distinct_ids(concept_ids))
    fallback = take_rows(kb_file_terms, np.flatnonzero(ids_in(kb_file_terms["file_id"], fallback_files)))
    in_fallback = fallback["file_id"].to_numpy()[_holds(fallback["term"], terms)]
    return pd.Index(pd.unique(np.concatenate([in_concepts, in_fallback]))).astype("int64")


def _holds(values: pd.Series, terms: pd.Index) -> np.ndarray:
    """values.isin(terms) as a bool array, by Arrow's hash lookup for Arrow-backed strings (2x pandas' on 13M rows)."""
    array = pa.array(values, from_pandas=True)
    if pa.types.is_dictionary(array.type) or not (
        pa.types.is_string(array.type) or pa.types.is_large_string(array.type)
    ):
        return values.isin(terms).to_numpy(dtype=bool)
    wanted = pa.array(list(terms), type=array.type)
    return pc.is_in(array, value_set=wanted).to_numpy(zero_copy_only=False)


def _frequency_changes(
    kb_file_terms: pd.DataFrame, indexed_files: pd.DataFrame, previous_ids: pd.Series, previous_terms: pd.DataFrame
) -> pd.Series:
    """New minus previous document frequency of each term whose frequency moved, by term: counted over the rows of the
    few files not reused (and of the previous files gone or changed) alone, found by `rows_of_files`."""
    reused = indexed_files["reused"].fillna(False).astype(bool).to_numpy()
    parsed = indexed_files.loc[~reused, "file_id"]
    before = previous_ids[~ids_in(previous_ids, indexed_files.loc[reused, "file_id"])]
    new = take_rows(kb_file_terms, rows_of_files(kb_file_terms, parsed))["term"].astype(object).value_counts()
    old = take_rows(previous_terms, rows_of_files(previous_terms, before))["term"].astype(object).value_counts()
    delta = new.sub(old, fill_value=0)
    return delta[delta != 0]


def _lexicon_of(lexicon: Lexicon | None, terms: pd.DataFrame) -> bool:
    """Whether lexicon is (as far as its sizes tell) the one of these term rows: as many docs and postings."""
    return (
        lexicon is not None and lexicon.n_postings == len(terms) and len(lexicon.doc_ids) == doc_count(terms["file_id"])
    )


def _updated_frequencies(
    lexicon: Lexicon, changed: pd.Series, among: pa.Array, kb_file_terms: pd.DataFrame
) -> tuple[int, pa.Array, np.ndarray]:
    """`_document_frequencies(kb_file_terms, among)` from the previous lexicon: each term's postings there (its
    previous document frequency) plus its change (`_frequency_changes`), 0 for terms in neither."""
    counts = lexicon.counts_of(among)
    if len(changed):
        counts += changed.reindex(among.to_pylist(), fill_value=0).to_numpy(dtype=np.int64)
    return doc_count(kb_file_terms["file_id"]), among, counts


def _lexicon_frequencies(
    lexicon: Lexicon, changed: pd.Series, kb_file_terms: pd.DataFrame
) -> tuple[int, pa.Array, np.ndarray]:
    """`_document_frequencies(kb_file_terms)` of every term from the previous lexicon (a term's postings there are its
    previous document frequency) plus the change (`_frequency_changes`; a new term appended), without counting the
    rows (OpenJDK's 13M file-term rows: 0.7 s). A term gone keeps a count of 0: no row looks it up."""
    vocab, counts = lexicon.term_counts()
    if len(changed):
        terms = pa.array(changed.index.astype(object).tolist(), type=vocab.type)
        delta = changed.to_numpy(dtype=np.int64)
        at, found = term_codes(vocab, terms)
        np.add.at(counts, at[found], delta[found])
        vocab = pa.concat_arrays([vocab, terms.filter(pa.array(~found))])
        counts = np.concatenate([counts, delta[~found]])
    return doc_count(kb_file_terms["file_id"]), vocab, counts


def _distinct_terms(frames: list[pd.DataFrame]) -> pa.Array:
    """The distinct terms of these (file_id, term, tf) frames, as Arrow strings."""
    arrays = [pa.array(f["term"], from_pandas=True) for f in frames]
    arrays = [a.cast(a.type.value_type) if pa.types.is_dictionary(a.type) else a for a in arrays]
    arrays = [a.cast(pa.large_string()) for a in arrays]
    return pc.unique(pa.chunked_array(arrays, type=pa.large_string()))


def _document_frequencies(
    kb_file_terms: pd.DataFrame, among: pa.Array | None = None
) -> tuple[int, pa.Array, np.ndarray]:
    """(number of files, distinct terms, how many files hold each): counted per distinct term, not looked up per row
    (OpenJDK's 13M file-term rows: int64 positions of 100 MB, twice); among: only these terms are counted (the
    terms of the few files a re-index scores: counting Django's 444,000 file-term rows took 23 ms)."""
    values = pa.array(kb_file_terms["term"], from_pandas=True)
    values = values if isinstance(values, pa.ChunkedArray) else pa.chunked_array([values], type=values.type)
    if among is not None and not pa.types.is_dictionary(values.type):
        values = values.filter(pc.is_in(values, value_set=among.cast(values.type)))
    if pa.types.is_dictionary(values.type):
        values = values.unify_dictionaries()
        distinct = values.chunk(0).dictionary if values.num_chunks else pa.array([], type=pa.large_string())
        counts = np.zeros(len(distinct), dtype=np.int64)
        for chunk in values.chunks:
            counts += np.bincount(chunk.indices.to_numpy(zero_copy_only=False), minlength=len(distinct))
    else:
        tally = pc.value_counts(values)
        distinct, counts = tally.field("values"), tally.field("counts").to_numpy(zero_copy_only=False)
    return doc_count(kb_file_terms["file_id"]), distinct, counts


def _row_scores(
    tf: pd.DataFrame, frequencies: tuple[int, pa.Array, np.ndarray]
) -> tuple[np.ndarray, np.ndarray, ArrowVocabulary, np.ndarray]:
    """(score of each (file_id, term, tf) row, int32 rank of its term, the terms in rank order, log(1 + df) of each
    row): tf-idf as (1 + log tf) * (log((1 + n) / (1 + df)) + 1), idf from `_document_frequencies`."""
    n_docs, distinct, counts = frequencies
    codes, vocabulary = sorted_term_codes(tf["term"])  # int32 rank of each row's term; the terms stay Arrow strings
    at = pc.fill_null(pc.index_in(vocabulary.array, value_set=distinct.cast(vocabulary.array.type)), -1)
    idf = np.append(counts, 0)[at.to_numpy(zero_copy_only=False)][codes].astype(float)  # (-1, not in the KB: 0)
    df_level = np.log1p(idf)
    idf += 1.0  # (the same operations as the formula's, in place)
    np.divide(1.0 + n_docs, idf, out=idf)
    np.log(idf, out=idf)
    idf += 1.0
    score = np.log(tf["tf"].to_numpy(dtype=float))
    score += 1.0
    score *= idf
    return score, codes, vocabulary, df_level


def _still_on_top(concepts: pd.Series, tf: pd.DataFrame, frequencies: tuple[int, pa.Array, np.ndarray]) -> pd.DataFrame:
    """The files of `concepts` (file_id -> its previous concepts, in order; tf: every row of exactly these files, in
    file order) whose rows still order their concepts first, and in that order, under these frequencies, with their
    ranges (`concept_lo`, `concept_hi`) now: each concept scores more than the next (or as much, with a lower term) and
    the last more than any other row of the file; a tie with another row, a concept without a row, or fewer concepts
    than MAX_CONCEPTS beside other rows count as moved. Scoring those files again gives the concepts they have, at the
    cost of one pass over their rows, not a sort (a file deleted from OpenJDK moves most files' frequencies)."""
    empty = pd.DataFrame({c: pd.Series(dtype=float) for c in BOUNDS}, index=pd.Index([], dtype="int64"))
    ids = tf["file_id"].to_numpy(np.int64)
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]]) if len(ids) else np.zeros(0, dtype=np.int64)
    files = pd.Index(ids[starts])
    if not len(files) or (ids[1:] < ids[:-1]).any() or not files.isin(concepts.index).all():
        return empty
    lists = _list_array(concepts.reindex(files))
    unknown = lists.is_null().to_numpy(zero_copy_only=False)  # (a file without previous concepts: moved)
    lists = pc.fill_null(lists, pa.scalar([], lists.type))
    sizes = pc.list_value_length(lists).to_numpy(zero_copy_only=False).astype(np.int64)
    score, codes, vocabulary, df_level = _row_scores(tf, frequencies)
    terms = pc.list_flatten(lists).cast(vocabulary.array.type)
    listed_code = pc.fill_null(pc.index_in(terms, value_set=vocabulary.array), -1).to_numpy(zero_copy_only=False)
    listed_file = np.repeat(files.to_numpy(np.int64), sizes)
    listed_key = (listed_file << 32) | np.maximum(listed_code, 0)
    if not len(listed_key):
        return empty
    order = np.argsort(listed_key, kind="stable")
    row_key = (ids << 32) | codes.astype(np.int64)
    at = np.minimum(np.searchsorted(listed_key[order], row_key), len(order) - 1)
    hit = (listed_key[order][at] == row_key) & (listed_code[order][at] >= 0)
    listed_row = np.full(len(listed_key), -1, dtype=np.int64)
    listed_row[order[at[hit]]] = np.flatnonzero(hit)
    moved = unknown.copy()
    owner = np.repeat(np.arange(len(files)), sizes)
    np.logical_or.at(moved, owner, listed_row < 0)  # (a concept without a row, or one named twice)
    listed_score = np.where(listed_row >= 0, score[np.maximum(listed_row, 0)], np.nan)
    same_file = owner[1:] == owner[:-1]
    in_order = (listed_score[:-1] > listed_score[1:]) | (
        (listed_score[:-1] == listed_score[1:]) & (listed_code[:-1] < listed_code[1:])
    )
    np.logical_or.at(moved, owner[1:][same_file], ~in_order[same_file])
    others = np.where(hit, -np.inf, score)  # the best score of each file's other rows
    best_other = np.maximum.reduceat(others, starts)
    has_other = best_other > -np.inf
    last = np.cumsum(sizes) - 1
    last_score = np.where(sizes > 0, listed_score[np.maximum(last, 0)], np.inf)
    moved |= has_other & ((sizes < MAX_CONCEPTS) | ~(last_score > best_other))
    tf_level = np.log(tf["tf"].to_numpy(dtype=float)) + 1.0
    rows_per_file = np.diff(np.r_[starts, len(ids)])
    last_row = np.where(moved | (sizes == 0), 0, listed_row[np.maximum(last, 0)])
    spread = lambda values: np.repeat(values[last_row], rows_per_file)  # noqa: E731  (each file's last concept's)
    lower, upper = _pair_bounds(spread(tf_level), spread(df_level), tf_level, df_level, ~hit)
    lo, hi = np.maximum.reduceat(lower, starts), np.minimum.reduceat(upper, starts)
    pair = np.flatnonzero(same_file & (listed_row[:-1] >= 0) & (listed_row[1:] >= 0))
    a, b = listed_row[pair], listed_row[pair + 1]
    lower, upper = _pair_bounds(tf_level[a], df_level[a], tf_level[b], df_level[b], np.ones(len(pair), bool))
    np.maximum.at(lo, owner[pair + 1], lower)
    np.minimum.at(hi, owner[pair + 1], upper)
    return pd.DataFrame({"concept_lo": lo[~moved], "concept_hi": hi[~moved]}, index=files[~moved])


def _pair_bounds(
    l_above: np.ndarray, g_above: np.ndarray, l_below: np.ndarray, g_below: np.ndarray, has: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """For each pair of rows (`has`: a pair at all), the bound on A = log(1 + n) + 1 that keeps the first scoring above
    the second: a row scores l * (A - g) (l = 1 + log tf, g = log(1 + df)), so it stays above while
    A * (l_a - l_b) > l_a * g_a - l_b * g_b: from a threshold on when l_a > l_b (lower), up to it when l_a < l_b
    (upper), always when they are equal (then A drops out). -inf / inf where there is no bound."""
    slope = l_above - l_below
    cut = l_above * g_above
    cut -= l_below * g_below
    with np.errstate(divide="ignore", invalid="ignore"):
        cut /= slope
    return np.where(has & (slope > 0), cut, -np.inf), np.where(has & (slope < 0), cut, np.inf)


def _scored_concepts(tf: pd.DataFrame, frequencies: tuple[int, pa.Array, np.ndarray]) -> pd.DataFrame:
    """Concepts of the files in tf (file_id, term, tf), idf from `_document_frequencies`, with the range of
    A = log(1 + n) + 1 over which they stay (`concept_lo`, `concept_hi`; see `_concept_bounds`). Terms become integer
    codes (their rank in sorted order), so that ordering by (file, score desc, term) is integer work: sorting
    OpenJDK's 6.9 million rows by their strings took 12 s and 950 MB. Arrays are int32 and updated in place where they
    can be."""
    score, codes, vocabulary, df_level = _row_scores(tf, frequencies)
    np.negative(score, out=score)  # score descending
    ids = tf["file_id"].to_numpy(np.int32)
    order = np.lexsort((codes, score, ids))
    del score
    ids, codes = ids[order], codes[order]
    tf_level = np.log(tf["tf"].to_numpy(dtype=float)[order])
    tf_level += 1.0
    df_level = df_level[order]
    del order
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    rank = np.arange(len(ids), dtype=np.int32)
    rank -= np.repeat(starts.astype(np.int32), np.diff(np.r_[starts, len(ids)]))
    lo, hi = _concept_bounds(tf_level, df_level, rank, starts)
    del tf_level, df_level
    top = rank < MAX_CONCEPTS
    del rank
    ids, top_terms = ids[top].astype(np.int64), pa.chunked_array([vocabulary.array.take(pa.array(codes[top]))])
    if not len(ids):
        return pd.DataFrame({"concepts": _concept_lists(pd.Series(dtype=object)), **{c: [] for c in BOUNDS}})
    starts = np.flatnonzero(np.diff(ids)) + 1
    offsets = pa.array(np.r_[0, starts, len(ids)].astype(np.int32))
    lists = pa.ListArray.from_arrays(offsets, top_terms.combine_chunks().cast(pa.string()))
    concepts = pd.arrays.ArrowExtensionArray(lists)
    return pd.DataFrame({"concepts": concepts, "concept_lo": lo, "concept_hi": hi}, index=ids[np.r_[0, starts]])


def _concept_bounds(
    tf_level: np.ndarray, df_level: np.ndarray, rank: np.ndarray, starts: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per file (rows in its order: score descending, then term; starts: its first row), the open range of
    A = log(1 + n) + 1 (n: the number of files) over which its top MAX_CONCEPTS rows stay its top rows in this order:
    where each concept stays above the next and the last above every other row (`_pair_bounds`)."""
    if not len(rank):
        return np.zeros(0), np.zeros(0)
    sizes = np.diff(np.r_[starts, len(rank)])
    last_top = starts + np.minimum(sizes, MAX_CONCEPTS) - 1
    above = np.where(rank < MAX_CONCEPTS, np.arange(len(rank)) - 1, np.repeat(last_top, sizes))
    has = rank > 0
    above[~has] = 0
    lower, upper = _pair_bounds(tf_level[above], df_level[above], tf_level, df_level, has)
    return np.maximum.reduceat(lower, starts), np.minimum.reduceat(upper, starts)


def kb_files(
    indexed_files: pd.DataFrame,
    file_tokens: pd.Series,
    file_parse_errors: pd.Series,
    file_concepts: pd.DataFrame,
    file_history: pd.DataFrame,
    previous_files: pd.DataFrame,
) -> pd.DataFrame:
    """One row per indexed file with everything retrieval scores on (see schema.TABLES['files']).

    Unchanged files keep their previous domain, as they keep their concepts: labels from `cra enrich` survive a
    re-index until the file changes (a path-derived domain is the same either way)."""
    ids = indexed_files["file_id"].to_numpy()
    history = file_history.reindex(indexed_files["path"].to_numpy())
    concepts = file_concepts["concepts"].reindex(ids)
    bounds = file_concepts.reindex(ids)
    previous_domain = previous_files.set_index("file_id")["domain"].reindex(ids).to_numpy(dtype=object)
    keep = indexed_files["reused"].fillna(False).astype(bool).to_numpy() & pd.notna(previous_domain)
    files = indexed_files.assign(
        domain=np.where(keep, previous_domain, indexed_files["domain"].to_numpy(dtype=object)),
        tokens=file_tokens.reindex(ids).to_numpy(),
        parse_error=file_parse_errors.reindex(ids).to_numpy(),
        concepts=pd.arrays.ArrowExtensionArray(pc.fill_null(_list_array(concepts), pa.scalar([], CONCEPT_LISTS))),
        **{c: bounds[c].to_numpy(dtype=float, na_value=np.nan) for c in BOUNDS},
        last_commit_time=history["last_commit_time"].astype("Int64").to_numpy(),
        commit_count=history["commit_count"].fillna(0).astype("int32").to_numpy(),
    )
    return conform(ordered_by(files, "file_id"), "files")


def written_contents(
    indexed_files: pd.DataFrame,
    decoded_files: pd.DataFrame,
    previous_kb: dict[str, pd.DataFrame] | None,
    contents_store: ContentsStore,
) -> ContentsStore:
    """The contents table (whole text per file_id: decoded now for new or changed files, the previous KB's rows for
    reused ones) handed to contents_store, which now holds it. Handed over before the parse, a batch of rows at a
    time, Arrow strings throughout: parse workers read their files' texts from the store and the KB takes it over, so
    the driver lets go of the tree's texts once their facts are taken (OpenJDK's were held through the parse)."""
    ids = indexed_files["file_id"].to_numpy(dtype=np.int64)
    reused = indexed_files["reused"].to_numpy(dtype=bool)
    decoded_row = positions_in(indexed_files["path"], decoded_files["path"])
    decoded = pa.array(decoded_files["text"])
    previous = previous_kb["contents"] if reused.any() else None
    previous_row = pd.Index(previous["file_id"]).get_indexer(ids) if previous is not None else None
    previous_texts = pa.array(previous["text"]) if previous is not None else None
    order = np.argsort(ids, kind="stable")
    if contents_store.carries_previous and previous is not None and reused.any():
        kept = _carried_runs(ids[order], reused[order], previous_row[order], previous["file_id"].to_numpy(np.int64))
        if kept is not None:
            contents_store.write(_carrying_batches(ids[order], reused[order], decoded_row[order], decoded, kept))
            return contents_store

    def batches():
        for start in range(0, len(order), BATCH_ROWS):
            rows = order[start : start + BATCH_ROWS]
            old = reused[rows]
            text = _texts_by_runs(
                old,
                np.where(old, previous_row[rows] if previous is not None else -1, decoded_row[rows]),
                previous_texts,
                decoded,
            )
            yield pa.table(
                {"file_id": pa.array(ids[rows], type=pa.int32()), "text": text}, schema=arrow_schema("contents")
            )

    contents_store.write(batches())
    return contents_store


def _carried_runs(ids: np.ndarray, reused: np.ndarray, previous_row: np.ndarray, previous_ids: np.ndarray):
    """Per row in file_id order, the previous table's row of a reused file, -1 for a new or changed one; None when a
    reused file's id moved (then no row can be carried as it is: its file_id column is not the new one)."""
    at = np.where(reused, previous_row, -1)
    if (at[reused] < 0).any() or (previous_ids[at[reused]] != ids[reused]).any():
        return None
    return at


def _carrying_batches(ids: np.ndarray, reused: np.ndarray, decoded_row: np.ndarray, decoded, at: np.ndarray):
    """The contents rows in file_id order as CarriedRows for each run of reused files consecutive in the previous
    table, and Arrow tables of the decoded texts of the others: the store links what it already has."""
    breaks = np.flatnonzero((reused[1:] != reused[:-1]) | (reused[1:] & (at[1:] != at[:-1] + 1))) + 1
    for begin, end in zip(np.r_[0, breaks], np.r_[breaks, len(ids)]):
        if reused[begin]:
            yield CarriedRows(int(at[begin]), int(at[begin] + end - begin))
            continue
        for first in range(begin, end, BATCH_ROWS):
            rows = slice(first, min(end, first + BATCH_ROWS))
            text = decoded.take(pa.array(decoded_row[rows])).cast(pa.string())
            yield pa.table(
                {"file_id": pa.array(ids[rows], type=pa.int32()), "text": text}, schema=arrow_schema("contents")
            )


MAX_TEXT_CHUNKS = 64  # record batches a batch of texts may be kept as before it is joined into one


def _texts_by_runs(old: np.ndarray, at: np.ndarray, previous, decoded) -> pa.Array | pa.ChunkedArray:
    """The texts of a batch of rows from slices of the two columns they come from (old: the previous KB's, at that
    row; else the decoded ones): one slice per run of rows that are consecutive in their column, handed to the writer
    as the chunks of one column (each its own record batch) when some are kept, so that a re-index copies no text it
    keeps: joining them copied Django's 25 MB of texts for one changed file (21 ms). Past MAX_TEXT_CHUNKS (chunks pile
    up over many re-indexes) they are joined into one array again, as a batch of new texts only always is."""
    breaks = np.flatnonzero((old[1:] != old[:-1]) | (at[1:] != at[:-1] + 1)) + 1
    pieces = []
    for begin, end in zip(np.r_[0, breaks], np.r_[breaks, len(at)]):
        piece = (previous if old[begin] else decoded).slice(int(at[begin]), int(end - begin))
        pieces.extend(piece.chunks if isinstance(piece, pa.ChunkedArray) else [piece])
    pieces = [piece.cast(pa.string()) for piece in pieces if len(piece)]
    if old.any() and 1 < len(pieces) <= MAX_TEXT_CHUNKS:
        return pa.chunked_array(pieces, type=pa.string())
    return (
        pa.concat_arrays(pieces) if len(pieces) != 1 else pieces[0]
    )  # (new texts only: joined, as a fresh index does)


def kb_contents(written_contents: ContentsStore) -> pd.DataFrame:
    """Whole text per file_id, read lazily by requests that include the file: the store's frame (a view of its file)."""
    return written_contents.frame()


def index_stats(
    kb_files: pd.DataFrame,
    kb_symbols: pd.DataFrame,
    kb_edges: pd.DataFrame,
    kb_symbol_edges: pd.DataFrame,
    kb_commits: pd.DataFrame,
    parsed_count: int,
    history_available: bool,
    skipped_binary: list[str],
    skipped_generated: list[str],
    skipped_unsupported: list[str],
    import_context: str,
) -> dict:
    """What this run indexed, parsed, reused and left out (JSON-serialisable, shown by `cra index`)."""
    errors = kb_files[kb_files["parse_error"].notna()]
    return {
        "n_files": int(len(kb_files)),
        "files_by_language": {str(k): int(v) for k, v in kb_files["language"].value_counts().sort_index().items()},
        "n_parsed": int(parsed_count),
        "n_reused": int(len(kb_files) - parsed_count),
        "n_symbols": int(len(kb_symbols)),
        "n_edges": int(len(kb_edges)),
        "n_symbol_edges": int(len(kb_symbol_edges)),
        "n_commits": int(len(kb_commits)),
        "history_available": bool(history_available),
        "skipped": {
            "binary": list(skipped_binary),
            "generated": list(skipped_generated),
            "unsupported": list(skipped_unsupported),
        },
        "parse_errors": [[str(p), str(e)] for p, e in zip(errors["path"], errors["parse_error"])],
        "import_context": import_context,
    }
