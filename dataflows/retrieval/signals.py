"""Scoring signals and seed files: each signal is a 0-1 Series over every file_id.

Every signal is vectorised over the KB frames (string ops, merges, group-bys); loops run only over the
handful of hints, keywords and hops. A signal whose data is missing is 0 for every file.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from cra.dataflows.lexicon_layers import Lexicon
from cra.dataflows.retrieval import vocabulary
from cra.dataflows.retrieval.hints import path_matches
from cra.dataflows.retrieval.import_graph import ImportGraph, import_graph
from cra.dataflows.retrieval.membership import in_set
from cra.dataflows.retrieval.models import TaskQuery
from cra.dataflows.retrieval.symbol_table import id_rows
from cra.dataflows.retrieval.vocabulary import WordIndex
from cra.dataflows.text import STOP_WORDS, stem, terms

MAX_FILES_PER_FILE_HINT = 5  # a bare name like `__init__.py` naming more files than this seeds none
COMMON_TERM_SHARE = 0.5  # lexical_match drops query terms found in more than this share of files
HOP_SCORES = {1: 1.0, 2: 0.5, 3: 0.25}
# path_match: (keyword equals the whole component, equals a word of it, prefixes a word) x (file name, directory)
PATH_SCORES = {
    ("whole", True): 1.0,
    ("whole", False): 0.8,
    ("word", True): 0.7,
    ("word", False): 0.5,
    ("prefix", True): 0.4,
    ("prefix", False): 0.3,
}
SYMBOL_EXACT, SYMBOL_SUBSTRING, SYMBOL_CONSTITUENT = 1.0, 0.5, 0.3
MIN_PREFIX_LEN = 3
TYPE_KINDS = ("class", "enum", "interface", "trait")  # symbol kinds that own members


def _zeros(kb_files: pd.DataFrame) -> pd.Series:
    """A 0.0 score for every file, indexed by file_id."""
    return pd.Series(0.0, index=pd.Index(kb_files["file_id"], name="file_id"))


def _over_files(kb_files: pd.DataFrame, values: pd.Series) -> pd.Series:
    """Values by file_id spread over every file (missing -> 0), clipped to [0, 1]. In numpy: every signal ends
    here on every request, and pandas' reindex + clip cost milliseconds each."""
    ids = kb_files["file_id"].to_numpy()
    out = np.zeros(len(ids))
    if len(values):
        keys = pd.Index(values.index)
        if _ascending_ids(ids) and keys.dtype.kind in "iu" and keys.is_unique:  # each value to its file's row
            at = id_rows(ids, keys.to_numpy())
            found = at >= 0
            out[at[found]] = values.to_numpy(dtype=float)[found]
        else:  # each file's value looked up
            at = keys.get_indexer(ids)
            found = at >= 0
            out[found] = values.to_numpy(dtype=float)[at[found]]
        np.clip(np.nan_to_num(out, nan=0.0, copy=False), 0.0, 1.0, out=out)
    return pd.Series(out, index=pd.Index(ids, name="file_id"))


def _ascending_ids(ids: np.ndarray) -> bool:
    """Whether these are strictly ascending integers (a KB's file ids): values then go to their rows by `id_rows`
    (a subtraction when consecutive), rather than every file being looked up in a hash of the values."""
    return ids.dtype.kind in "iu" and bool((ids[1:] > ids[:-1]).all())


def _normalised(values: pd.Series) -> pd.Series:
    """Values divided by their maximum (all zeros stay zeros)."""
    top = values.max() if len(values) else 0.0
    return values / top if top and top > 0 else values * 0.0


def _saturated_hits(kb_files: pd.DataFrame, hits: pd.DataFrame) -> pd.Series:
    """0-1 per file from (file_id, item, score) hits: 1 - prod(1 - s) over its best score per query item, each
    item down-weighted by how many files it hits (1 for one file, ~0.18 for a hundred).

    One hit keeps its own score; several add up without passing 1. In numpy (sorted pairs), not pandas groupbys.
    """
    if hits.empty:
        return _zeros(kb_files)
    file_codes, files = pd.factorize(hits["file_id"].to_numpy(), sort=True)
    item_codes, items = pd.factorize(hits["item"].to_numpy(dtype=object), sort=True)
    score = hits["score"].to_numpy(dtype=float)
    order = np.lexsort((-score, item_codes, file_codes))  # by file, item; best score first
    f, i, s = file_codes[order], item_codes[order], score[order]
    first = np.ones(len(f), dtype=bool)
    first[1:] = (f[1:] != f[:-1]) | (i[1:] != i[:-1])
    f, i, s = f[first], i[first], s[first]
    files_per_item = np.bincount(i, minlength=len(items)).astype(float)
    kept = np.clip(s * (1.0 / (1.0 + np.log(files_per_item)))[i], 0.0, 1.0)
    starts = np.flatnonzero(np.r_[True, f[1:] != f[:-1]])
    saturated = 1.0 - np.multiply.reduceat(1.0 - kept, starts)
    return _over_files(kb_files, pd.Series(saturated, index=files[f[starts]]))


def _word_matches(vocabulary: pd.DataFrame, keywords: list[str], prefix: bool) -> pd.DataFrame:
    """(position, entry, item, level) over a sorted (entry, stem) vocabulary: the entry equals a keyword or stems
    to it ("word"), or a keyword prefixes it ("prefix"); position is the entry's row in the vocabulary.

    Matching runs on the sorted vocabulary (isin + binary search for prefixes), not on every file or symbol.
    """
    entries, stems = vocabulary["entry"].to_numpy(), vocabulary["stem"].to_numpy()
    wanted = set(keywords)
    same = np.flatnonzero(in_set(vocabulary["entry"], wanted))
    stemmed = np.flatnonzero(in_set(vocabulary["stem"], wanted))
    prefixes = [kw for kw in keywords if prefix and len(kw) >= MIN_PREFIX_LEN]
    low = np.searchsorted(entries, prefixes).astype(int)
    high = np.searchsorted(entries, [kw + "\U0010ffff" for kw in prefixes]).astype(int)
    positions = np.concatenate([np.arange(lo, hi) for lo, hi in zip(low, high)] + [np.array([], dtype=int)])
    where = np.concatenate([same, stemmed, positions]).astype(int)
    prefixed = np.repeat(np.array(prefixes, dtype=object), high - low)
    levels = np.array(["word", "word", "prefix"], dtype=object)
    items = np.concatenate([entries[same], stems[stemmed], prefixed]).astype(object)
    item_codes, _ = pd.factorize(items)
    _, first = np.unique(where * (len(items) + 1) + item_codes, return_index=True)  # an (entry, item) pair once
    keep = np.sort(first)
    return pd.DataFrame(
        {
            "position": where[keep],
            "entry": entries[where[keep]],
            "item": items[keep],
            "level": np.repeat(levels, [len(same), len(stemmed), len(positions)])[keep],
        }
    )


def _keyword_path_hits(components: WordIndex, words: WordIndex, keywords: list[str]) -> pd.DataFrame:
    """(file_id, item, score) per file and item with its best score, sorted: keywords equal to, or words of, or
    prefixes of words of path components."""
    whole = _word_matches(components.vocabulary, keywords, prefix=False).assign(level="whole")
    found = []
    for index, matches in ((components, whole), (words, _word_matches(words.vocabulary, keywords, prefix=True))):
        rows, counts = vocabulary.rows_of(index, matches["position"].to_numpy())
        levels = np.repeat(matches["level"].to_numpy(dtype=object), counts)
        found.append(
            (
                index.rows["file_id"].to_numpy()[rows],
                np.repeat(matches["item"].to_numpy(dtype=object), counts),
                _path_scores(levels, index.rows["is_name"].to_numpy(dtype=bool)[rows]),
            )
        )
    items, item_names = pd.factorize(np.concatenate([i for _, i, _ in found]).astype(object), sort=True)
    file_ids = np.concatenate([f for f, _, _ in found])
    best = vocabulary.best_per_pair(
        file_ids.astype(np.int64), items, np.concatenate([s for _, _, s in found]), len(item_names)
    )
    item_names = np.asarray(item_names, dtype=object)
    return pd.DataFrame({"file_id": best[0].astype(file_ids.dtype), "item": item_names[best[1]], "score": best[2]})


def _path_scores(levels: np.ndarray, is_name: np.ndarray) -> np.ndarray:
    """PATH_SCORES of each (level, is_name) pair."""
    kinds = ("whole", "word", "prefix")
    by_level = [np.where(is_name, PATH_SCORES[(kind, True)], PATH_SCORES[(kind, False)]) for kind in kinds]
    return np.select([levels == kind for kind in kinds], by_level, default=np.nan)


def path_match(
    kb_files: pd.DataFrame,
    task_query: TaskQuery,
    kb_path_components: WordIndex,
    kb_path_words: WordIndex,
) -> pd.Series:
    """0-1 per file: task keywords matching its path components, file name above directory (signal 1)."""
    if kb_files.empty or not task_query.keywords:
        return _zeros(kb_files)
    return _saturated_hits(kb_files, _keyword_path_hits(kb_path_components, kb_path_words, list(task_query.keywords)))


def _task_words(task_query: TaskQuery) -> set[str]:
    """Lower-case identifier words of the task text (not stemmed), stop words and short words dropped."""
    words = {w.lower() for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", task_query.raw_description)}
    return {w for w in words if len(w) >= MIN_PREFIX_LEN and w not in STOP_WORDS}


def _symbol_hits(
    task_query: TaskQuery, names: pd.DataFrame, name_words: WordIndex, index: vocabulary.NameIndex
) -> pd.DataFrame:
    """(file_id, item, score) per file and item with its best score, sorted: exact (1.0), substring (0.5) and
    constituent (0.3) symbol-name matches.

    Names are matched once per distinct name (`names`: name, lower; `name_words`: their words by name code), then
    spread through the name index (`index`: the files carrying each name code) to the files.
    """
    lower = names["lower"]
    hint_names = {h.split(".")[-1].lower(): h for h in task_query.symbol_hints}
    exact_items = {**{w: w for w in _task_words(task_query)}, **{k: k for k in task_query.keywords}, **hint_names}
    exact = in_set(lower, exact_items)
    found = [(np.flatnonzero(exact), lower[exact].map(exact_items).to_numpy(dtype=object), SYMBOL_EXACT)]
    for name, hint in hint_names.items():
        if len(name) >= 4:
            codes = vocabulary.names_containing(index, name)
            found.append((codes, np.full(len(codes), hint, dtype=object), SYMBOL_SUBSTRING))
    matches = _word_matches(name_words.vocabulary, list(task_query.keywords), prefix=True)
    rows, counts = vocabulary.rows_of(name_words, matches["position"].to_numpy())
    found.append(
        (
            name_words.rows["code"].to_numpy()[rows],
            np.repeat(matches["item"].to_numpy(dtype=object), counts),
            SYMBOL_CONSTITUENT,
        )
    )
    codes = np.concatenate([c for c, _, _ in found]).astype(np.int64)
    items, item_names = pd.factorize(np.concatenate([i for _, i, _ in found]).astype(object), sort=True)
    scores = np.concatenate([np.full(len(c), s) for c, _, s in found])
    codes, items, scores = vocabulary.best_per_pair(codes, items, scores, len(item_names))  # once per name
    files, counts = vocabulary.carriers_of(index, codes)
    file_id, items, scores = vocabulary.best_per_pair(
        files.astype(np.int64), np.repeat(items, counts), np.repeat(scores, counts), len(item_names)
    )
    item_names = np.asarray(item_names, dtype=object)
    return pd.DataFrame({"file_id": file_id.astype(index.files.dtype), "item": item_names[items], "score": scores})


def symbol_match(
    kb_files: pd.DataFrame,
    kb_symbols: pd.DataFrame,
    task_query: TaskQuery,
    kb_symbol_names: pd.DataFrame,
    kb_symbol_name_words: WordIndex,
    kb_symbol_name_index: vocabulary.NameIndex,
) -> pd.Series:
    """0-1 per file: its symbol names vs task hints/keywords, exact 1.0 / substring 0.5 / constituent 0.3 (signal 2)."""
    if kb_files.empty or kb_symbols.empty or not (task_query.keywords or task_query.symbol_hints):
        return _zeros(kb_files)
    return _saturated_hits(
        kb_files, _symbol_hits(task_query, kb_symbol_names, kb_symbol_name_words, kb_symbol_name_index)
    )


def _file_hint_seeds(kb_files: pd.DataFrame, task_query: TaskQuery) -> list[pd.Series]:
    """Files named by a file hint (at most MAX_FILES_PER_FILE_HINT per hint), with the reason."""
    out = []
    for hint in task_query.file_hints:
        named = kb_files.loc[path_matches(kb_files["path"], hint), "file_id"]
        if 0 < len(named) <= MAX_FILES_PER_FILE_HINT:
            out.append(pd.Series(f"file hint '{hint}'", index=named.to_numpy()))
    return out


def _trace_seeds(kb_files: pd.DataFrame, task_query: TaskQuery) -> list[pd.Series]:
    """Files of in-repository stack-trace frames."""
    out = []
    for path, function in task_query.trace_frames:
        named = kb_files.loc[path_matches(kb_files["path"], path), "file_id"]
        where = f" in {function}" if function else ""
        out.append(pd.Series(f"trace frame '{path.rsplit('/', 1)[-1]}{where}'", index=named.to_numpy()))
    return out


def _symbol_seeds(kb_files: pd.DataFrame, kb_symbols: pd.DataFrame, task_query: TaskQuery) -> list[pd.Series]:
    """Non-test files defining a qualified symbol hint (`module.func`, `Class.method`) that resolves to one file;
    when no such member exists yet (a method the task adds, a field), the one file defining the owner type.

    Plain names do not seed: measured on real issues, files merely defining a name the issue mentions are the
    fix target about one time in five, so they compete through `symbol_match` instead of jumping the queue.
    """
    if kb_symbols.empty:
        return []
    files = kb_files.set_index("file_id")

    def non_test(cand: pd.DataFrame) -> pd.DataFrame:
        return cand[~files["is_test"].reindex(cand["file_id"]).fillna(False).astype(bool).to_numpy()]

    out = []
    for hint in (h for h in task_query.symbol_hints if "." in h):
        cand = non_test(kb_symbols[kb_symbols["name"] == hint.split(".")[-1]])
        modules = files["module"].reindex(cand["file_id"]).fillna("").astype(str).to_numpy()
        qualified = pd.Series(modules, index=cand.index, dtype=object) + "." + cand["qualified_name"].astype(str)
        resolved = cand[(qualified == hint) | qualified.str.endswith("." + hint) | (cand["qualified_name"] == hint)]
        defining, reason = resolved["file_id"].unique(), f"symbol hint '{hint}'"
        if resolved.empty:  # a member the task adds (`Error::is_dns`) or a field: the file defining its type
            owner = hint.split(".")[-2]
            named = kb_symbols[kb_symbols["name"] == owner]  # (the kinds of these rows only, not of every symbol)
            types = non_test(named[named["kind"].isin(TYPE_KINDS).to_numpy(dtype=bool)])
            defining, reason = types["file_id"].unique(), f"type '{owner}' of '{hint}', which nothing defines yet"
        if len(defining) == 1:
            out.append(pd.Series(reason, index=defining))
    return out


def seed_files(kb_files: pd.DataFrame, kb_symbols: pd.DataFrame, task_query: TaskQuery) -> pd.Series:
    """file_id -> why it is a seed: named by a file hint, in a trace frame, or defining a specific symbol hint."""
    if kb_files.empty:
        return pd.Series(dtype=object, name="reason")
    parts = _file_hint_seeds(kb_files, task_query) + _trace_seeds(kb_files, task_query)
    parts += _symbol_seeds(kb_files, kb_symbols, task_query)
    parts = [p for p in parts if len(p)]
    if not parts:
        return pd.Series(dtype=object, name="reason", index=pd.Index([], name="file_id", dtype="int64"))
    reasons = pd.concat(parts)
    reasons = reasons.groupby(level=0, sort=True).agg(lambda r: "; ".join(dict.fromkeys(r)))
    reasons.index.name = "file_id"
    return reasons.rename("reason")


def kb_import_graph(kb_edges: pd.DataFrame) -> ImportGraph:
    """The import edges indexed by either end: what the graph signals walk (a per-KB override in a request)."""
    return import_graph(kb_edges)


def _touching(kb_import_graph: ImportGraph, files) -> pd.DataFrame:
    """Import edges with an end in files, either direction, as (a, b) with a in files, self-loops dropped (a pair
    may repeat): the part of the undirected import graph a request walks (never the whole graph: millions of edges)."""
    g = kb_import_graph
    out, into = g.rows_from(files), g.rows_into(files)
    a, b = np.concatenate([g.src[out], g.dst[into]]), np.concatenate([g.dst[out], g.src[into]])
    keep = a != b
    return pd.DataFrame({"a": a[keep], "b": b[keep]})


def dependency_proximity(kb_files: pd.DataFrame, kb_import_graph: ImportGraph, seed_files: pd.Series) -> pd.Series:
    """0-1 per file: 1 / 0.5 / 0.25 at 1 / 2 / 3 import hops from a seed, either direction (signal 3). The hops
    mark files in a table over file ids: at hop 3 of a large repository most of its files are reached."""
    if not len(kb_import_graph) or seed_files.empty:
        return _zeros(kb_files)
    frontier = seed_files.index.to_numpy(dtype=np.int64)
    size = max(len(kb_import_graph.offsets), int(frontier.max()) + 1)  # (graph.neighbours: ids below its offsets)
    visited, hop_score = np.zeros(size, dtype=bool), np.zeros(size)
    visited[frontier[frontier >= 0]] = True
    for score in HOP_SCORES.values():
        reached = kb_import_graph.neighbours(frontier)
        reached = reached[~visited[reached]]
        visited[reached], hop_score[reached] = True, score
        frontier = reached
    scored = np.flatnonzero(hop_score)
    return _over_files(kb_files, pd.Series(hop_score[scored], index=scored))


def cochange_affinity(kb_files: pd.DataFrame, kb_cochange: pd.DataFrame, seed_files: pd.Series) -> pd.Series:
    """0-1 per file: commits shared with seed files, divided by the largest such count (signal 4)."""
    if kb_cochange.empty or seed_files.empty:
        return _zeros(kb_files)
    seeds = seed_files.index
    pairs = pd.concat(
        [
            kb_cochange.set_axis(["seed", "other", "count"], axis=1),
            kb_cochange[["file_b", "file_a", "count"]].set_axis(["seed", "other", "count"], axis=1),
        ],
        ignore_index=True,
    )
    pairs = pairs[pairs["seed"].isin(seeds) & ~pairs["other"].isin(seeds)]
    return _over_files(kb_files, _normalised(pairs.groupby("other")["count"].sum().astype(float)))


def recency(kb_files: pd.DataFrame, kb_commits: pd.DataFrame) -> pd.Series:
    """0-1 per file: its last commit time placed in the repository's commit time range (signal 5)."""
    times = pd.to_numeric(kb_files.set_index("file_id")["last_commit_time"], errors="coerce").astype(float)
    pool = pd.to_numeric(kb_commits["time"], errors="coerce").dropna() if not kb_commits.empty else times.dropna()
    if pool.empty or times.dropna().empty:
        return _zeros(kb_files)
    low, high = min(pool.min(), times.min()), max(pool.max(), times.max())
    if high <= low:
        return _zeros(kb_files)
    return _over_files(kb_files, (times - low) / (high - low))


def _query_stems(task_query: TaskQuery) -> set[str]:
    """Task keywords plus concepts (as written and stemmed): what domain/module names are matched against."""
    concepts = {c.lower() for c in task_query.concepts}
    return set(task_query.keywords) | concepts | {stem(c) for c in concepts}


def domain_match(
    kb_files: pd.DataFrame,
    task_query: TaskQuery,
    kb_domain_words: pd.DataFrame,
    kb_module_words: pd.DataFrame,
) -> pd.Series:
    """0-1 per file: task concepts/keywords naming its domain (0.6) and share of its module words (0.4) (signal 6)."""
    query = _query_stems(task_query)
    if kb_files.empty or not query:
        return _zeros(kb_files)
    ids = kb_files["file_id"].to_numpy(dtype=np.int64)
    domain, module = kb_domain_words, kb_module_words
    domain_hits = _per_file(domain["file_id"], in_set(domain["stem"], query), ids)
    module_hits = _per_file(module["file_id"], in_set(module["stem"], query), ids)
    module_words = _per_file(module["file_id"], np.ones(len(module)), ids)
    domain_part = (domain_hits > 0).astype(float)
    module_share = np.divide(module_hits, module_words, out=np.zeros(len(ids)), where=module_words > 0)
    return _over_files(kb_files, pd.Series(0.6 * domain_part + 0.4 * module_share, index=ids))


def _per_file(file_ids: pd.Series, values, ids: np.ndarray) -> np.ndarray:
    """The sum of values per file, for each of ids (0 for a file without rows): a groupby-sum in one bincount
    over the file ids (word tables have a row per file and word: 0.6M on OpenJDK)."""
    weights = np.asarray(values, dtype=float)
    if not len(weights) or not len(ids):
        return np.zeros(len(ids))
    hit = np.flatnonzero(weights != 0)  # a row weighing 0 adds nothing: only the (few) matching rows are summed
    rows, weights = file_ids.to_numpy()[hit].astype(np.int64), weights[hit]
    if not len(rows):
        return np.zeros(len(ids))
    size = int(max(rows.max(), ids.max())) + 1
    if size <= 4 * (len(rows) + len(ids)) + 1_000_000:
        return np.bincount(rows, weights=weights, minlength=size)[ids]
    known, codes = np.unique(rows, return_inverse=True)  # sparse ids: summed over their ranks instead
    sums = np.bincount(codes, weights=weights, minlength=len(known))
    at = np.minimum(np.searchsorted(known, ids), len(known) - 1)
    return np.where(known[at] == ids, sums[at], 0.0)


def concept_overlap(kb_files: pd.DataFrame, task_query: TaskQuery, kb_file_concepts: pd.DataFrame) -> pd.Series:
    """0-1 per file: share of the task's concepts found in files.concepts (Jaccard-like coverage, signal 7)."""
    task = {c.lower() for c in task_query.concepts}
    if kb_files.empty or not task:
        return _zeros(kb_files)
    ids = kb_files["file_id"].to_numpy(dtype=np.int64)
    hits = _per_file(kb_file_concepts["file_id"], in_set(kb_file_concepts["concept"], task), ids)
    return _over_files(kb_files, pd.Series(hits / len(task), index=ids))


def structural_centrality(kb_files: pd.DataFrame, kb_edges: pd.DataFrame) -> pd.Series:
    """0-1 per file: how many files import it, divided by the most imported file's count (signal 8)."""
    if kb_edges.empty:
        return _zeros(kb_files)
    edges = kb_edges[["src_file_id", "dst_file_id"]]
    src, dst = edges["src_file_id"].to_numpy(), edges["dst_file_id"].to_numpy()
    same_src = src[1:] == src[:-1]
    if not ((src[1:] > src[:-1]) | (same_src & (dst[1:] >= dst[:-1]))).all():  # the KB's come sorted by (src, dst)
        edges = edges.sort_values(["src_file_id", "dst_file_id"])
        src, dst = edges["src_file_id"].to_numpy(), edges["dst_file_id"].to_numpy()
        same_src = src[1:] == src[:-1]
    first = np.r_[True, ~same_src | (dst[1:] != dst[:-1])]  # repeats of a pair are neighbours: count each pair once
    in_degree = pd.Series(np.bincount(dst[first & (src != dst)].astype(np.int64)), dtype=float)
    return _over_files(kb_files, _normalised(in_degree[in_degree > 0]))


def lexical_query_terms(task_query: TaskQuery, file_lexicon: Lexicon) -> list[str]:
    """BM25 query terms: keywords, hint terms repeated (identifiers weigh more), terms in most files dropped."""
    hint_terms = terms(" ".join(task_query.symbol_hints + task_query.file_hints))
    query = list(task_query.keywords) + hint_terms * 2
    n_docs = len(file_lexicon.doc_ids)
    return [t for t in query if file_lexicon.document_frequency(t) <= COMMON_TERM_SHARE * n_docs]


def lexical_match(kb_files: pd.DataFrame, lexical_query_terms: list[str], file_lexicon: Lexicon) -> pd.Series:
    """0-1 per file: BM25 of the task terms against its contents, divided by the best file's score (signal 9)."""
    if kb_files.empty or not lexical_query_terms or len(file_lexicon.doc_ids) == 0:
        return _zeros(kb_files)
    return _over_files(kb_files, _normalised(file_lexicon.scores(lexical_query_terms)))


def title_query_terms(task_query: TaskQuery, file_lexicon: Lexicon) -> list[str]:
    """BM25 query terms of the task's first line (markdown heading marks dropped), terms in most files dropped.

    An issue's title names the broken behaviour in a few words; in the body those words are outnumbered by
    reproduction code, logs and environment details.
    """
    lines = (line.strip().lstrip("#").strip() for line in task_query.raw_description.splitlines())
    title = next((line for line in lines if line), "")
    n_docs = len(file_lexicon.doc_ids)
    return [t for t in terms(title) if file_lexicon.document_frequency(t) <= COMMON_TERM_SHARE * n_docs]


def title_match(kb_files: pd.DataFrame, title_query_terms: list[str], file_lexicon: Lexicon) -> pd.Series:
    """0-1 per file: BM25 of the task title's terms against its contents, divided by the best file's score."""
    if kb_files.empty or not title_query_terms or len(file_lexicon.doc_ids) == 0:
        return _zeros(kb_files)
    return _over_files(kb_files, _normalised(file_lexicon.scores(title_query_terms)))


def kb_symbol_files(kb_symbols: pd.DataFrame) -> pd.Series:
    """symbol_id -> file_id of every symbol: its index's hash table is built once per loaded KB (a per-KB override in
    a request), not once per request over every symbol (745k on OpenJDK)."""
    return kb_symbols.set_index("symbol_id")["file_id"]


def symbol_lexical_match(
    kb_files: pd.DataFrame, kb_symbol_files: pd.Series, lexical_query_terms: list[str], symbol_lexicon: Lexicon
) -> pd.Series:
    """0-1 per file: BM25 of its best-matching function/class chunk, so one relevant function in a long file counts."""
    if kb_files.empty or kb_symbol_files.empty or not lexical_query_terms or len(symbol_lexicon.doc_ids) == 0:
        return _zeros(kb_files)
    totals = symbol_lexicon.totals(lexical_query_terms)
    hit = np.flatnonzero(totals != 0)  # only the hits are owned (a file whose symbols all score 0 gets 0 either way;
    # a boolean mask first: 4x faster than nonzero over 745k floats)
    scores = pd.Series(totals[hit], index=np.asarray(symbol_lexicon.doc_ids)[hit])
    owner = kb_symbol_files.reindex(scores.index)
    best = scores.groupby(owner.to_numpy()).max()
    return _over_files(kb_files, _normalised(best))


HISTORY_HALF_LIFE_DAYS = 365.0  # a past fix a year older than the newest commit counts half
HISTORY_TOP_COMMITS = 30  # only the most similar past commits spread their score


def history_match(
    kb_files: pd.DataFrame,
    kb_commits: pd.DataFrame,
    kb_commit_files: pd.DataFrame,
    lexical_query_terms: list[str],
    commit_lexicon: Lexicon,
) -> pd.Series:
    """0-1 per file: past commits whose messages resemble the task, their BM25 spread to the files they changed.

    Similar past reports/fixes point at the code that keeps breaking; recency-decayed, and a commit touching
    many files spreads its score thinly.
    """
    if kb_files.empty or kb_commits.empty or not lexical_query_terms or len(commit_lexicon.doc_ids) == 0:
        return _zeros(kb_files)
    similar = commit_lexicon.scores(lexical_query_terms)
    similar = similar[similar > 0].nlargest(HISTORY_TOP_COMMITS)
    if similar.empty:
        return _zeros(kb_files)
    commits = kb_commits.set_index("commit").reindex(similar.index)
    age_days = (kb_commits["time"].max() - commits["time"]).fillna(0) / 86_400
    spread = similar * 0.5 ** (age_days / HISTORY_HALF_LIFE_DAYS) / commits["n_files"].clip(lower=1) ** 0.5
    touched = kb_commit_files[kb_commit_files["commit"].isin(spread.index)]
    per_path = touched.assign(weight=touched["commit"].map(spread)).groupby("path")["weight"].sum()
    file_ids = kb_files.set_index("path")["file_id"]
    per_file = per_path[per_path.index.isin(file_ids.index)]
    per_file.index = file_ids.reindex(per_file.index).to_numpy()
    return _over_files(kb_files, _normalised(per_file))


IMPORT_TIE = 0.5  # partner_affinity of a file one import away from an anchor (either direction)
MIN_TIE_COMMITS = 2  # a single shared commit (an initial import, a sweep) ties nothing


def partner_affinity(
    kb_files: pd.DataFrame, kb_cochange: pd.DataFrame, kb_import_graph: ImportGraph, anchor_files: pd.Series
) -> pd.Series:
    """0-1 per file: its strongest tie to an anchor (a best file of the first pass) times that anchor's share of the
    best first-pass total; a tie is the share of the anchor's commits that changed the file too (from MIN_TIE_COMMITS
    shared commits), or IMPORT_TIE for an import either way.

    A fix that edits several files seldom repeats the task's words in all of them: the partners of the file that
    matches best are the files that change with it and the ones wired to it.
    """
    if kb_files.empty or anchor_files.empty:
        return _zeros(kb_files)
    commits = kb_files.set_index("file_id")["commit_count"].reindex(anchor_files.index).fillna(0).clip(lower=1)
    ties = []
    if not kb_cochange.empty:
        pairs = pd.concat(
            [
                kb_cochange.set_axis(["anchor", "other", "count"], axis=1),
                kb_cochange[["file_b", "file_a", "count"]].set_axis(["anchor", "other", "count"], axis=1),
            ]
        )
        pairs = pairs[pairs["anchor"].isin(anchor_files.index) & (pairs["count"] >= MIN_TIE_COMMITS)]
        ties.append(pairs.assign(tie=(pairs["count"] / pairs["anchor"].map(commits)).clip(upper=1.0)))
    if len(kb_import_graph):
        pairs = _touching(kb_import_graph, anchor_files.index).set_axis(["anchor", "other"], axis=1)
        ties.append(pairs.assign(tie=IMPORT_TIE))
    if not ties:
        return _zeros(kb_files)
    tied = pd.concat(ties, ignore_index=True)
    strength = tied["tie"].astype(float) * tied["anchor"].map(anchor_files).astype(float)
    return _over_files(kb_files, strength.groupby(tied["other"].to_numpy()).max())
