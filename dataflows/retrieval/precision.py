"""Stage 2 precision (seed 001 step 4): which symbols of the scoped files enter the package, and at what depth.

primary       name matches a symbol hint / trace frame / distinctive task keywords, or (seed files) its docstring
              or comments do; if no seed file has one, the seed files' symbols of the task's kind are promoted
supporting    used by a primary (kb_symbol_edges: calls, imports, same-file calls), or the class around a primary
type_context  class / interface / enum / type alias a primary or supporting symbol names as annotation or base,
              followed transitively
excluded      everything else; and every symbol of a test file that has no test matching the task
Only scoped symbols are classified; bodies are sliced from kb_contents for the files that contribute something.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

import numpy as np
import pandas as pd

from dataflows.lexical import Bm25Index
from dataflows.retrieval import vocabulary
from dataflows.retrieval.models import FileContext, SymbolContext, TaskQuery
from dataflows.retrieval.render import _symbol_text
from dataflows.text import terms

TYPE_KINDS = ("class", "interface", "enum", "type_alias")
TYPE_EDGE_KINDS = ("annotation", "base")
# seed step 4.2: the kind promoted in seed files when nothing in them matched
PROMOTED_KINDS = {
    "bug_fix": ("function", "method"),
    "feature": ("class", "interface"),
    "refactor": ("class", "function", "method"),
    "test": ("function", "method"),
    "investigation": ("function", "method"),
}
COMMON_TERM_WEIGHT = 0.5  # a term many symbols share counts half: two of them, or one distinctive term, make a match
COMMON_DF_SHARE = 0.01  # a term in more than 1% of the symbols (and more than COMMON_DF_MIN) is common
COMMON_DF_MIN = 5
MATCH_WEIGHT = 1.0  # matched-term weight a name / docstring needs
NAME_COVERAGE = 0.5  # share of a name's words the task must mention (all of them unless two strong words match)
TYPE_BODY_MAX_TOKENS = 160  # small type definitions (dataclasses, enums) are shown whole, bigger ones by signature
MAX_TYPE_HOPS = 8
LEXICAL_BACKFILL_RANK = 10  # top-ranked files without a name match still contribute their best BM25 definition
_ASSERTION = re.compile(
    r"^\s*(assert\b|self\.assert\w*\(|(?:await\s+)?expect\(|assert_eq!|assert_ne!|assert!|debug_assert|t\.(?:Errorf|Fatalf|Error|Fatal)\(|"
    r"require\.\w+\(|(?:Assert|Assertions)\.\w+\(|assert\w+\(|pytest\.raises\()"
)
_TIER_RANK = {"primary": 0, "supporting": 1, "type_context": 2, "excluded": 3}


def precision_terms(task_query: TaskQuery, symbol_lexicon: Bm25Index) -> pd.Series:
    """Task keyword/hint term -> match weight: 1 when distinctive in the KB, 0.5 when many symbols share it."""
    words = sorted({w for text in (*task_query.keywords, *task_query.symbol_hints) for w in vocabulary.name_words(text)})
    n_docs = len(symbol_lexicon.doc_ids)
    common_df = max(COMMON_DF_MIN, COMMON_DF_SHARE * n_docs)
    df = np.array([symbol_lexicon.document_frequency(w) for w in words], dtype=float)
    return pd.Series(np.where(df > common_df, COMMON_TERM_WEIGHT, 1.0), index=pd.Index(words, dtype="object"))


def best_lexical_symbols(
    scope: pd.DataFrame, kb_symbols: pd.DataFrame, lexical_query_terms: list[str], symbol_lexicon: Bm25Index
) -> pd.Series:
    """symbol_id -> reason: the best BM25-matching definition of each top-ranked non-test scoped file.

    A file ranked high on its contents may define nothing whose *name* matches the task; without this its
    code would never reach the package, however much budget is left.
    """
    top = scope[(scope["rank"] <= LEXICAL_BACKFILL_RANK) & ~scope["is_test"].fillna(False).astype(bool)]
    syms = kb_symbols[kb_symbols["file_id"].isin(top.index) & kb_symbols["kind"].isin(["function", "method", "class"])]
    if syms.empty or not lexical_query_terms or len(symbol_lexicon.doc_ids) == 0:
        return pd.Series(dtype=object)
    scores = symbol_lexicon.scores(lexical_query_terms).reindex(syms["symbol_id"]).fillna(0.0).to_numpy()
    ranked = syms.assign(score=scores)
    best = ranked[ranked["score"] > 0].sort_values(["file_id", "score"], ascending=[True, False]).drop_duplicates("file_id")
    return pd.Series("best lexical match in a top-ranked file", index=best["symbol_id"].to_numpy(), dtype=object)


def symbol_tiers(
    scope: pd.DataFrame,
    task_query: TaskQuery,
    kb_symbols: pd.DataFrame,
    kb_comments: pd.DataFrame,
    kb_symbol_edges: pd.DataFrame,
    precision_terms: pd.Series,
    best_lexical_symbols: pd.Series | None = None,
    kb_symbol_name_codes: pd.DataFrame | None = None,
    kb_symbol_name_terms: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """One row per scoped symbol: symbol_id, file_id, tier (primary|supporting|type_context|excluded), reason.

    kb_symbol_name_codes / kb_symbol_name_terms (per-KB word tables) spare splitting names per request."""
    syms = _scoped_symbols(scope, kb_symbols)
    reason = pd.Series("", index=syms.index, dtype="object")
    tier = pd.Series("excluded", index=syms.index, dtype="object")

    codes = None if kb_symbol_name_codes is None else kb_symbol_name_codes["name_code"].reindex(syms.index)
    if codes is not None and kb_symbol_name_terms is not None and codes.notna().all():
        name_terms = vocabulary.terms_of(codes.to_numpy(dtype=np.int64), syms.index.to_numpy(), kb_symbol_name_terms)
    else:
        name_terms = _name_terms(syms)
    primary = _primary_reasons(syms, task_query, kb_comments, precision_terms, name_terms)
    if not (primary.ne("") & syms["seed"] & ~syms["is_test"]).any():
        promoted = _promoted(syms, task_query.task_type) & primary.eq("")
        primary = primary.mask(promoted, f"promoted: {task_query.task_type} kind in seed file")
    if best_lexical_symbols is not None and len(best_lexical_symbols):
        files_with_primary = set(syms.loc[primary.ne(""), "file_id"])
        backfill = best_lexical_symbols.reindex(syms.index)
        backfill = backfill.notna() & ~syms["file_id"].isin(files_with_primary) & primary.eq("")
        primary = primary.mask(backfill, best_lexical_symbols.reindex(syms.index))
    tier.loc[primary.ne("")] = "primary"
    reason.loc[primary.ne("")] = primary
    holders = _holders_of(syms, primary.ne(""))  # a class around primary methods: its signature, not its body
    tier.loc[holders.index] = "supporting"
    reason.loc[holders.index] = holders.to_numpy()

    live_tests = set(syms.loc[tier.eq("primary") & syms["is_test"], "file_id"])
    allowed = ~syms["is_test"] | syms["file_id"].isin(live_tests)
    names = syms["qualified_name"]

    inside = kb_symbol_edges["src_symbol_id"].isin(syms.index) & kb_symbol_edges["dst_symbol_id"].isin(syms.index)
    edges = kb_symbol_edges[inside].drop_duplicates(["src_symbol_id", "dst_symbol_id", "kind"])  # both ends scoped
    out = edges[edges["src_symbol_id"].isin(syms.index[tier.eq("primary")]) & edges["dst_symbol_id"].isin(syms.index)]
    is_type_edge = out["kind"].isin(TYPE_EDGE_KINDS) & out["dst_symbol_id"].map(syms["kind"]).isin(TYPE_KINDS)
    calls = out[~is_type_edge].drop_duplicates("dst_symbol_id")
    supporting = pd.Series(
        ("used by " + calls["src_symbol_id"].map(names).astype(str)).to_numpy(), index=calls["dst_symbol_id"].to_numpy()
    ).reindex(syms.index)
    take = supporting.notna() & tier.eq("excluded") & allowed
    tier.loc[take] = "supporting"
    reason.loc[take] = supporting[take]

    for _ in range(MAX_TYPE_HOPS):
        frontier = syms.index[tier.isin(["primary", "supporting", "type_context"])]
        hop = edges[
            edges["src_symbol_id"].isin(frontier)
            & edges["kind"].isin(TYPE_EDGE_KINDS)
            & edges["dst_symbol_id"].isin(syms.index[tier.eq("excluded") & allowed & syms["kind"].isin(TYPE_KINDS)])
        ].drop_duplicates("dst_symbol_id")
        if hop.empty:
            break
        tier.loc[hop["dst_symbol_id"]] = "type_context"
        reason.loc[hop["dst_symbol_id"]] = ("type of " + hop["src_symbol_id"].map(names).astype(str)).to_numpy()

    reason.loc[tier.eq("excluded") & syms["is_test"] & ~allowed] = "test file without a test matching the task"
    frame = pd.DataFrame(
        {"symbol_id": syms.index, "file_id": syms["file_id"], "tier": tier, "reason": reason},
    )
    order = pd.DataFrame({"r": syms["rank"], "t": tier.map(_TIER_RANK), "l": syms["start_line"]})
    return frame.loc[order.sort_values(["r", "t", "l"], kind="stable").index].reset_index(drop=True)


def file_contexts(
    symbol_tiers: pd.DataFrame,
    scope: pd.DataFrame,
    kb_files: pd.DataFrame,
    kb_symbols: pd.DataFrame,
    kb_comments: pd.DataFrame,
    kb_contents: pd.DataFrame,
    count_tokens: Callable,
) -> list[FileContext]:
    """Per contributing scoped file, in rank order: its tiered symbols at their depth, test assertions, rationale."""
    chosen = symbol_tiers[symbol_tiers["tier"] != "excluded"]
    position = pd.Index(kb_symbols["symbol_id"]).get_indexer(chosen["symbol_id"])
    syms = kb_symbols.take(position).assign(tier=chosen["tier"].to_numpy(), reason=chosen["reason"].to_numpy())
    by_file: dict[int, list[dict]] = {}
    for record in syms.to_dict("records"):  # the chosen symbols only: tens to hundreds
        by_file.setdefault(record["file_id"], []).append(record)
    texts = kb_contents[kb_contents["file_id"].isin(chosen["file_id"])].drop_duplicates("file_id")
    texts = dict(zip(texts["file_id"], texts["text"]))
    contributing = kb_files[kb_files["file_id"].isin(chosen["file_id"])]
    language = dict(zip(contributing["file_id"], contributing["language"]))
    why = kb_comments[kb_comments["symbol_id"].isin(chosen["symbol_id"])]
    why = why[why["is_rationale"].fillna(False).astype(bool)]
    why = why.sort_values(["file_id", "line"]).groupby("file_id")["text"].agg(lambda t: tuple(dict.fromkeys(t)))
    ranked = scope.loc[scope.index.isin(chosen["file_id"])].sort_values("rank")
    out = []
    for file_id, row in zip(ranked.index, ranked.to_dict("records")):
        lang = str(language.get(file_id, "text") or "text")
        lines = texts.get(file_id, "").splitlines()
        symbols = tuple(
            _symbol_context(int(s["symbol_id"]), s, lines, lang, count_tokens) for s in by_file.get(file_id, [])
        )
        is_test = bool(row["is_test"])
        assertions = tuple(  # only test files carry assertions
            f"{s.name}: {line.strip()}"
            for s in (symbols if is_test else ())
            if s.relevance == "primary" and s.body
            for line in s.body.splitlines()
            if _ASSERTION.match(line)
        )
        out.append(
            FileContext(
                file_id=int(file_id),
                path=str(row["path"]),
                language=lang,
                relevance_rank=int(row["rank"]),
                score=float(row["total_score"]),
                added_by=str(row["added_by"]),
                symbols=symbols,
                rationale_comments=tuple(why.get(file_id, ())),
                test_assertions=assertions if is_test else None,
            )
        )
    return out


def _scoped_symbols(scope: pd.DataFrame, kb_symbols: pd.DataFrame) -> pd.DataFrame:
    """Symbols of scoped files, indexed by symbol_id, with their file's path, rank, seed and test flags."""
    syms = kb_symbols[kb_symbols["file_id"].isin(scope.index)].set_index("symbol_id")
    per_file = scope.reindex(syms["file_id"])
    return syms.assign(
        path=per_file["path"].to_numpy(),
        rank=per_file["rank"].to_numpy(),
        seed=per_file["seed"].fillna(False).astype(bool).to_numpy(),
        is_test=per_file["is_test"].fillna(False).astype(bool).to_numpy(),
        is_test_fn=syms["kind"].isin(["function", "method"]) & syms["name"].astype(str).str.lower().str.contains("test"),
    )


def _primary_reasons(
    syms: pd.DataFrame,
    task_query: TaskQuery,
    kb_comments: pd.DataFrame,
    weights: pd.Series,
    name_terms: pd.Series,
) -> pd.Series:
    """Why each scoped symbol is primary ('' when it is not): hint, trace frame, name keywords, seed docstring.
    name_terms: `_name_terms(syms)`."""
    reason = pd.Series("", index=syms.index, dtype="object")
    eligible = ~syms["is_test"] | syms["is_test_fn"]  # in test files only tests can be primary

    docs = _doc_and_comments(syms[syms["seed"] & ~syms["is_test"]], kb_comments)
    doc_words = docs.astype(object).map(lambda t: sorted(set(terms(t or "")) - {"test"})).explode().dropna()
    doc_hit = _term_hits(doc_words, docs.index, weights)
    ok = doc_hit["weight"] >= MATCH_WEIGHT
    reason.loc[doc_hit.index[ok.to_numpy()]] = "docstring/comments mention " + doc_hit.loc[ok, "words"]

    name_hit = _term_hits(name_terms, syms.index, weights)
    coverage = name_hit["matched"] / name_hit["total"].where(name_hit["total"] > 0)
    strong = (coverage >= 1.0) | ((coverage >= NAME_COVERAGE) & (name_hit["weight"] >= 2 * MATCH_WEIGHT))
    ok = (name_hit["weight"] >= MATCH_WEIGHT) & (strong | syms["is_test_fn"])
    reason.loc[ok & eligible] = "name matches " + name_hit.loc[ok & eligible, "words"]

    frames = pd.Series(False, index=syms.index)
    paths = syms["path"].astype(str)
    distinct = pd.Series(pd.unique(paths), dtype=object)  # a trace tail is compared with each scoped path once
    for frame_path, func in task_query.trace_frames:
        tail = frame_path.replace("\\", "/").lstrip("./")
        named = set(distinct[distinct.map(tail.endswith)])
        frames |= (paths.str.endswith(tail) | paths.isin(named)) & (syms["name"] == func)
    reason.loc[frames & eligible] = "trace frame"

    hints = {vocabulary.norm(h): h for h in task_query.symbol_hints}
    by_name = pd.Series(vocabulary.norms(syms["name"]), index=syms.index).map(hints)
    by_qual = pd.Series(vocabulary.norms(syms["qualified_name"]), index=syms.index).map(hints)
    hinted = by_qual.astype(object).fillna(by_name.astype(object))
    take = hinted.notna() & eligible
    reason.loc[take] = ("symbol hint '" + hinted[take].astype(str) + "'").to_numpy()
    return reason


def _doc_and_comments(syms: pd.DataFrame, kb_comments: pd.DataFrame) -> pd.Series:
    """Docstring plus attached comments of each symbol, as one text (seed files only, so this stays small)."""
    comments = kb_comments[kb_comments["symbol_id"].isin(syms.index)]
    joined = comments["text"].astype(str).groupby(comments["symbol_id"]).agg(" ".join).astype(object)
    docs = syms["docstring"].astype(object).fillna("").astype(str)
    return docs + " " + joined.reindex(syms.index).fillna("").astype(str)


def _name_terms(syms: pd.DataFrame) -> pd.Series:
    """The sorted distinct name words of each scoped symbol (no 'test'), one row per word, indexed by symbol_id."""
    names = vocabulary.symbol_names(syms)
    codes = vocabulary.symbol_name_codes(syms.reset_index(), names)["name_code"].to_numpy()
    return vocabulary.terms_of(codes, syms.index.to_numpy(), vocabulary.symbol_name_terms(names))


def _term_hits(words: pd.Series, index: pd.Index, weights: pd.Series) -> pd.DataFrame:
    """Per label of `index` (words: its distinct words, one row each): matched task-term weight, matched/total
    words, and the matched words quoted."""
    long = words[words.astype(bool)]
    hit = long[long.isin(weights.index)]
    out = pd.DataFrame(index=index)
    out["total"] = long.groupby(level=0).size().reindex(index).fillna(0)
    out["matched"] = hit.groupby(level=0).size().reindex(index).fillna(0)
    out["weight"] = hit.map(weights).astype(float).groupby(level=0).sum().reindex(index).fillna(0.0)
    out["words"] = _joined("'" + hit.astype(object) + "'").reindex(index).fillna("")
    return out


def _joined(values: pd.Series) -> pd.Series:
    """', '.join of the values under each index label, in their order (one string per label, labels sorted)."""
    values = values.sort_index(kind="stable")
    labels, texts = values.index.to_numpy(), values.to_numpy()
    if not len(texts):
        return pd.Series([], dtype=object)
    starts = np.flatnonzero(np.r_[True, labels[1:] != labels[:-1]])
    ends = np.r_[starts[1:], len(texts)]
    return pd.Series([", ".join(texts[a:b]) for a, b in zip(starts, ends)], index=labels[starts], dtype=object)


def _promoted(syms: pd.DataFrame, task_type: str) -> pd.Series:
    """Seed-file (non-test) symbols of the kind the task type calls for (seed step 4.2)."""
    kinds = PROMOTED_KINDS.get(task_type, ("function", "method"))
    return syms["seed"] & ~syms["is_test"] & syms["kind"].isin(kinds)


def _holders_of(syms: pd.DataFrame, primary: pd.Series) -> pd.Series:
    """Enclosing symbols (at any depth) of primary symbols -> 'contains primary X' (shown by signature only)."""
    found = pd.Series(dtype="object")
    child = syms.loc[primary, "qualified_name"]
    ancestor = syms.loc[primary, "parent_id"]
    for _ in range(MAX_TYPE_HOPS):
        known = ancestor.notna() & ancestor.isin(syms.index)
        if not known.any():
            break
        step = pd.Series(("contains primary " + child[known]).to_numpy(), index=ancestor[known].astype("int64").to_numpy())
        found = pd.concat([found, step])
        ancestor = ancestor[known].astype("int64").map(syms["parent_id"])
        child = child[known]
    return found[~found.index.duplicated()]


def _symbol_context(symbol_id: int, s: dict, lines: list[str], language: str, count_tokens) -> SymbolContext:
    """A tiered symbol at its depth: primary (and small types) with source lines, others by signature."""
    start, end = int(s["start_line"]), int(s["end_line"])
    small_type = s["tier"] == "type_context" and (s.get("body_tokens") or 0) <= TYPE_BODY_MAX_TOKENS
    body = "\n".join(lines[start - 1 : end]) if (s["tier"] == "primary" or small_type) and lines else None
    doc = s["docstring"] if isinstance(s["docstring"], str) else None
    sc = SymbolContext(
        symbol_id=symbol_id,
        file_id=int(s["file_id"]),
        name=str(s["name"]),
        qualified_name=str(s["qualified_name"]),
        kind=str(s["kind"]),
        relevance=str(s["tier"]),
        signature=str(s["signature"] or ""),
        body=body or None,
        docstring=doc,
        start_line=start,
        end_line=end,
        tokens=0,
        reason=str(s["reason"]),
    )
    return _with_tokens(sc, language, count_tokens)


def _with_tokens(sc: SymbolContext, language: str, count_tokens) -> SymbolContext:
    """The symbol with `tokens` set to what its rendering costs."""
    return replace(sc, tokens=int(count_tokens(_symbol_text(sc, language))))
