"""Precision, retrieval's second stage: which symbols of the scoped files enter the package, and at what depth.

primary       the best of the symbol ranking (`symbol_signals`: one row per definition of CANDIDATE_KINDS in the
              scope's source files, one column per signal), PRIMARY_CANDIDATES of them; the budget keeps the best that fit.
              With `--budget auto` only those near the best score (AUTO_SHARE), and nothing else but their holders.
              In test files: tests whose name matches a symbol hint / trace frame / distinctive task keywords
supporting    used by a primary (kb_symbol_edges: calls, imports, same-file calls), or the class around a primary
type_context  class / interface / enum / type alias a primary or supporting symbol names as annotation or base,
              followed transitively
outline       any other definition of a top-ranked source file, by signature: the file's map, so the reader sees
              what else is there; the budget fills it last from what the tiers above leave unused
excluded      everything else; and every symbol of a test file that has no test matching the task
Only scoped symbols are classified; bodies are sliced from kb_contents for the files that contribute something.
Each tier is a node (symbol_id -> reason): ranked_primaries -> symbol_matches -> primary_holders, nested_matches
-> primary_symbols -> live_test_files -> supporting_symbols -> type_context_symbols -> outline_symbols; symbol_tiers
joins them into one frame.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

import numpy as np
import pandas as pd
from hamilton.function_modifiers import config

from cra.dataflows.distinct import distinct
from cra.dataflows.index.mapped import values_at
from cra.dataflows.lexicon_layers import Lexicon
from cra.dataflows.retrieval import vocabulary
from cra.dataflows.retrieval.markdown import shown_text
from cra.dataflows.retrieval.models import TIER_ORDER, FileContext, ScopedSymbols, SymbolContext, TaskQuery
from cra.dataflows.retrieval.symbol_signals import SYMBOL_SIGNALS
from cra.dataflows.retrieval.symbol_table import SymbolTable, rows_with

TYPE_KINDS = ("class", "interface", "enum", "type_alias")
TYPE_EDGE_KINDS = ("annotation", "base")
COMMON_TERM_WEIGHT = 0.5  # a term many symbols share counts half: two of them, or one distinctive term, make a match
COMMON_DF_SHARE = 0.01  # a term in more than 1% of the symbols (and more than COMMON_DF_MIN) is common
COMMON_DF_MIN = 5
MATCH_WEIGHT = 1.0  # matched-term weight a name / docstring needs
NAME_COVERAGE = 0.5  # share of a name's words the task must mention (all of them unless two strong words match)
TYPE_BODY_MAX_TOKENS = 160  # small type definitions (dataclasses, enums) are shown whole, bigger ones by signature
MAX_TYPE_HOPS = 8
_CONTEXT_COLUMNS = frozenset(
    (
        "symbol_id",
        "file_id",
        "name",
        "qualified_name",
        "kind",
        "start_line",
        "end_line",
        "signature",
        "docstring",
        "body_tokens",
    )
)
OUTLINE_RANK = 5  # the top source files are outlined: their remaining definitions by signature
OUTLINE_KINDS = ("class", "interface", "enum", "type_alias", "function", "method")
PRIMARY_CANDIDATES = 150  # ranked symbols offered a body; the budget cuts the lowest-scored first ...
PRIMARY_SHARE = 0.25  # ... among those scoring at least this share of the best (the rest are context, not the task)
FLOOR_RANK = 2  # the best-ranked symbols are the package's floor: cut last
SEED_PRIMARY_SIGNALS = ("name", "mention", "trace")  # seed gate 4: a symbol whose name the task matches (or a frame)
AUTO_SHARE = 0.9  # --budget auto: bodies of the symbols scoring at least this share of the best ...
AUTO_MAX = 5  # ... at most this many
REASON_SIGNALS = 3  # a ranked primary's reason names its strongest signals
_ASSERTION = re.compile(
    r"^\s*(assert\b|self\.assert\w*\(|(?:await\s+)?expect\(|assert_eq!|assert_ne!|assert!|debug_assert|t\.(?:Errorf|Fatalf|Error|Fatal)\(|"
    r"require\.\w+\(|(?:Assert|Assertions)\.\w+\(|assert\w+\(|pytest\.raises\()"
)


def precision_terms(task_query: TaskQuery, symbol_lexicon: Lexicon) -> pd.Series:
    """Task keyword/hint term -> match weight: 1 when distinctive in the KB, 0.5 when many symbols share it."""
    words = sorted(
        {w for text in (*task_query.keywords, *task_query.symbol_hints) for w in vocabulary.name_words(text)}
    )
    n_docs = len(symbol_lexicon.doc_ids)
    common_df = max(COMMON_DF_MIN, COMMON_DF_SHARE * n_docs)
    df = np.array([symbol_lexicon.document_frequency(w) for w in words], dtype=float)
    return pd.Series(np.where(df > common_df, COMMON_TERM_WEIGHT, 1.0), index=pd.Index(words, dtype="object"))


def scoped_symbols(scope: pd.DataFrame, kb_symbol_table: SymbolTable) -> ScopedSymbols:
    """The symbols of the scoped files as positions into the KB's symbol table, with their file's scope columns and
    the symbol edges between them: what every tier is classified over."""
    table = kb_symbol_table
    rows = table.rows_of_files(scope.index.to_numpy())
    local = np.full(len(table.symbol_id), -1, dtype=np.int64)
    local[rows] = np.arange(len(rows))
    at = scope.index.get_indexer(table.file_id[rows])
    flag = lambda column: scope[column].fillna(False).astype(bool).to_numpy()[at]  # noqa: E731
    leaving = table.edges_from(rows)  # the scoped symbols' edges, in KB edge order ...
    ends = local[table.edge_dst[leaving]]
    inside = leaving[ends >= 0]  # ... of those, the ones with both ends scoped
    return ScopedSymbols(
        rows,
        local,
        at,
        table.symbol_id[rows],
        table.file_id[rows],
        scope["rank"].to_numpy()[at],
        flag("seed"),
        flag("is_test"),
        table.kind[rows],
        table.name[rows],
        table.qualified_name[rows],
        local[table.edge_src[inside]],
        ends[ends >= 0],
        np.isin(table.edge_kind[inside], TYPE_EDGE_KINDS),
        inside,
    )


@config.when(seed_primaries=True)
def seed_primary_pool__on(symbol_ranking: pd.DataFrame, scope: pd.DataFrame) -> pd.DataFrame:
    """Seed 001's gate 4 (`--seed-variants primaries`): the ranked symbols that may be primaries are those of seed
    files or whose name the task's words match or mention; the whole ranking when none is."""
    seed_paths = scope.loc[scope["seed"].astype(bool), "path"]
    matched = symbol_ranking["path"].isin(seed_paths).to_numpy().copy()
    for signal in SEED_PRIMARY_SIGNALS:
        if signal in symbol_ranking:
            matched |= symbol_ranking[signal].to_numpy(dtype=float) > 0
    return symbol_ranking[matched] if matched.any() else symbol_ranking


def ranked_primaries(
    symbol_ranking: pd.DataFrame,
    symbol_weights: dict[str, float],
    budget_mode: str,
    seed_primary_pool: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """The top of the symbol ranking offered a body (symbol_id, rank, score, reason): up to PRIMARY_CANDIDATES
    scoring at least PRIMARY_SHARE of the best, or with `budget_mode` 'auto' at least AUTO_SHARE (at most AUTO_MAX);
    with seed 001's gate 4 on, only from `seed_primary_pool`."""
    pool = symbol_ranking if seed_primary_pool is None else seed_primary_pool
    ranked = pool[pool["score"] > 0]
    share, most = (AUTO_SHARE, AUTO_MAX) if budget_mode == "auto" else (PRIMARY_SHARE, PRIMARY_CANDIDATES)
    if len(ranked):
        ranked = ranked[ranked["score"] >= share * ranked["score"].iloc[0]].head(most)
    return pd.DataFrame(
        {
            "symbol_id": ranked["symbol_id"].to_numpy(),
            "rank": ranked["rank"].to_numpy(),
            "score": ranked["score"].to_numpy(dtype=float),
            "reason": _ranking_reasons(ranked, symbol_weights),
        }
    )


def auto_budget_stop(
    symbol_ranking: pd.DataFrame, ranked_primaries: pd.DataFrame, primary_symbols: pd.Series, budget_mode: str
) -> dict | None:
    """Where and why `--budget auto` stopped adding bodies (None for a fixed budget): how many ranked symbols it
    kept, how many show a body (a class holding a kept method shows its signature), the first left out, the rule."""
    if budget_mode != "auto":
        return None
    scores = symbol_ranking["score"].to_numpy(dtype=float)
    best = float(scores[0]) if len(scores) else 0.0
    kept = len(ranked_primaries)
    nxt = symbol_ranking.iloc[kept] if kept < len(symbol_ranking) else None
    if nxt is None:
        why = "no more ranked symbols"
    elif kept >= AUTO_MAX:
        why = f"at most {AUTO_MAX} bodies"
    else:
        why = f"the next score {float(nxt['score']):.3f} is below {AUTO_SHARE:g} x the best ({best:.3f})"
    return {
        "ranked_kept": kept,
        "bodies": int(len(primary_symbols)),
        "best_score": round(best, 4),
        "share": AUTO_SHARE,
        "max_bodies": AUTO_MAX,
        "next": None if nxt is None else f"{nxt['path']}::{nxt['qualified_name']}",
        "reason": why,
    }


def symbol_matches(
    scoped_symbols: ScopedSymbols,
    kb_symbol_table: SymbolTable,
    task_query: TaskQuery,
    scope: pd.DataFrame,
    precision_terms: pd.Series,
    ranked_primaries: pd.DataFrame,
    budget_mode: str,
) -> pd.Series:
    """symbol_id -> why it is a primary candidate: the ranked primaries of the source files, in test files the
    tests whose name matches the task (name, trace frame, hint), and the unit tests inside source files that the task
    names (trace frame, hint); holders of another one are stepped down next."""
    s, table = scoped_symbols, kb_symbol_table
    reason = np.full(len(s.rows), "", dtype=object)
    if budget_mode != "auto":
        tests = _primary_reasons(s, table, task_query, scope, precision_terms)
        test = s.is_test | table.is_test_code[s.rows]  # unit tests in source files are not ranked: symbol_candidates
        reason[test] = tests[test]
    at = s.local[table.rows.get_indexer(ranked_primaries["symbol_id"].to_numpy())]
    reason[at] = ranked_primaries["reason"].to_numpy(dtype=object)
    return _by_symbol(s, reason != "", reason)


def primary_holders(
    symbol_matches: pd.Series,
    scoped_symbols: ScopedSymbols,
    kb_symbol_table: SymbolTable,
    kb_symbols: pd.DataFrame,
) -> pd.Series:
    """symbol_id -> 'contains primary X': the classes (interfaces, enums, type aliases) whose lines enclose a task
    match, at any depth: a class around primary methods shows its signature, not its whole body. A parent that does
    not enclose its member (a Go struct, a Rust type beside its `impl`) stays a match of its own."""
    s = scoped_symbols
    outer, inner = _enclosing(s, kb_symbol_table, _mask(s, kb_symbol_table, symbol_matches), kb_symbols)
    holds = np.isin(s.kind[outer], TYPE_KINDS)
    outer, inner = outer[holds], inner[holds]
    first = _first_of_each(outer)
    mask, reason = np.zeros(len(s.rows), dtype=bool), np.full(len(s.rows), "", dtype=object)
    mask[outer[first]], reason[outer[first]] = True, "contains primary " + s.qualified_name[inner[first]]
    return _by_symbol(s, mask, reason)


def nested_matches(
    symbol_matches: pd.Series,
    scoped_symbols: ScopedSymbols,
    kb_symbol_table: SymbolTable,
    kb_symbols: pd.DataFrame,
) -> pd.Series:
    """symbol_id -> 'inside primary X': task matches nested in a matching function or method, whose body the
    package shows with theirs inside (a closure never turns its function into a signature)."""
    s = scoped_symbols
    matched = _mask(s, kb_symbol_table, symbol_matches)
    outer, inner = _enclosing(s, kb_symbol_table, matched, kb_symbols)
    inside = matched[outer] & ~np.isin(s.kind[outer], TYPE_KINDS)
    outer, inner = outer[inside], inner[inside]
    first = _first_of_each(inner)
    mask, reason = np.zeros(len(s.rows), dtype=bool), np.full(len(s.rows), "", dtype=object)
    mask[inner[first]], reason[inner[first]] = True, "inside primary " + s.qualified_name[outer[first]]
    return _by_symbol(s, mask, reason)


def primary_symbols(symbol_matches: pd.Series, primary_holders: pd.Series, nested_matches: pd.Series) -> pd.Series:
    """symbol_id -> reason: the symbols the package shows whole, first: task matches that hold no other match and
    sit in no matching function."""
    return symbol_matches[~symbol_matches.index.isin(primary_holders.index.union(nested_matches.index))]


def live_test_files(
    primary_symbols: pd.Series, scoped_symbols: ScopedSymbols, kb_symbol_table: SymbolTable
) -> np.ndarray:
    """file_ids of the scoped test files with a primary (a test matching the task): no other test file contributes."""
    s = scoped_symbols
    return distinct(s.file_id[_mask(s, kb_symbol_table, primary_symbols) & s.is_test])


def supporting_symbols(
    primary_symbols: pd.Series,
    primary_holders: pd.Series,
    live_test_files: np.ndarray,
    scoped_symbols: ScopedSymbols,
    kb_symbol_table: SymbolTable,
    budget_mode: str,
) -> pd.Series:
    """symbol_id -> reason: the holders of primaries, and (unless the budget is 'auto') what a primary uses
    (kb_symbol_edges other than to the types it names), each by signature."""
    s, table = scoped_symbols, kb_symbol_table
    primary, holder = _mask(s, table, primary_symbols), _mask(s, table, primary_holders)
    reason = np.full(len(s.rows), "", dtype=object)
    reason[_positions(s, table, primary_holders)] = primary_holders.to_numpy(dtype=object)
    if budget_mode == "auto":
        return _by_symbol(s, reason != "", reason)
    src, dst = s.edge_src, s.edge_dst
    calls = primary[src] & ~(s.type_edge & np.isin(s.kind, TYPE_KINDS)[dst])
    first = _first_of_each(dst[calls])
    callers, callees = src[calls][first], dst[calls][first]
    take = ~primary[callees] & ~holder[callees] & _allowed(s, live_test_files)[callees]
    reason[callees[take]] = "used by " + s.qualified_name[callers[take]]
    return _by_symbol(s, reason != "", reason)


def type_context_symbols(
    primary_symbols: pd.Series,
    supporting_symbols: pd.Series,
    live_test_files: np.ndarray,
    scoped_symbols: ScopedSymbols,
    kb_symbol_table: SymbolTable,
    budget_mode: str,
) -> pd.Series:
    """symbol_id -> 'type of X': classes, interfaces, enums and type aliases a primary or supporting symbol names as
    annotation or base, followed transitively (up to MAX_TYPE_HOPS); none when the budget is 'auto'."""
    s, table = scoped_symbols, kb_symbol_table
    if budget_mode == "auto":
        return _by_symbol(s, np.zeros(len(s.rows), dtype=bool), np.full(len(s.rows), "", dtype=object))
    frontier = _mask(s, table, primary_symbols) | _mask(s, table, supporting_symbols)
    candidates = _allowed(s, live_test_files) & np.isin(s.kind, TYPE_KINDS)
    reason = np.full(len(s.rows), "", dtype=object)
    src, dst = s.edge_src, s.edge_dst
    for _ in range(MAX_TYPE_HOPS):
        hop = np.flatnonzero(frontier[src] & s.type_edge & (candidates & ~frontier)[dst])
        if not len(hop):
            break
        hop = hop[_first_of_each(dst[hop])]
        frontier[dst[hop]] = True
        reason[dst[hop]] = "type of " + s.qualified_name[src[hop]]
    return _by_symbol(s, reason != "", reason)


def outline_symbols(
    primary_symbols: pd.Series,
    supporting_symbols: pd.Series,
    type_context_symbols: pd.Series,
    scoped_symbols: ScopedSymbols,
    kb_symbol_table: SymbolTable,
    budget_mode: str,
) -> pd.Series:
    """symbol_id -> reason: every other definition of a top-ranked source file (OUTLINE_RANK), by signature: the
    file's map, filled last by the budget (none when the budget is 'auto')."""
    s, table = scoped_symbols, kb_symbol_table
    if budget_mode == "auto":
        return _by_symbol(s, np.zeros(len(s.rows), dtype=bool), np.full(len(s.rows), "", dtype=object))
    tiered = np.zeros(len(s.rows), dtype=bool)
    for chosen in (primary_symbols, supporting_symbols, type_context_symbols):
        tiered |= _mask(s, table, chosen)
    tests = s.is_test | table.is_test_code[s.rows]
    outline = ~tiered & ~tests & (s.rank <= OUTLINE_RANK) & np.isin(s.kind, OUTLINE_KINDS)
    return _by_symbol(s, outline, np.full(len(s.rows), f"outline of a top-{OUTLINE_RANK} file", dtype=object))


def symbol_tiers(
    primary_symbols: pd.Series,
    supporting_symbols: pd.Series,
    type_context_symbols: pd.Series,
    outline_symbols: pd.Series,
    live_test_files: np.ndarray,
    scoped_symbols: ScopedSymbols,
    kb_symbol_table: SymbolTable,
) -> pd.DataFrame:
    """One row per scoped symbol: symbol_id, file_id, tier (primary|supporting|type_context|outline|excluded), reason;
    by file rank, tier, line."""
    s, table = scoped_symbols, kb_symbol_table
    tier = np.full(len(s.rows), "excluded", dtype=object)
    reason = np.full(len(s.rows), "", dtype=object)
    for name, chosen in (
        ("primary", primary_symbols),
        ("supporting", supporting_symbols),
        ("type_context", type_context_symbols),
        ("outline", outline_symbols),
    ):
        at = _positions(s, table, chosen)
        tier[at], reason[at] = name, chosen.to_numpy(dtype=object)
    reason[(tier == "excluded") & ~_allowed(s, live_test_files)] = "test file without a test matching the task"
    tier_rank = np.select([tier == t for t in TIER_ORDER], list(TIER_ORDER.values()))
    order = np.lexsort((table.start_line[s.rows], tier_rank, s.rank))
    return pd.DataFrame(
        {
            "symbol_id": s.symbol_id[order],
            "file_id": s.file_id[order],
            "tier": pd.Series(tier[order], dtype=object),
            "reason": pd.Series(reason[order], dtype=object),
        }
    )


def kb_comment_symbol_ids(kb_comments: pd.DataFrame) -> np.ndarray:
    """Each comment's symbol id, -1 where it has none: file_contexts looks rationale up in it with a table, not a
    hash of a float column (a large repository has a million comments; a per-KB override in a request)."""
    ids = kb_comments["symbol_id"].to_numpy(dtype="float64", na_value=np.nan)
    return np.where(np.isnan(ids), -1, ids).astype(np.int64)


def file_contexts(
    symbol_tiers: pd.DataFrame,
    ranked_primaries: pd.DataFrame,
    scope: pd.DataFrame,
    kb_files: pd.DataFrame,
    kb_symbols: pd.DataFrame,
    kb_comments: pd.DataFrame,
    kb_comment_symbol_ids: np.ndarray,
    kb_contents: pd.DataFrame,
    count_tokens: Callable,
    kb_symbol_table: SymbolTable,
) -> list[FileContext]:
    """Per contributing scoped file, in rank order: its tiered symbols at their depth, test assertions, rationale."""
    chosen = symbol_tiers[symbol_tiers["tier"] != "excluded"]
    rows = kb_symbol_table.rows
    at = rows.get_indexer(chosen["symbol_id"].to_numpy())
    used = [c for c in kb_symbols.columns if c in _CONTEXT_COLUMNS]  # not the decorator lists: slow to convert
    columns = {c: kb_symbols[c].take(at).tolist() for c in used}  # the chosen symbols only: tens to hundreds
    columns |= {"tier": chosen["tier"].tolist(), "reason": chosen["reason"].tolist()}
    ranked = ranked_primaries.set_index("symbol_id").reindex(chosen["symbol_id"].to_numpy())
    primary = (chosen["tier"] == "primary").to_numpy()
    holder = chosen["reason"].astype(str).str.startswith("contains primary").to_numpy()  # its rank: may it widen
    columns |= {
        "rank": np.where(primary | holder, ranked["rank"].to_numpy(dtype=float), np.nan).tolist(),
        "score": np.where(primary | holder, ranked["score"].to_numpy(dtype=float), np.nan).tolist(),
    }
    by_file: dict[int, list[dict]] = {}
    for record in (dict(zip(columns, values)) for values in zip(*columns.values())):
        by_file.setdefault(record["file_id"], []).append(record)
    chosen_files = chosen["file_id"].unique()
    held = np.flatnonzero(np.isin(kb_contents["file_id"].to_numpy(), chosen_files))  # (no frame of texts copied)
    texts = dict(zip(values_at(kb_contents["file_id"], held), values_at(kb_contents["text"], held)))
    at = rows_with(kb_files["file_id"], chosen_files)  # the contributing files' rows
    language = dict(zip(kb_files["file_id"].take(at).tolist(), kb_files["language"].take(at).tolist()))
    explained = chosen.loc[chosen["tier"] != "outline", "symbol_id"].to_numpy()  # outlines carry no rationale
    at = np.flatnonzero(vocabulary.member_mask(kb_comment_symbol_ids + 1, explained.astype(np.int64) + 1))  # none: 0
    rationale_flag = pd.Series(values_at(kb_comments["is_rationale"], at)).fillna(False).astype(bool).to_numpy()
    at = at[rationale_flag] if len(at) else at  # only the rationale comments' texts are read (a tenth of them)
    why = pd.DataFrame({c: values_at(kb_comments[c], at) for c in ("file_id", "line", "text")})
    why = why.sort_values(["file_id", "line"]) if len(why) else why
    rationale: dict[int, dict[str, None]] = {}
    for file_id, text in zip(why["file_id"].tolist(), why["text"].tolist()):
        rationale.setdefault(file_id, {})[text] = None  # each text once, first position kept
    ranked = scope.loc[scope.index.isin(chosen_files)].sort_values("rank")
    out = []
    ranked_columns = (ranked[c].tolist() for c in ("path", "rank", "total_score", "added_by", "is_test", "seed_reason"))
    for file_id, path, rank, total_score, added_by, is_test, seed_reason in zip(ranked.index.tolist(), *ranked_columns):
        lang = str(language.get(file_id, "text") or "text")
        records = by_file.get(file_id, [])
        with_body = any(s["tier"] in ("primary", "type_context") for s in records)  # others show signatures only
        lines = texts.get(file_id, "").splitlines() if with_body else []
        symbols = tuple(_symbol_context(int(s["symbol_id"]), s, lines, lang, count_tokens) for s in records)
        is_test = bool(is_test)
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
                path=str(path),
                language=lang,
                relevance_rank=int(rank),
                score=float(total_score),
                added_by=str(added_by),
                symbols=symbols,
                rationale_comments=tuple(rationale.get(file_id, ())),
                test_assertions=assertions if is_test else None,
                seed_reason=str(seed_reason),
            )
        )
    return out


def _by_symbol(s: ScopedSymbols, mask: np.ndarray, values: np.ndarray) -> pd.Series:
    """The values of the masked scoped symbols, indexed by symbol_id, in KB order."""
    return pd.Series(values[mask], index=pd.Index(s.symbol_id[mask], name="symbol_id"), dtype=object)


def _positions(s: ScopedSymbols, table: SymbolTable, symbols: pd.Series) -> np.ndarray:
    """Positions among the scoped symbols of a Series indexed by symbol_id."""
    return s.local[table.rows.get_indexer(symbols.index)]


def _mask(s: ScopedSymbols, table: SymbolTable, symbols: pd.Series) -> np.ndarray:
    """Per scoped symbol: whether it is in a Series indexed by symbol_id."""
    mask = np.zeros(len(s.rows), dtype=bool)
    mask[_positions(s, table, symbols)] = True
    return mask


def _allowed(s: ScopedSymbols, live_test_files: np.ndarray) -> np.ndarray:
    """Per scoped symbol: whether it may enter a tier (source files; test files only with a test matching the task)."""
    return ~s.is_test | np.isin(s.file_id, live_test_files)


def _ranking_reasons(ranked: pd.DataFrame, weights: dict[str, float]) -> list[str]:
    """'ranked #2 (score 0.61): mention 1.00, name 0.80, file 0.95' for each ranked symbol: its strongest
    weighted signals."""
    names = [n for n in SYMBOL_SIGNALS if weights.get(n, 0.0) > 0]
    if not len(ranked):
        return []
    values = ranked[names].to_numpy(dtype=float)
    weighted = values * np.array([weights[n] for n in names])
    out = []
    for rank, score, row, contribution in zip(ranked["rank"].tolist(), ranked["score"].tolist(), values, weighted):
        top = [i for i in np.argsort(-contribution, kind="stable")[:REASON_SIGNALS] if contribution[i] > 0]
        out.append(f"ranked #{rank} (score {score:.2f}): " + ", ".join(f"{names[i]} {row[i]:.2f}" for i in top))
    return out


def _primary_reasons(
    s: ScopedSymbols, table: SymbolTable, task_query: TaskQuery, scope: pd.DataFrame, weights: pd.Series
) -> np.ndarray:
    """Why each scoped symbol matches the task by name ('' when it does not): name keywords, trace frame, hint
    (a later reason wins); what makes a test primary: in a test file any of them, in a source file (a unit test kept
    beside its code) a trace frame or a hint, not shared words."""
    reason = np.full(len(s.rows), "", dtype=object)
    is_test_fn = table.is_test_fn[s.rows]
    eligible = ~s.is_test | is_test_fn  # in test files only tests can be primary
    weight_of = {str(w): float(v) for w, v in weights.items()}

    term_weight = _term_weights(table, weight_of)
    code = table.name_code[s.rows]
    named = code >= 0
    code = np.where(named, code, 0)
    total = np.where(named, table.name_term_total[code], 0)
    matched, weight = table.name_matches(code, term_weight)  # the scoped symbols' names only
    matched, weight = np.where(named, matched, 0), np.where(named, weight, 0.0)
    coverage = np.divide(matched, total, out=np.full(len(code), np.nan), where=total > 0)
    strong = (coverage >= 1.0) | ((coverage >= NAME_COVERAGE) & (weight >= 2 * MATCH_WEIGHT))
    # a unit test inside a source file (Rust) is shown when the task names it or a trace goes through it, not for
    # sharing its words: the tests of a module all repeat the module's vocabulary
    take = (weight >= MATCH_WEIGHT) & (strong | is_test_fn) & eligible & ~table.is_test_code[s.rows]
    words = _matched_words(table, distinct(code[take]), term_weight)
    reason[take] = ["name matches " + words[c] for c in code[take]]

    for frame_path, func in task_query.trace_frames:
        tail = frame_path.replace("\\", "/").lstrip("./")
        in_file = scope["path"].astype(str).str.endswith(tail).to_numpy(dtype=bool)[s.at]
        reason[in_file & (s.name == func) & eligible] = "trace frame"

    hinted = np.full(len(s.rows), None, dtype=object)
    by_name = np.full(len(s.rows), None, dtype=object)
    qualified_norm, name_norm = table.qualified_norm[s.rows], table.name_norm[s.rows]
    qualified = pd.Series(qualified_norm, dtype=object)
    for key, hint in {vocabulary.norm(h): h for h in task_query.symbol_hints}.items():
        # `User.save` names `App.Models.User.save` too: namespaces and outer classes qualify beyond the hint
        tail = qualified.str.endswith("." + key, na=False).to_numpy(dtype=bool) if "." in key else False
        hinted[(qualified_norm == key) | tail] = hint
        by_name[name_norm == key] = hint
    hinted = np.where(pd.isna(hinted), by_name, hinted)
    take = ~pd.isna(hinted) & eligible
    reason[take] = ["symbol hint '" + h + "'" for h in hinted[take]]
    return reason


def _term_weights(table: SymbolTable, weight_of: dict[str, float]) -> np.ndarray:
    """Per term of the KB's name vocabulary: its weight as a task term (0: not one)."""
    vocab = table.term_vocabulary
    term_weight = np.zeros(len(vocab))
    at = np.searchsorted(vocab, list(weight_of)) if len(vocab) else np.zeros(len(weight_of), dtype=np.int64)
    for position, (word, value) in zip(at, weight_of.items()):
        if position < len(vocab) and vocab[position] == word:
            term_weight[position] = value
    return term_weight


def _matched_words(table: SymbolTable, codes: np.ndarray, term_weight: np.ndarray) -> dict[int, str]:
    """Name code -> its matched terms quoted and joined ("'valid', 'login'"), in the name's term order."""
    terms, of = table.name_term_rows(codes)  # the matched names only
    ids = table.name_term_id[terms]
    hit = term_weight[ids] > 0
    ids, of = ids[hit], of[hit]
    bounds = np.searchsorted(of, np.arange(len(codes) + 1))
    words = table.term_vocabulary[ids]
    return {
        code: ", ".join(f"'{t}'" for t in words[bounds[i] : bounds[i + 1]]) for i, code in enumerate(codes.tolist())
    }


def _first_of_each(values: np.ndarray) -> np.ndarray:
    """Positions of the first occurrence of each distinct value, in order (drop_duplicates, keep='first')."""
    _, first = np.unique(values, return_index=True)
    return np.sort(first)


def _enclosing(
    s: ScopedSymbols, table: SymbolTable, members: np.ndarray, kb_symbols: pd.DataFrame
) -> tuple[np.ndarray, np.ndarray]:
    """(ancestor, member) positions among the scoped symbols: every scoped ancestor, at any depth, whose lines
    enclose a member's."""
    end_line = kb_symbols["end_line"].to_numpy()
    member = np.flatnonzero(members)
    first_line, last_line = table.start_line[s.rows[member]], end_line[s.rows[member]]
    ancestor = table.parent[s.rows[member]]  # KB rows, -1: none
    outer, inner = [np.array([], dtype=np.int64)], [np.array([], dtype=np.int64)]
    for _ in range(MAX_TYPE_HOPS):
        known = ancestor >= 0
        if not known.any():
            break
        row = np.maximum(ancestor, 0)
        position = np.where(known, s.local[row], -1)
        encloses = (position >= 0) & (table.start_line[row] <= first_line) & (end_line[row] >= last_line)
        outer.append(position[encloses])
        inner.append(member[encloses])
        ancestor, member = table.parent[row[known]], member[known]
        first_line, last_line = first_line[known], last_line[known]
    return np.concatenate(outer), np.concatenate(inner)


def _symbol_context(symbol_id: int, s: dict, lines: list[str], language: str, count_tokens) -> SymbolContext:
    """A tiered symbol at its depth: primary (and small types) with source lines, others by signature."""
    start, end, tier = int(s["start_line"]), int(s["end_line"]), s["tier"]
    small_type = tier == "type_context" and (s.get("body_tokens") or 0) <= TYPE_BODY_MAX_TOKENS
    holder = tier == "supporting" and str(s["reason"]).startswith("contains primary")
    source = ("\n".join(lines[start - 1 : end]) or None) if tier == "primary" or small_type or holder else None
    body = source if tier == "primary" or small_type else None
    doc = s["docstring"] if isinstance(s["docstring"], str) else None
    signature = str(s["signature"] or "")
    rank, score = s["rank"], s["score"]
    return SymbolContext(
        symbol_id=symbol_id,
        file_id=int(s["file_id"]),
        name=str(s["name"]),
        qualified_name=str(s["qualified_name"]),
        kind=str(s["kind"]),
        relevance=str(tier),
        signature=signature,
        body=body,
        docstring=doc,
        start_line=start,
        end_line=end,
        tokens=int(count_tokens(shown_text(body, doc, signature, language))),  # what its rendering costs
        reason=str(s["reason"]),
        rank=None if math.isnan(rank) else int(rank),
        score=None if math.isnan(score) else float(score),
        whole_body=source if holder else None,
    )
