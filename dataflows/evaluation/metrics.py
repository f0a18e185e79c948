"""Retrieval quality metrics (seed 001 step 8): per case from a ranking and a package, then aggregated.

Conventions: file_precision@k divides by the files actually in the top k (fewer than k when the ranking
is shorter); metrics of a case with no expected files are NaN and left out of means. Expected symbols are
`path::Qualified.name` (`path::<module>` = found when the file is in the package) or, in seed-format
cases, a bare name matched against any package symbol's name or qualified name.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dataflows.evaluation.cases import MODULE_SYMBOL
from dataflows.retrieval.models import ContextPackage

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
BASELINE_PREFIX = "bm25_"
SUMMARY_METRICS = (*RANKING_METRICS, *PACKAGE_METRICS, *(BASELINE_PREFIX + m for m in RANKING_METRICS))


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
    """One row per symbol in a package: path, key `path::qualified_name`, name, tokens, whether its body is in."""
    rows = [
        (f.path, f"{f.path}::{s.qualified_name}", s.name, s.qualified_name, s.tokens, s.body is not None)
        for f in package.files
        for s in f.symbols
    ]
    return pd.DataFrame(rows, columns=["path", "key", "name", "qualified_name", "tokens", "has_body"])


def _split_expected(expected_symbols: list[str]) -> tuple[list[tuple[str, str]], list[str]]:
    qualified, bare = [], []
    for s in expected_symbols:
        if "::" in s:
            path, name = s.split("::", 1)
            qualified.append((path, name))
        else:
            bare.append(s)
    return qualified, bare


def _symbol_found(symbols: pd.DataFrame, package_paths: set[str], path: str, name: str) -> bool:
    if name == MODULE_SYMBOL:
        return path in package_paths
    in_file = symbols[symbols["path"] == path]
    if (in_file["qualified_name"] == name).any():
        return True
    # an enclosing symbol included with its whole body carries this one's source too
    bodies = in_file.loc[in_file["has_body"], "qualified_name"]
    return bool(bodies.map(lambda q: name.startswith(q + ".")).any())


def _relevant_symbol_mask(symbols: pd.DataFrame, expected_symbols: list[str]) -> pd.Series:
    """Package symbols that are an expected symbol, nested in one, or carry one in their body (or match a bare name)."""
    qualified, bare = _split_expected(expected_symbols)
    mask = symbols["name"].isin(bare) | symbols["qualified_name"].isin(bare)
    for path, name in qualified:
        if name == MODULE_SYMBOL:
            continue
        in_file = symbols["path"] == path
        nested = symbols["qualified_name"].str.startswith(name + ".")
        carrier = symbols["has_body"] & symbols["qualified_name"].map(lambda q, n=name: n.startswith(q + "."))
        mask |= in_file & ((symbols["qualified_name"] == name) | nested | carrier)
    return mask


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
        "package_file_precision": len(expected & package_paths) / len(package_paths) if package_paths and expected else (0.0 if expected else nan),
        "budget_utilization": package.token_count / package.budget if package.budget else nan,
    }
    if expected_symbols:
        qualified, bare = _split_expected(expected_symbols)
        found = [_symbol_found(symbols, package_paths, p, n) for p, n in qualified]
        found += [bool((symbols["name"] == b).any() or (symbols["qualified_name"] == b).any()) for b in bare]
        relevant = _relevant_symbol_mask(symbols, expected_symbols)
        module_files = {p for p, n in qualified if n == MODULE_SYMBOL}
        out["symbol_recall"] = sum(found) / len(found)
        out["symbol_precision"] = float(relevant.mean()) if len(symbols) else 0.0
        relevant_tokens = symbols.loc[relevant, "tokens"].sum()
        if module_files and not relevant.any():  # only module-level gold: count the gold files' package symbols
            relevant_tokens = symbols.loc[symbols["path"].isin(module_files), "tokens"].sum()
    else:
        out["symbol_recall"] = nan
        out["symbol_precision"] = nan
        relevant_tokens = symbols.loc[symbols["path"].isin(expected), "tokens"].sum()
    out["token_efficiency"] = float(relevant_tokens) / package.token_count if package.token_count else 0.0
    return out


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


def summary(case_results: pd.DataFrame, n_skipped: int = 0) -> dict:
    """Aggregate of the evaluated cases: means of every metric, latency percentiles, case counts."""
    done = case_results[case_results["status"] == "ok"] if "status" in case_results else case_results
    out: dict = {"n_cases": int(len(done)), "n_skipped": int(n_skipped)}
    for name in SUMMARY_METRICS:
        values = pd.to_numeric(done[name], errors="coerce") if name in done else pd.Series(dtype=float)
        out[name] = float(values.mean()) if values.notna().any() else None
    latency = pd.to_numeric(done["latency_s"], errors="coerce") if "latency_s" in done else pd.Series(dtype=float)
    out["latency_p50_s"] = float(latency.quantile(0.5)) if latency.notna().any() else None
    out["latency_p90_s"] = float(latency.quantile(0.9)) if latency.notna().any() else None
    return out
