"""Weights per language family only where LORO CV says they beat one shared fit.

    python -m cra.drivers.research.tune --cases data/eval/multilang.jsonl --mirror ../.mirror --out out/tune-ml
    python -m cra.drivers.research.tune_languages --cases data/eval/multilang.jsonl --signals out/tune-ml/signals.parquet

Reads the signal rows `cra.drivers.research.tune` collected (several files: one frame), labels each case with its language
family (`cra.drivers.research.language_report.case_languages`), and reports per language,
leave-one-repository-out: BM25 alone, the default weights, the shipped profile (`data/weights.toml`) with and
without the second-pass signals, then the fits named by --fits: one shared fit over every language ("shared"),
the same without the second-pass signals ("first-pass"), and a fit on that family's repositories alone ("family";
always with the held-out repository left out).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from cra.dataflows.retrieval.signal_list import FIRST_PASS_SIGNALS, SIGNALS
from cra.drivers.research.language_report import case_languages
from cra.drivers.research.tune import PRIORS, Ranker, fit, start_params

COLUMNS = ("acc@1", "acc@5", "acc@10", "mrr")
FITS = ("shared", "first-pass", "family")


def _loro(frame: pd.DataFrame, train_on, signals: tuple[str, ...] = SIGNALS) -> dict[str, dict[str, float]]:
    """Per held-out repository: metrics of the weights fitted on train_on(other repositories' rows, held-out rows)."""
    out = {}
    for repo in sorted(frame["repo"].unique()):
        held = frame[frame["repo"] == repo]
        train = train_on(frame[frame["repo"] != repo], held)
        out[repo] = Ranker(held, signals).metrics(fit(Ranker(train, signals), start_params(signals)))
    return out


def profile_params(profile: dict, second_pass: bool = True) -> np.ndarray:
    """A profile's weights over SIGNALS (missing: 0; second-pass signals 0 unless second_pass), then its priors."""
    weights = [
        profile.get("weights", {}).get(s, 0.0) if second_pass or s in FIRST_PASS_SIGNALS else 0.0 for s in SIGNALS
    ]
    return np.array(weights + [profile.get("priors", {}).get(p, 1.0) for p in PRIORS])


def family_comparison(
    frame: pd.DataFrame, profile: dict | None = None, fits: tuple[str, ...] = ("shared", "family")
) -> pd.DataFrame:
    """Rows (language, configuration) with case-weighted Acc@1/5/10 and MRR, leave-one-repository-out."""
    loro = {
        "shared": ("shared fit (LORO)", lambda: _loro(frame, lambda train, held: train)),
        "first-pass": (
            "shared fit, first-pass signals (LORO)",
            lambda: _loro(frame, lambda train, held: train, FIRST_PASS_SIGNALS),
        ),
        "family": (
            "family fit (LORO)",
            lambda: _loro(frame, lambda train, held: train[train["language"] == held["language"].iloc[0]]),
        ),
    }
    fitted = {loro[f][0]: loro[f][1]() for f in FITS if f in fits}
    repo_language = frame.groupby("repo")["language"].first()
    fixed = {
        "BM25 alone": (("lexical_match",), start_params(("lexical_match",), False)),
        "default weights": (SIGNALS, start_params(SIGNALS)),
    }
    if profile:
        fixed["shipped profile, first pass only"] = (SIGNALS, profile_params(profile, second_pass=False))
        fixed["shipped profile"] = (SIGNALS, profile_params(profile))
    rows = []
    for language, repos in repo_language.groupby(repo_language):
        part = frame[frame["repo"].isin(repos.index)]
        for name, (signals, params) in fixed.items():
            rows.append({"language": language, "configuration": name, **Ranker(part, signals).metrics(params)})
        for name, by_repo in fitted.items():
            parts = [by_repo[r] for r in repos.index]
            n = sum(p["n"] for p in parts)
            rows.append(
                {
                    "language": language,
                    "configuration": name,
                    **{k: sum(p[k] * p["n"] for p in parts) / max(n, 1) for k in COLUMNS},
                    "n": n,
                }
            )
    return pd.DataFrame(rows).set_index(["language", "configuration"])[[*COLUMNS, "n"]]


def main(argv: list[str] | None = None) -> int:
    import tomllib

    from cra.drivers.common.shipped import shipped_path

    parser = argparse.ArgumentParser(
        prog="python -m cra.drivers.research.tune_languages", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--cases", nargs="+", required=True, help="the case files (their records' `language`)")
    parser.add_argument(
        "--signals", nargs="+", required=True, help="signals.parquet written by `python -m cra.drivers.research.tune`"
    )
    parser.add_argument("--fits", default="shared,family", help=f"LORO fits to run, comma-separated: {','.join(FITS)}")
    args = parser.parse_args(argv)
    frame = pd.concat([pd.read_parquet(Path(s)) for s in args.signals], ignore_index=True)
    frame = frame.join(pd.concat([case_languages(Path(c)) for c in args.cases]), on="case_id")
    profile = tomllib.loads(shipped_path("weights.toml").read_text())
    table = family_comparison(frame[frame["language"].notna()], profile, tuple(args.fits.split(",")))
    print(table.to_string(float_format=lambda x: f"{x:.3f}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
