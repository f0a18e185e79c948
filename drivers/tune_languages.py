"""Weights per language family only where LORO CV says they beat one shared fit (issue 18).

    python -m drivers.tune --cases data/eval/multilang.jsonl --mirror ../.mirror --out out/tune-ml
    python -m drivers.tune_languages --cases data/eval/multilang.jsonl --signals out/tune-ml/signals.parquet

Reads the signal rows `drivers.tune` collected, labels each case with its language family, and reports per
language, leave-one-repository-out: the default weights, one shared fit over every language, and a fit on that
family's repositories alone (always with the held-out repository left out). BM25 alone is printed beside them.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from dataflows.retrieval.combination import SIGNALS
from drivers.language_report import case_languages
from drivers.tune import Ranker, fit, start_params

COLUMNS = ("acc@1", "acc@5", "acc@10", "mrr")


def _loro(frame: pd.DataFrame, train_on) -> dict[str, dict[str, float]]:
    """Per held-out repository: metrics of the weights fitted on train_on(other repositories' rows, held-out rows)."""
    out = {}
    for repo in sorted(frame["repo"].unique()):
        held = frame[frame["repo"] == repo]
        train = train_on(frame[frame["repo"] != repo], held)
        out[repo] = Ranker(held, SIGNALS).metrics(fit(Ranker(train, SIGNALS), start_params(SIGNALS)))
    return out


def family_comparison(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows (language, configuration) with case-weighted Acc@1/5/10 and MRR, leave-one-repository-out."""
    shared = _loro(frame, lambda train, held: train)
    own = _loro(frame, lambda train, held: train[train["language"] == held["language"].iloc[0]])
    repo_language = frame.groupby("repo")["language"].first()
    fixed = {
        "BM25 alone": (("lexical_match",), start_params(("lexical_match",), False)),
        "default weights": (SIGNALS, start_params(SIGNALS)),
    }
    rows = []
    for language, repos in repo_language.groupby(repo_language):
        part = frame[frame["repo"].isin(repos.index)]
        for name, (signals, params) in fixed.items():
            rows.append({"language": language, "configuration": name, **Ranker(part, signals).metrics(params)})
        for name, by_repo in (("shared fit (LORO)", shared), ("family fit (LORO)", own)):
            parts = [by_repo[r] for r in repos.index]
            n = sum(p["n"] for p in parts)
            rows.append({"language": language, "configuration": name,
                         **{k: sum(p[k] * p["n"] for p in parts) / max(n, 1) for k in COLUMNS}, "n": n})  # fmt: skip
    return pd.DataFrame(rows).set_index(["language", "configuration"])[[*COLUMNS, "n"]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m drivers.tune_languages", description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", required=True, help="the case file (its records' `language`)")
    parser.add_argument("--signals", required=True, help="signals.parquet written by `python -m drivers.tune`")
    args = parser.parse_args(argv)
    frame = pd.read_parquet(Path(args.signals)).join(case_languages(Path(args.cases)), on="case_id")
    table = family_comparison(frame[frame["language"].notna()])
    print(table.to_string(float_format=lambda x: f"{x:.3f}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
