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
from dataflows.retrieval.models import FileContext, SymbolContext, TaskQuery
from dataflows.retrieval.render import _symbol_text
from dataflows.text import STOP_WORDS, split_identifier, stem, terms

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
_ASSERTION = re.compile(
    r"^\s*(assert\b|self\.assert\w*\(|(?:await\s+)?expect\(|assert_eq!|assert_ne!|assert!|debug_assert|t\.(?:Errorf|Fatalf|Error|Fatal)\(|"
    r"require\.\w+\(|(?:Assert|Assertions)\.\w+\(|assert\w+\(|pytest\.raises\()"
)
_TIER_RANK = {"primary": 0, "supporting": 1, "type_context": 2, "excluded": 3}


def precision_terms(task_query: TaskQuery, symbol_lexicon: Bm25Index) -> pd.Series:
    """Task keyword/hint term -> match weight: 1 when distinctive in the KB, 0.5 when many symbols share it."""
    words = sorted({w for text in (*task_query.keywords, *task_query.symbol_hints) for w in _name_words(text)})
    n_docs = len(symbol_lexicon.doc_ids)
    common_df = max(COMMON_DF_MIN, COMMON_DF_SHARE * n_docs)
    df = np.array([symbol_lexicon.document_frequency(w) for w in words], dtype=float)
    return pd.Series(np.where(df > common_df, COMMON_TERM_WEIGHT, 1.0), index=pd.Index(words, dtype="object"))


def symbol_tiers(
    scope: pd.DataFrame,
    task_query: TaskQuery,
    kb_symbols: pd.DataFrame,
    kb_comments: pd.DataFrame,
    kb_symbol_edges: pd.DataFrame,
    precision_terms: pd.Series,
) -> pd.DataFrame:
    """One row per scoped symbol: symbol_id, file_id, tier (primary|supporting|type_context|excluded), reason."""
    syms = _scoped_symbols(scope, kb_symbols)
    reason = pd.Series("", index=syms.index, dtype="object")
    tier = pd.Series("excluded", index=syms.index, dtype="object")

    primary = _primary_reasons(syms, task_query, kb_comments, precision_terms)
    if not (primary.ne("") & syms["seed"] & ~syms["is_test"]).any():
        promoted = _promoted(syms, task_query.task_type) & primary.eq("")
        primary = primary.mask(promoted, f"promoted: {task_query.task_type} kind in seed file")
    tier[primary.ne("")] = "primary"
    reason[primary.ne("")] = primary
    holders = _holders_of(syms, primary.ne(""))  # a class around primary methods: its signature, not its body
    tier[holders.index] = "supporting"
    reason[holders.index] = holders.to_numpy()

    live_tests = set(syms.loc[tier.eq("primary") & syms["is_test"], "file_id"])
    allowed = ~syms["is_test"] | syms["file_id"].isin(live_tests)
    names = syms["qualified_name"]

    edges = kb_symbol_edges.drop_duplicates(["src_symbol_id", "dst_symbol_id", "kind"])
    out = edges[edges["src_symbol_id"].isin(syms.index[tier.eq("primary")]) & edges["dst_symbol_id"].isin(syms.index)]
    is_type_edge = out["kind"].isin(TYPE_EDGE_KINDS) & out["dst_symbol_id"].map(syms["kind"]).isin(TYPE_KINDS)
    calls = out[~is_type_edge].drop_duplicates("dst_symbol_id")
    supporting = pd.Series(
        ("used by " + calls["src_symbol_id"].map(names).astype(str)).to_numpy(), index=calls["dst_symbol_id"].to_numpy()
    ).reindex(syms.index)
    take = supporting.notna() & tier.eq("excluded") & allowed
    tier[take] = "supporting"
    reason[take] = supporting[take]

    for _ in range(MAX_TYPE_HOPS):
        frontier = syms.index[tier.isin(["primary", "supporting", "type_context"])]
        hop = edges[
            edges["src_symbol_id"].isin(frontier)
            & edges["kind"].isin(TYPE_EDGE_KINDS)
            & edges["dst_symbol_id"].isin(syms.index[tier.eq("excluded") & allowed & syms["kind"].isin(TYPE_KINDS)])
        ].drop_duplicates("dst_symbol_id")
        if hop.empty:
            break
        tier[hop["dst_symbol_id"]] = "type_context"
        reason[hop["dst_symbol_id"]] = ("type of " + hop["src_symbol_id"].map(names).astype(str)).to_numpy()

    reason[tier.eq("excluded") & syms["is_test"] & ~allowed] = "test file without a test matching the task"
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
    syms = kb_symbols.set_index("symbol_id").loc[chosen["symbol_id"]]
    syms = syms.assign(tier=chosen["tier"].to_numpy(), reason=chosen["reason"].to_numpy())
    texts = kb_contents[kb_contents["file_id"].isin(chosen["file_id"])].drop_duplicates("file_id")
    texts = dict(zip(texts["file_id"], texts["text"]))
    language = kb_files.set_index("file_id")["language"]
    why = kb_comments[kb_comments["is_rationale"].fillna(False).astype(bool) & kb_comments["symbol_id"].isin(syms.index)]
    why = why.sort_values(["file_id", "line"]).groupby("file_id")["text"].agg(lambda t: tuple(dict.fromkeys(t)))
    ranked = scope.loc[scope.index.isin(chosen["file_id"])].sort_values("rank")
    out = []
    for file_id, row in ranked.iterrows():
        lang = str(language.get(file_id, "text") or "text")
        lines = texts.get(file_id, "").splitlines()
        file_syms = syms[syms["file_id"] == file_id]
        symbols = tuple(_symbol_context(int(sid), s, lines, lang, count_tokens) for sid, s in file_syms.iterrows())
        is_test = bool(row["is_test"])
        assertions = tuple(
            f"{s.name}: {line.strip()}"
            for s in symbols
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


def _name_words(text: str) -> list[str]:
    """Stemmed, stop-word-free words of an identifier or phrase: 'validate_login' -> ['valid', 'login']."""
    return [
        stem(w)
        for ident in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text)
        for w in split_identifier(ident)
        if len(w) >= 2 and w not in STOP_WORDS and not w.isdigit()
    ]


def _norm(name: str) -> str:
    """Identifier without case and separators, so 'RuleL031' meets 'Rule_L031'."""
    return re.sub(r"[^a-z0-9.]", "", name.lower())


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
    syms: pd.DataFrame, task_query: TaskQuery, kb_comments: pd.DataFrame, weights: pd.Series
) -> pd.Series:
    """Why each scoped symbol is primary ('' when it is not): hint, trace frame, name keywords, seed docstring."""
    reason = pd.Series("", index=syms.index, dtype="object")
    eligible = ~syms["is_test"] | syms["is_test_fn"]  # in test files only tests can be primary

    doc_hit = _term_hits(_doc_and_comments(syms[syms["seed"] & ~syms["is_test"]], kb_comments), weights, False)
    ok = doc_hit["weight"] >= MATCH_WEIGHT
    reason[doc_hit.index[ok.to_numpy()]] = "docstring/comments mention " + doc_hit.loc[ok, "words"]

    name_hit = _term_hits(syms["name"], weights, True).reindex(syms.index)
    coverage = name_hit["matched"] / name_hit["total"].where(name_hit["total"] > 0)
    strong = (coverage >= 1.0) | ((coverage >= NAME_COVERAGE) & (name_hit["weight"] >= 2 * MATCH_WEIGHT))
    ok = (name_hit["weight"] >= MATCH_WEIGHT) & (strong | syms["is_test_fn"])
    reason[ok & eligible] = "name matches " + name_hit.loc[ok & eligible, "words"]

    frames = pd.Series(False, index=syms.index)
    paths = syms["path"].astype(str)
    for frame_path, func in task_query.trace_frames:
        tail = frame_path.replace("\\", "/").lstrip("./")
        frames |= (paths.str.endswith(tail) | pd.Series([tail.endswith(p) for p in paths], index=syms.index)) & (
            syms["name"] == func
        )
    reason[frames & eligible] = "trace frame"

    hints = {_norm(h): h for h in task_query.symbol_hints}
    by_name = syms["name"].map(_norm).map(hints)
    by_qual = syms["qualified_name"].map(_norm).map(hints)
    hinted = by_qual.astype(object).fillna(by_name.astype(object))
    take = hinted.notna() & eligible
    reason[take] = ("symbol hint '" + hinted[take].astype(str) + "'").to_numpy()
    return reason


def _doc_and_comments(syms: pd.DataFrame, kb_comments: pd.DataFrame) -> pd.Series:
    """Docstring plus attached comments of each symbol, as one text (seed files only, so this stays small)."""
    comments = kb_comments[kb_comments["symbol_id"].isin(syms.index)]
    joined = comments["text"].astype(str).groupby(comments["symbol_id"]).agg(" ".join).astype(object)
    docs = syms["docstring"].astype(object).fillna("").astype(str)
    return docs + " " + joined.reindex(syms.index).fillna("").astype(str)


def _term_hits(texts: pd.Series, weights: pd.Series, names: bool) -> pd.DataFrame:
    """Per text: matched task-term weight, matched/total distinct words, and the matched words quoted."""
    tokenize = _name_words if names else terms
    words = texts.astype(object).map(lambda t: sorted(set(tokenize(t or "")) - {"test"}))
    long = words.explode().dropna()
    long = long[long.astype(bool)]
    hit = long[long.isin(weights.index)]
    out = pd.DataFrame(index=texts.index)
    out["total"] = long.groupby(level=0).size().reindex(texts.index).fillna(0)
    out["matched"] = hit.groupby(level=0).size().reindex(texts.index).fillna(0)
    out["weight"] = hit.map(weights).astype(float).groupby(level=0).sum().reindex(texts.index).fillna(0.0)
    quoted = hit.map(lambda w: f"'{w}'").groupby(level=0).agg(", ".join)
    out["words"] = quoted.reindex(texts.index).fillna("")
    return out


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


def _symbol_context(symbol_id: int, s: pd.Series, lines: list[str], language: str, count_tokens) -> SymbolContext:
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
