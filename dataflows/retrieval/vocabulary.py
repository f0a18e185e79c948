"""Per-KB word tables of file paths, symbol names, domains and concepts: the string work matching needs, done once.

Splitting names into words and stemming them is proportional to the repository, so a loaded KB does it once
(`cra.drivers.kb.store.KnowledgeBase`) and passes the frames into the retrieval DAG as `kb_*` inputs; request-time nodes
only merge and `isin` against them. Plain helper functions, not DAG nodes; a node given no table (a test on a
three-row frame) builds the one it needs from the KB frame with the same function, so results are the same.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from cra.dataflows.distinct import distinct, isin
from cra.dataflows.text import CAMEL_WORDS, STOP_WORDS, split_identifier, stem, stem_words

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class WordIndex:
    """Rows that carry a word column, grouped by word, plus their distinct words sorted with stems.

    rows[offsets[i]:offsets[i + 1]] are the rows whose word is vocabulary row i, so the rows of matched words
    are gathered by position (`rows_of`) instead of merged on strings.
    """

    rows: pd.DataFrame
    vocabulary: pd.DataFrame  # entry (sorted, distinct), stem
    offsets: np.ndarray


def camel_snake(names: pd.Series) -> pd.Series:
    """Identifiers as lower-case snake_case words: 'AuthHandler' -> 'auth_handler', 'get-url' -> 'get_url'."""
    spaced = names.astype(str).str.replace(r"([a-z0-9])([A-Z])", r"\1_\2", regex=True)
    spaced = spaced.str.replace(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", regex=True)
    return spaced.str.lower().str.replace(r"[^a-z0-9]+", "_", regex=True).str.strip("_")


def stems(words: pd.Series) -> pd.Series:
    """Snowball stems of words, computed once per distinct word (vocabulary-sized, not file-sized)."""
    unique = words.dropna().unique().tolist()
    return words.map(dict(zip(unique, stem_words(unique))))


def word_index(rows: pd.DataFrame, words: pd.Series) -> WordIndex:
    """The `rows` (one per word of `words`, aligned by position) grouped by word, with the sorted word vocabulary.

    Arrow-vectorised: distinct words sorted (byte order = code point order), each word's vocabulary position by
    hash lookup; stems are computed once per distinct word.
    """
    values = pa.array(words.to_numpy(dtype=object), type=pa.string(), from_pandas=True)
    keep = pc.is_valid(values).to_numpy(zero_copy_only=False)
    values = values.filter(pc.is_valid(values))
    vocab = pc.unique(values)
    vocab = vocab.take(pc.sort_indices(vocab))
    codes = pc.index_in(values, value_set=vocab).to_numpy(zero_copy_only=False).astype(np.int64)
    entries = np.array(vocab.to_pylist(), dtype=object)
    table = pd.DataFrame({"entry": entries, "stem": np.array(stem_words(entries.tolist()), dtype=object)}, dtype=object)
    order = np.argsort(codes, kind="stable")
    offsets = np.searchsorted(codes[order], np.arange(len(entries) + 1))
    return WordIndex(rows[keep].take(order).reset_index(drop=True), table, offsets)


def split_words(values: pd.Series) -> tuple[np.ndarray, pd.Series]:
    """Every '_'-separated word of each value: (position of its value, word), like str.split('_') then explode."""
    lists = pc.split_pattern(pa.array(values.to_numpy(dtype=object), type=pa.string(), from_pandas=True), "_")
    parents = pc.list_parent_indices(lists).to_numpy(zero_copy_only=False).astype(np.int64)
    return parents, pd.Series(pc.list_flatten(lists).to_numpy(zero_copy_only=False), dtype=object)


def rows_of(index: WordIndex, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row numbers in `index.rows` of the words at these vocabulary positions, and how many rows each one has."""
    low, high = index.offsets[positions], index.offsets[positions + 1]
    counts = high - low
    return np.repeat(low - (np.cumsum(counts) - counts), counts) + np.arange(counts.sum()), counts


def path_components(kb_files: pd.DataFrame) -> pd.DataFrame:
    """(file_id, component, is_name, whole) for every directory and the extension-less file name of every path."""
    paths = kb_files.set_index("file_id")["path"].str.replace(r"\.[^./]+$", "", regex=True)
    comps = paths.str.split("/").explode().rename("component")
    frame = comps.reset_index()
    frame["is_name"] = ~frame["file_id"].duplicated(keep="last")
    frame["whole"] = camel_snake(frame["component"])
    return frame[frame["whole"] != ""]


def path_component_index(components: pd.DataFrame) -> WordIndex:
    """`path_components` (file_id, is_name) grouped by their whole (snake_case) form, with its vocabulary."""
    components = components.reset_index(drop=True)
    return word_index(components[["file_id", "is_name"]], components["whole"])


def path_word_index(components: pd.DataFrame) -> WordIndex:
    """`path_components` split into their words (file_id, is_name per word) grouped by word, with the vocabulary."""
    components = components.reset_index(drop=True)
    parents, words = split_words(components["whole"])
    return word_index(components[["file_id", "is_name"]].take(parents), words)


def symbol_names(kb_symbols: pd.DataFrame) -> pd.DataFrame:
    """The distinct symbol names (first-seen order; the row position is the name's code) and their lower case."""
    names = pd.Series(pd.unique(kb_symbols["name"].dropna().astype(str)), dtype=object)
    # lower-cased by Python, stored Arrow-backed so substring tests run vectorised
    return pd.DataFrame({"name": names, "lower": names.str.lower().astype("string[pyarrow]")})


def symbol_name_word_index(names: pd.DataFrame) -> WordIndex:
    """Distinct symbol names split into their snake_case words (the name's code per word), grouped by word (a
    re-index patches the previous KB's: `cra.dataflows.retrieval.carried_words`)."""
    parents, words = split_words(camel_snake(names["name"]))
    return word_index(pd.DataFrame({"code": parents}), words)


def name_words(text: str) -> list[str]:
    """Stemmed, stop-word-free words of an identifier or phrase: 'validate_login' -> ['valid', 'login']."""
    return [
        stem(w)
        for ident in _IDENTIFIER.findall(text)
        for w in split_identifier(ident)
        if len(w) >= 2 and w not in STOP_WORDS and not w.isdigit()
    ]


def symbol_name_terms(names: pd.DataFrame) -> pd.DataFrame:
    """(code, term) sorted: the distinct `name_words` of each distinct name (`symbol_names`), 'test' left out.

    Vectorised, and equal to `sorted(set(name_words(name)) - {'test'})` per name: the word pattern matches letters
    and digits only, so finding it over the whole name splits identifiers exactly as `split_identifier` does
    (digit-only words, which could differ at an identifier's start, are dropped either way).

    A re-index carries the previous KB's terms of the names it had (`carried_name_terms`).
    """
    words = names["name"].astype(object).str.findall(CAMEL_WORDS.pattern).explode().dropna().str.lower()
    words = words[(words.str.len() >= 2) & ~words.isin(STOP_WORDS) & ~words.str.isdigit().astype(bool)]
    codes = np.arange(len(names))[words.index.to_numpy(dtype=np.int64)] if len(words) else np.array([], dtype=np.int64)
    terms = pd.DataFrame({"code": codes, "term": stems(words).to_numpy(dtype=object)})
    return (
        terms[terms["term"] != "test"].drop_duplicates().sort_values(["code", "term"], kind="stable", ignore_index=True)
    )


def carried_name_terms(
    names: pd.DataFrame, new_code: np.ndarray, fresh: np.ndarray, previous_terms: pd.DataFrame
) -> pd.DataFrame:
    """`symbol_name_terms` of names, the rows of the previous KB's names taken from its terms (new_code: this code of
    each previous name code, -1 where gone; fresh: codes of the names it lacked): a name's terms are its own, so only
    new names are split and stemmed (one function added to Django: 1 of 27,000)."""
    codes = new_code[previous_terms["code"].to_numpy(np.int64)]
    kept = np.flatnonzero(codes >= 0)
    built = symbol_name_terms(names.iloc[fresh].reset_index(drop=True))
    codes = np.concatenate([codes[kept], fresh[built["code"].to_numpy(np.int64)]]).astype(np.int64)
    order = np.argsort(codes, kind="stable")  # a name's rows come whole from one side, sorted by term
    # the terms stay Arrow strings (taken, joined, ordered): no Python string per row (Django's 70,000: 20 -> 4 ms)
    terms = pa.concat_arrays([_large_strings(previous_terms["term"]).take(kept), _large_strings(built["term"])])
    return pd.DataFrame({"code": codes[order], "term": pd.array(terms.take(order), dtype="str")})


def _large_strings(values: pd.Series) -> pa.Array:
    """A string column (objects or Arrow-backed) as one large_string Arrow array."""
    array = pa.array(values.array if isinstance(values.dtype, pd.StringDtype) else values, from_pandas=True)
    array = array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array
    return array.cast(pa.large_string())


_NOT_NORM = re.compile(r"[^a-z0-9.]")


def norms(values: pd.Series) -> pd.api.extensions.ExtensionArray:
    """`norm` of every value, Arrow-vectorised (lower case, then all but [a-z0-9.] removed: only ASCII remains), as
    Arrow strings (NA where a value is null). Underscores, all that most identifiers have to lose, go by a plain
    replace; the regex runs only over the few values with anything else to remove (Django's symbols: 45 -> ~20 ms)."""
    values = pa.array(values.astype("string[pyarrow]").array)
    lower = pc.utf8_lower(values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values)
    out = pc.replace_substring(lower, "_", "")
    odd = pc.fill_null(pc.match_substring_regex(out, _NOT_NORM.pattern), False)
    if pc.any(odd).as_py():
        out = pc.replace_with_mask(out, odd, pc.replace_substring_regex(out.filter(odd), _NOT_NORM.pattern, ""))
    return pd.array(out, dtype="string[pyarrow]")


def norm(name: str) -> str:
    """Identifier without case and separators, so 'RuleL031' meets 'Rule_L031'."""
    return _NOT_NORM.sub("", name.lower())


def symbol_name_codes(kb_symbols: pd.DataFrame, names: pd.DataFrame) -> pd.DataFrame:
    """(file_id, name_code) per symbol: the position of its name in `names` (-1 when it has none)."""
    codes = pd.Index(names["name"]).get_indexer(kb_symbols["name"].astype(object))
    return pd.DataFrame(
        {"file_id": kb_symbols["file_id"].to_numpy(), "name_code": codes},
        index=pd.Index(kb_symbols["symbol_id"], name="symbol_id"),
    )


def file_name_words(values: pd.Series) -> pd.DataFrame:
    """(file_id, stem) of every word of a per-file name column (domain, module) indexed by file_id."""
    words = camel_snake(values.fillna("")).str.split("_").explode()
    words = words[words.str.len() > 0]
    return pd.DataFrame({"file_id": words.index, "stem": stems(words).to_numpy()})


def domain_words(kb_files: pd.DataFrame) -> pd.DataFrame:
    """(file_id, stem) of the words of every file's domain."""
    return file_name_words(kb_files.set_index("file_id")["domain"])


def module_words(kb_files: pd.DataFrame) -> pd.DataFrame:
    """(file_id, stem) of the words of every file's module name."""
    return file_name_words(kb_files.set_index("file_id")["module"])


def lowered_concepts(kb_files: pd.DataFrame) -> tuple[np.ndarray, pa.Array]:
    """(file ids, concepts): every file's concepts lower-cased, in file then list order, one row per concept: what
    exploding the lists, dropping nulls and lower-casing give, by Arrow over its lists when they are ASCII (OpenJDK's
    600,000 concepts: 0.25 s the pandas way)."""
    lists = pa.array(kb_files["concepts"], from_pandas=True) if len(kb_files) else None
    if lists is not None and pa.types.is_list(lists.type) and _strings(lists.type.value_type):
        lists = lists.combine_chunks() if isinstance(lists, pa.ChunkedArray) else lists
        flat, owner = pc.list_flatten(lists), pc.list_parent_indices(lists).to_numpy()
        if pc.all(pc.string_is_ascii(flat)).as_py() is not False:
            kept = flat.is_valid()
            ids = pd.Index(kb_files["file_id"]).to_numpy()  # (typed as set_index types them)
            return ids[owner[kept.to_numpy(zero_copy_only=False)]], pc.ascii_lower(flat.filter(kept))
    concepts = kb_files.set_index("file_id")["concepts"].explode().dropna().astype(str).str.lower()
    return concepts.index.to_numpy(), pa.array(concepts.to_numpy(dtype=object), type=pa.string())


def _strings(value_type: pa.DataType) -> bool:
    return pa.types.is_string(value_type) or pa.types.is_large_string(value_type)


def file_concepts(kb_files: pd.DataFrame) -> pd.DataFrame:
    """(file_id, concept) of every file's concepts, lower-cased, each pair once."""
    file_ids, concepts = lowered_concepts(kb_files)
    return pd.DataFrame({"file_id": file_ids, "concept": concepts.to_numpy(zero_copy_only=False)}).drop_duplicates()


def concept_vocabulary(kb_files: pd.DataFrame, previous: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every distinct concept the KB knows (lower-cased) and its stem (alphabetic concepts only): (concept, stem).
    previous: a vocabulary built before (a re-index's), whose stems are taken for the concepts it holds (stemming
    OpenJDK's 150,000 concepts again took 0.1 s of adding a function)."""
    if "concepts" not in kb_files or kb_files.empty:
        return pd.DataFrame({"concept": pd.Series([], dtype=object), "stem": pd.Series([], dtype=object)})
    distinct_concepts = pc.unique(lowered_concepts(kb_files)[1])
    vocab = pd.Series(distinct_concepts.to_numpy(zero_copy_only=False), dtype=object)
    stems = vocab.to_numpy(dtype=object).copy()
    alpha = np.fromiter((c.isalpha() for c in stems), dtype=bool, count=len(stems))
    if previous is not None and len(previous):
        known = pa.array(previous["concept"].to_numpy(dtype=object), type=distinct_concepts.type)
        at = pc.fill_null(pc.index_in(distinct_concepts, value_set=known), -1).to_numpy(zero_copy_only=False)
        carried = alpha & (at >= 0)
        stems[carried] = previous["stem"].to_numpy(dtype=object)[at[carried]]
        alpha &= at < 0
    stems[alpha] = np.array(stem_words(stems[alpha].tolist()), dtype=object)  # (one call: Django's 7,000 in 8 ms)
    return pd.DataFrame({"concept": vocab, "stem": pd.Series(stems, dtype=object)})


def symbol_norms(kb_symbols: pd.DataFrame) -> pd.DataFrame:
    """(name, qualified) per symbol row: the `norm` of its name and of its qualified name (NA when it has none)."""
    return pd.DataFrame(
        {"name": norms(kb_symbols["name"]), "qualified": norms(kb_symbols["qualified_name"])}, dtype="string[pyarrow]"
    )


_NAME_SEPARATOR = "\0"


@dataclass(frozen=True, eq=False)
class NameIndex:
    """The distinct symbol names as one searchable text, and the files that carry each name (by name code)."""

    text: str  # the lower-cased names (`symbol_names`), in code order, each followed by _NAME_SEPARATOR
    starts: np.ndarray  # where each name starts in text
    files: np.ndarray  # file_id of every distinct (name code, file) pair, grouped by code
    offsets: np.ndarray  # files[offsets[c]:offsets[c + 1]] carry name code c


def name_index(names: pd.DataFrame, codes: pd.DataFrame) -> NameIndex:
    """The `NameIndex` of `symbol_names` and `symbol_name_codes`."""
    lower = _large_strings(names["lower"])  # (Arrow: the text is its joined bytes, no Python string per name)
    lengths = pc.utf8_length(lower).to_numpy(zero_copy_only=False).astype(np.int64) + len(_NAME_SEPARATOR)
    empty, separator = pa.scalar("", pa.large_string()), pa.scalar(_NAME_SEPARATOR, pa.large_string())
    joined = pc.binary_join_element_wise(lower, empty, separator)  # each name followed by the separator
    offsets, data = joined.buffers()[1:3]
    bounds = np.frombuffer(offsets, dtype=np.int64)[[joined.offset, joined.offset + len(joined)]] if len(joined) else []
    text = memoryview(data)[bounds[0] : bounds[1]].tobytes().decode() if len(joined) else ""
    mine = codes["name_code"].to_numpy(np.int64) >= 0
    name_codes, files = codes["name_code"].to_numpy(np.int64)[mine], codes["file_id"].to_numpy()[mine]
    span = int(files.max()) + 1 if len(files) else 1
    if len(files) and files.min() < 0:  # (no file id is negative; if one were, pairs sorted the general way)
        pairs = pd.DataFrame({"name_code": name_codes, "file_id": files}).drop_duplicates()
        pairs = pairs.sort_values(["name_code", "file_id"], kind="stable")
        name_codes, files = pairs["name_code"].to_numpy(), pairs["file_id"].to_numpy()
    else:  # the distinct (name code, file) pairs in order, as one integer key each
        keys = distinct(name_codes * span + files.astype(np.int64))
        name_codes, files = keys // span, (keys % span).astype(files.dtype)
    return NameIndex(
        text=text,
        starts=np.cumsum(lengths) - lengths,
        files=files,
        offsets=np.searchsorted(name_codes, np.arange(len(names) + 1)),
    )


def names_containing(index: NameIndex, part: str) -> np.ndarray:
    """Codes (ascending) of the names that contain `part` (like `names["lower"].str.contains(part)`)."""
    if not part or _NAME_SEPARATOR in part:
        raise ValueError(f"cannot search names for {part!r}")
    found = [m.start() for m in re.finditer(re.escape(part), index.text)]
    return distinct(np.searchsorted(index.starts, np.array(found, dtype=np.int64), "right") - 1)


def carriers_of(index: NameIndex, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The files carrying each of these name codes, and how many files each code has (to repeat its rows)."""
    low, high = index.offsets[codes], index.offsets[codes + 1]
    counts = high - low
    gather = np.repeat(low - (np.cumsum(counts) - counts), counts) + np.arange(counts.sum())
    return index.files[gather], counts


def member_mask(values: np.ndarray, ids) -> np.ndarray:
    """Whether each value is one of ids: a lookup table when both are small non-negative integers (file ids), 5-10x
    faster than hashing on the millions of import edges of a large repository; np.isin otherwise."""
    values, ids = np.asarray(values), np.asarray(ids)
    if values.dtype.kind not in "iu" or (len(ids) and ids.dtype.kind not in "iu"):
        return np.isin(values, ids)
    if not len(ids) or not len(values):
        return np.zeros(len(values), dtype=bool)
    top = int(max(values.max(), ids.max()))
    if min(values.min(), ids.min()) < 0 or top > 4 * len(values) + 1_000_000:
        return isin(values, ids)
    table = np.zeros(top + 1, dtype=bool)
    table[ids] = True
    return table[values]


def best_per_pair(keys: np.ndarray, items: np.ndarray, scores: np.ndarray, n_items: int) -> tuple[np.ndarray, ...]:
    """(key, item, best score) per distinct (key, item) pair, sorted by key then item (a groupby max, in numpy)."""
    pair = keys * max(n_items, 1) + items
    order = np.lexsort((-scores, pair))
    first = order[np.r_[True, pair[order][1:] != pair[order][:-1]]] if len(order) else order
    return keys[first], items[first], scores[first]
