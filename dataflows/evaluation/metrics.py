"""Retrieval quality metrics: per case from a ranking and a package, then aggregated.

Conventions: file_precision@k divides by the files actually in the top k (fewer than k when the ranking
is shorter); metrics of a case with no expected files are NaN and left out of means. Expected symbols are
`path::Qualified.name` (`path::<module>` = found when the file is in the package) or, in seed-format
cases, a bare name matched against any package symbol's name or qualified name.

Function metrics score the symbol ranking and the package against the gold *functions*: the expected
symbols other than `path::<module>` (a case with none gets NaN). A gold function is carried by an enclosing symbol
(its class) whose body is in: in a ranking it counts at the enclosing symbol's rank only when it is not ranked
itself. Budget metrics are suffixed with the budget they were measured at (`gold_body@8192`, `gold_body@auto`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from cra.dataflows.evaluation.cases import MODULE_SYMBOL
from cra.dataflows.retrieval.models import ContextPackage
from cra.dataflows.retrieval.symbol_signals import CANDIDATE_KINDS

KS = (1, 3, 5, 10)
RANKING_METRICS = (
    *(f"file_recall@{k}" for k in KS),
    *(f"file_precision@{k}" for k in KS),
    *(f"file_acc@{k}" for k in KS),
    "mrr",
)
PACKAGE_METRICS = (
    "package_file_recall",
    "package_file_precision",
    "symbol_recall",
    "symbol_precision",
    "token_efficiency",
    "budget_utilization",
)
FUNCTION_KS = (1, 5, 10)
FUNCTION_METRICS = (
    *(f"function_hit@{k}" for k in FUNCTION_KS),
    *(f"function_acc@{k}" for k in FUNCTION_KS),
    "function_mrr",
)
BUDGET_METRICS = (
    "gold_body",
    "gold_body_any",
    "gold_named",
    "token_efficiency",
    "package_tokens",
    "package_file_recall",
    "package_file_precision",
)
# seed 001's Phase 2 gate: "file-level recall > 0.8, precision > 0.5, token efficiency > 0.6" (of the package)
SEED_GATES = (("package_file_recall", 0.8), ("package_file_precision", 0.5), ("token_efficiency", 0.6))
BASELINE_PREFIX = "bm25_"
BASELINE_BUDGET_METRICS = (f"{BASELINE_PREFIX}gold_body", f"{BASELINE_PREFIX}package_tokens")
SUMMARY_METRICS = (
    *RANKING_METRICS,
    *PACKAGE_METRICS,
    *(BASELINE_PREFIX + m for m in RANKING_METRICS),
    *FUNCTION_METRICS,
    *(BASELINE_PREFIX + m for m in FUNCTION_METRICS),
)
BM25_SYMBOL_KINDS = CANDIDATE_KINDS  # the baseline ranks the definitions the pipeline ranks


def ranking_metrics(ranked_paths: list[str], expected_files: list[str], prefix: str = "") -> dict[str, float]:
    """Recall/precision/accuracy at k = 1, 3, 5, 10 and MRR of a ranked list of paths against the gold files."""
    expected = set(expected_files)
    if not expected:
        return dict.fromkeys((prefix + m for m in RANKING_METRICS), float("nan"))
    ranks = 1 + np.flatnonzero(np.array([p in expected for p in ranked_paths], dtype=bool))
    return rank_metrics(ranks, len(expected), len(ranked_paths), prefix)


def rank_metrics(ranks: np.ndarray, n_expected: int, n_ranked: int | None = None, prefix: str = "") -> dict[str, float]:
    """The ranking metrics from the 1-based ranks at which expected files appear (n_ranked: length of the ranking,
    when shorter than k it bounds precision@k; default: long enough)."""
    ranks = np.asarray(ranks)
    out: dict[str, float] = {}
    for k in KS:
        found = int((ranks <= k).sum())
        shown = k if n_ranked is None else min(k, n_ranked)
        out[f"{prefix}file_recall@{k}"] = found / n_expected
        out[f"{prefix}file_precision@{k}"] = found / shown if shown else 0.0
        out[f"{prefix}file_acc@{k}"] = float(found == n_expected)
    out[f"{prefix}mrr"] = 1.0 / ranks.min() if len(ranks) else 0.0
    return out


def package_symbols(package: ContextPackage) -> pd.DataFrame:
    """One row per symbol in a package: path, key `path::qualified_name`, name, tokens, whether its body is in, and
    `inside` (the qualified name of the class shown whole that carries it as a member, else None). A member's
    tokens are its own: its count when its body was shown alone, else its share of its holder's lines."""
    rows = []
    for f in package.files:
        for s in f.symbols:
            rows.append(
                (f.path, f"{f.path}::{s.qualified_name}", s.name, s.qualified_name, s.tokens, s.body is not None, None)
            )
            held = s.body is not None
            lines = max(s.end_line - s.start_line + 1, 1)
            for m in s.members:
                own = m.tokens if m.body is not None else s.tokens * (m.end_line - m.start_line + 1) / lines
                rows.append(
                    (f.path, f"{f.path}::{m.qualified_name}", m.name, m.qualified_name, own, held, s.qualified_name)
                )
    return pd.DataFrame(rows, columns=["path", "key", "name", "qualified_name", "tokens", "has_body", "inside"])


def _gold_rows(symbols: pd.DataFrame, gold: str) -> tuple[pd.Series, pd.Series]:
    """Rows of a symbol frame (path, qualified_name, optional name) that are one expected symbol, and rows that
    enclose it (same file, their qualified name a dotted prefix of its); a bare name is matched by name anywhere."""
    qualified = symbols["qualified_name"].astype(str)
    if "::" not in gold:  # a symbol ranking's `name` column is a signal (a number), not the name: use the last part
        last = qualified.str.rsplit(".", n=1).str[-1]
        named = symbols["name"].astype(str) == gold if "name" in symbols and symbols["name"].dtype == object else False
        return (last == gold) | (qualified == gold) | named, pd.Series(False, index=symbols.index)
    path, name = gold.split("::", 1)
    in_file = symbols["path"] == path
    enclosing = pd.Series(False, index=symbols.index)
    enclosing[in_file] = qualified[in_file].map(lambda q: name.startswith(q + "."))
    return in_file & (qualified == name), enclosing


def _body_in(symbols: pd.DataFrame, gold: str) -> bool:
    """Whether a gold symbol's source is in: its own body, or the body of a symbol enclosing it."""
    own, enclosing = _gold_rows(symbols, gold)
    return bool(((own | enclosing) & symbols["has_body"]).any())


def _symbol_found(symbols: pd.DataFrame, package_paths: set[str], gold: str) -> bool:
    """Whether an expected symbol is in a package at any depth: itself (signature or body), its source inside an
    enclosing body, or (`path::<module>`) its file."""
    if gold.endswith("::" + MODULE_SYMBOL):
        return gold.split("::", 1)[0] in package_paths
    own, _ = _gold_rows(symbols, gold)
    return bool(own.any()) or _body_in(symbols, gold)


def _relevant_symbol_mask(symbols: pd.DataFrame, expected_symbols: list[str]) -> pd.Series:
    """Package symbols that are an expected symbol, nested in one, or carry one in their body (or match a bare name)."""
    mask = pd.Series(False, index=symbols.index)
    for gold in gold_functions(expected_symbols):
        own, enclosing = _gold_rows(symbols, gold)
        mask |= own | (enclosing & symbols["has_body"])
        if "::" in gold:
            path, name = gold.split("::", 1)
            mask |= (symbols["path"] == path) & symbols["qualified_name"].str.startswith(name + ".")
    return mask


def _relevant_tokens(symbols: pd.DataFrame, expected_symbols: list[str]) -> float:
    """Tokens of the package that are gold code, each line counted once: a gold symbol's own tokens (a method shown
    inside its class whole counts its share, not the class), what is nested in a gold symbol, and the whole body of
    an enclosing symbol only when the gold symbol has no row of its own (a class shown whole without members)."""
    relevant = pd.Series(False, index=symbols.index)
    for gold in gold_functions(expected_symbols):
        own, enclosing = _gold_rows(symbols, gold)
        relevant |= own
        if "::" in gold:
            path, name = gold.split("::", 1)
            relevant |= (symbols["path"] == path) & symbols["qualified_name"].str.startswith(name + ".")
        if not own.any():
            relevant |= enclosing & symbols["has_body"]
    inside = symbols["inside"] if "inside" in symbols else pd.Series(None, index=symbols.index, dtype=object)
    holders = set(
        zip(symbols.loc[relevant & inside.isna(), "path"], symbols.loc[relevant & inside.isna(), "qualified_name"])
    )
    counted_twice = inside.notna() & pd.Series(
        [(p, q) in holders for p, q in zip(symbols["path"], inside)], index=symbols.index, dtype=bool
    )
    return float(symbols.loc[relevant & ~counted_twice, "tokens"].sum())


def _holds_gold(symbols: pd.DataFrame, expected_symbols: list[str]) -> pd.Series:
    """Shown symbols (classes shown whole) that carry a gold member among their members."""
    relevant = _relevant_symbol_mask(symbols, expected_symbols)
    holders = set(
        zip(
            symbols.loc[relevant & symbols["inside"].notna(), "path"],
            symbols.loc[relevant & symbols["inside"].notna(), "inside"],
        )
    )
    return (
        pd.Series(
            [(p, q) in holders for p, q in zip(symbols["path"], symbols["qualified_name"])],
            index=symbols.index,
            dtype=bool,
        )
        & symbols["inside"].isna()
    )


def package_metrics(
    package: ContextPackage, expected_files: list[str], expected_symbols: list[str] | None
) -> dict[str, float]:
    """File and symbol recall/precision of the final package, its token efficiency and budget use."""
    nan = float("nan")
    paths = [f.path for f in package.files]
    package_paths, expected = set(paths), set(expected_files)
    symbols = package_symbols(package)
    out = {
        "package_file_recall": len(expected & package_paths) / len(expected) if expected else nan,
        "package_file_precision": len(expected & package_paths) / len(package_paths)
        if package_paths and expected
        else (0.0 if expected else nan),
        "budget_utilization": package.token_count / package.budget if package.budget else nan,
    }
    if expected_symbols:
        found = [_symbol_found(symbols, package_paths, g) for g in expected_symbols]
        shown = symbols["inside"].isna()  # precision counts the pieces shown, a class shown whole once
        relevant = _relevant_symbol_mask(symbols, expected_symbols) | _holds_gold(symbols, expected_symbols)
        module_files = {g.split("::", 1)[0] for g in expected_symbols if g.endswith("::" + MODULE_SYMBOL)}
        out["symbol_recall"] = sum(found) / len(found)
        out["symbol_precision"] = float(relevant[shown].mean()) if shown.any() else 0.0
        relevant_tokens = _relevant_tokens(symbols, expected_symbols)
        if module_files and not relevant.any():  # only module-level gold: count the gold files' package symbols
            relevant_tokens = symbols.loc[symbols["path"].isin(module_files), "tokens"].sum()
    else:
        out["symbol_recall"] = nan
        out["symbol_precision"] = nan
        relevant_tokens = symbols.loc[symbols["path"].isin(expected) & symbols["inside"].isna(), "tokens"].sum()
    out["token_efficiency"] = float(relevant_tokens) / package.token_count if package.token_count else 0.0
    return out


def gold_functions(expected_symbols: list[str] | None) -> list[str]:
    """The expected symbols that name a function, method or class: `path::<module>` entries left out."""
    return [g for g in expected_symbols or () if not g.endswith("::" + MODULE_SYMBOL)]


def gold_function_ranks(symbol_ranking: pd.DataFrame, gold: list[str]) -> list[int | None]:
    """Per gold function, its rank in a symbol ranking (path, qualified_name, rank): its own row's, else the best
    rank of a symbol enclosing it (a class whose body carries it); None when neither is ranked."""
    ranks: list[int | None] = []
    for g in gold:
        own, enclosing = _gold_rows(symbol_ranking, g)
        hits = symbol_ranking.loc[own if own.any() else enclosing, "rank"]
        ranks.append(int(hits.min()) if len(hits) else None)
    return ranks


def function_metrics(gold_ranks: list[int | None], prefix: str = "") -> dict[str, float]:
    """Hit@k (any gold function in the top k), accuracy@k (all of them) and MRR from the gold functions' ranks
    (None: not ranked); NaN for a case without gold functions."""
    if not gold_ranks:
        return dict.fromkeys((prefix + m for m in FUNCTION_METRICS), float("nan"))
    ranks = np.array([np.inf if r is None else r for r in gold_ranks], dtype=float)
    out = {f"{prefix}function_hit@{k}": float((ranks <= k).any()) for k in FUNCTION_KS}
    out |= {f"{prefix}function_acc@{k}": float((ranks <= k).all()) for k in FUNCTION_KS}
    out[f"{prefix}function_mrr"] = 1.0 / ranks.min() if np.isfinite(ranks.min()) else 0.0
    return out


def budget_metrics(
    package: ContextPackage, expected_symbols: list[str] | None, label: str, expected_files: list[str] | None = None
) -> dict[str, float]:
    """The package at one budget against the gold functions: share whose body is in (own or enclosing), whether
    any is, share named at any depth (signature included), token efficiency, and the package's tokens; against the
    gold files (when given), the package's file recall and precision (seed 001's gates)."""
    gold = gold_functions(expected_symbols)
    out = dict.fromkeys((f"{m}@{label}" for m in BUDGET_METRICS), float("nan"))
    out[f"package_tokens@{label}"] = float(package.token_count)
    if expected_files:
        files = package_metrics(package, expected_files, None)
        out[f"package_file_recall@{label}"] = files["package_file_recall"]
        out[f"package_file_precision@{label}"] = files["package_file_precision"]
    if not gold:
        return out
    symbols = package_symbols(package)
    paths = set(symbols["path"])
    bodies = [_body_in(symbols, g) for g in gold]
    named = [_symbol_found(symbols, paths, g) for g in gold]
    relevant_tokens = _relevant_tokens(symbols, gold)
    out[f"gold_body@{label}"] = float(np.mean(bodies))
    out[f"gold_body_any@{label}"] = float(any(bodies))
    out[f"gold_named@{label}"] = float(np.mean(named))
    out[f"token_efficiency@{label}"] = float(relevant_tokens) / package.token_count if package.token_count else 0.0
    return out


def bm25_symbol_ranking(kb_symbols: pd.DataFrame, kb_files: pd.DataFrame, symbol_scores: pd.Series) -> pd.DataFrame:
    """The baseline symbol ranking: functions, methods and classes of non-test files by their chunk's BM25 score
    (symbol_scores, indexed by symbol_id), best first, those sharing no term with the task left out; columns path,
    qualified_name, body_tokens, rank."""
    files = kb_files.loc[~kb_files["is_test"].astype(bool), ["file_id", "path"]]
    ranked = kb_symbols.loc[
        kb_symbols["kind"].isin(BM25_SYMBOL_KINDS), ["symbol_id", "file_id", "qualified_name", "body_tokens"]
    ]
    ranked = ranked.merge(files, on="file_id")
    ranked = ranked.assign(score=ranked["symbol_id"].map(symbol_scores).fillna(0.0))
    ranked = ranked[ranked["score"] > 0].sort_values(["score", "symbol_id"], ascending=[False, True], kind="stable")
    return ranked.assign(rank=np.arange(1, len(ranked) + 1))[
        ["path", "qualified_name", "body_tokens", "rank"]
    ].reset_index(drop=True)


def bodies_within(symbol_ranking: pd.DataFrame, budget: int) -> pd.DataFrame:
    """The symbols of a ranking whose bodies a package of `budget` tokens holds, taken in rank order until the next
    body would not fit (a symbol inside a body already taken comes free): path, qualified_name, tokens, has_body."""
    taken: list[tuple[str, str, int]] = []
    used = 0
    for path, name, tokens in zip(
        symbol_ranking["path"], symbol_ranking["qualified_name"], symbol_ranking["body_tokens"]
    ):
        if any(p == path and name.startswith(q + ".") for p, q, _ in taken):
            taken.append((path, name, 0))
            continue
        if used + int(tokens) > budget:
            break
        used += int(tokens)
        taken.append((path, name, int(tokens)))
    return pd.DataFrame(taken, columns=["path", "qualified_name", "tokens"]).assign(has_body=True)


def bm25_budget_metrics(
    bm25_ranking: pd.DataFrame, expected_symbols: list[str] | None, budget: int, label: str
) -> dict[str, float]:
    """The BM25 budget curve at one budget: the share of gold functions whose body is among the BM25 symbols'
    bodies that fit in `budget` tokens, and the tokens those bodies take."""
    gold = gold_functions(expected_symbols)
    taken = bodies_within(bm25_ranking, budget)
    return {
        f"{BASELINE_PREFIX}gold_body@{label}": float(np.mean([_body_in(taken, g) for g in gold]))
        if gold
        else float("nan"),
        f"{BASELINE_PREFIX}package_tokens@{label}": float(taken["tokens"].sum()),
    }


def budget_columns(columns) -> list[str]:
    """The per-budget metric columns among `columns` (`gold_body@8192`, `bm25_gold_body@auto`, ...), in order."""
    names = {*BUDGET_METRICS, *BASELINE_BUDGET_METRICS}
    return [c for c in columns if "@" in str(c) and str(c).split("@", 1)[0] in names]


def expected_file_signals(
    expected_files: list[str], signal_matrix: pd.DataFrame, scope: pd.DataFrame, bm25_paths: list[str]
) -> list[dict]:
    """Per expected file: is it indexed, its pipeline rank (all files) and scope rank, BM25 rank, every signal."""
    ranked = signal_matrix.sort_values("total", ascending=False, kind="stable")
    overall_rank = pd.Series(np.arange(1, len(ranked) + 1), index=ranked["path"].to_numpy())
    scope_rank = pd.Series(scope["rank"].to_numpy(), index=scope["path"].to_numpy())
    bm25_rank = pd.Series(np.arange(1, len(bm25_paths) + 1), index=bm25_paths)
    by_path = signal_matrix.set_index("path")
    signal_cols = [c for c in by_path.columns if c not in ("total", "seed")]
    rows = []
    for path in expected_files:
        indexed = path in by_path.index
        row = {
            "path": path,
            "indexed": indexed,
            "rank": int(overall_rank[path]) if indexed else None,
            "scope_rank": int(scope_rank[path]) if path in scope_rank.index else None,
            "bm25_rank": int(bm25_rank[path]) if path in bm25_rank.index else None,
            "total": float(by_path.at[path, "total"]) if indexed else None,
            "seed": bool(by_path.at[path, "seed"]) if indexed else None,
        }
        row.update({c: float(by_path.at[path, c]) if indexed else None for c in signal_cols})
        rows.append(row)
    return rows


def seed_gates(summary: dict, labels) -> dict[str, dict[str, dict]]:
    """Per budget label, seed 001's gates on the summary's means: value, threshold, met (None: not measured)."""
    out: dict[str, dict[str, dict]] = {}
    for label in labels:
        out[str(label)] = {}
        for metric, threshold in SEED_GATES:
            value = summary.get(f"{metric}@{label}")
            met = None if value is None or (isinstance(value, float) and np.isnan(value)) else bool(value > threshold)
            out[str(label)][metric] = {"value": value, "threshold": threshold, "met": met}
    return out


def summary(case_results: pd.DataFrame, n_skipped: int = 0) -> dict:
    """Aggregate of the evaluated cases: means of every metric, latency percentiles, case counts."""
    done = case_results[case_results["status"] == "ok"] if "status" in case_results else case_results
    out: dict = {"n_cases": int(len(done)), "n_skipped": int(n_skipped)}
    for name in (*SUMMARY_METRICS, *budget_columns(done.columns)):
        values = pd.to_numeric(done[name], errors="coerce") if name in done else pd.Series(dtype=float)
        out[name] = float(values.mean()) if values.notna().any() else None
    latency = pd.to_numeric(done["latency_s"], errors="coerce") if "latency_s" in done else pd.Series(dtype=float)
    out["latency_p50_s"] = float(latency.quantile(0.5)) if latency.notna().any() else None
    out["latency_p90_s"] = float(latency.quantile(0.9)) if latency.notna().any() else None
    return out
