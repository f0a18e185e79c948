"""Measure a learned symbol ranker against the shipped linear symbol weights, leave-repositories-out (extra
`tune`: LightGBM).

    python -m cra.drivers.research.learn_symbol_ranker --signals ~/.cache/cra/mined/dev-signals ~/.cache/cra/mined/signals

Each DIR is a `cra.drivers.research.mined_signals` output; its `symbols/` parts hold every candidate symbol's signals per case.
The first DIR's cases are the ones measured (the development set); the others only add training cases (a case in
several counts in the first). Each case's symbols are ranked by the linear weights (`symbol_ranking`, as a request
does); a LightGBM lambdarank model re-orders its CANDIDATES best with what a sum cannot use: the signals' ranks
within the case, the symbol's kind and size, its file's rank, how many candidates there are. Repositories are dealt
into folds (`cra.drivers.research.learn_ranker.repository_folds`); each fold's measured cases are ranked by a model trained on
the other folds' cases of every DIR. Printed: function hit@1/5/10 per language, linear beside learned; the table
goes to OUT as Parquet. Nothing is shipped from here: a model would be, like the file ranker's, if it earned it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from cra.dataflows.retrieval.symbol_signals import SYMBOL_SIGNALS, summed_symbol_ranking
from cra.drivers.common.output import write_bytes_atomic
from cra.drivers.research.figures import parquet_bytes
from cra.drivers.research.learn_ranker import FOLDS, repository_folds

CANDIDATES = 30  # symbols per case the model re-orders: the linear ranking's best
KINDS = ("method", "function", "class", "type_alias", "interface", "enum")
RANKED = ("lexical", "name", "mention", "file", "lexical_in_file", "calls")  # signals also given as ranks in the case
FEATURES = (
    *SYMBOL_SIGNALS,
    "linear_rank",
    "linear_share",
    "log_body_tokens",
    "file_rank",
    "n_candidates",
    *(f"kind_{k}" for k in KINDS),
    *(f"{s}_rank" for s in RANKED),
)
PARAMS = dict(
    objective="lambdarank",
    n_estimators=150,
    learning_rate=0.05,
    num_leaves=15,
    min_child_samples=50,
    subsample=0.8,
    subsample_freq=1,
    colsample_bytree=0.8,
    lambdarank_truncation_level=20,
    verbose=-1,
)
KS = (1, 5, 10)


def symbol_candidates(rows: pd.DataFrame, weights: dict) -> pd.DataFrame:
    """Each case's CANDIDATES best symbols by the linear weights, with FEATURES, `gold`, `case_id`, `repo`,
    `language` and `linear_rank` (cases without a gold symbol are left out: they measure nothing)."""
    rows = rows[rows.groupby("case_id")["gold"].transform("any")]
    cases = []
    for _, case in rows.groupby("case_id", sort=True):
        ranked = summed_symbol_ranking(case.reset_index(drop=True), weights)
        best = ranked["score"].max()
        ranked = ranked.assign(
            linear_rank=ranked["rank"].astype(float),
            n_candidates=float(len(ranked)),
            linear_share=ranked["score"] / best if best > 0 else 0.0,
            log_body_tokens=np.log1p(ranked["body_tokens"].astype(float)),
        )
        for s in RANKED:
            ranked[f"{s}_rank"] = ranked[s].rank(ascending=False, method="min")
        for k in KINDS:
            ranked[f"kind_{k}"] = (ranked["kind"] == k).astype(float)
        cases.append(ranked.head(CANDIDATES))
    out = pd.concat(cases, ignore_index=True)
    return out.assign(file_rank=out["file_rank"].astype(float))


def cross_validated(candidates: pd.DataFrame, measured: set[str]) -> pd.Series:
    """The learned score of every measured case's candidates, from the model of the folds its repository is not in
    (trained on every other case of those folds, measured or not)."""
    import lightgbm

    repos = candidates.drop_duplicates("case_id").set_index("case_id")["repo"]
    fold_of = repository_folds(repos)
    fold = candidates["repo"].map(fold_of).to_numpy()
    score = pd.Series(np.nan, index=candidates.index)
    for k in range(FOLDS):
        train = candidates[fold != k]
        held = candidates[(fold == k) & candidates["case_id"].isin(measured)]
        if train.empty or held.empty:
            continue
        train = train[train.groupby("case_id")["gold"].transform("any")]
        model = lightgbm.LGBMRanker(**PARAMS, random_state=0)
        model.fit(
            train[list(FEATURES)].to_numpy(float),
            train["gold"].astype(int).to_numpy(),
            group=train.groupby("case_id", sort=False).size().to_numpy(),
        )
        score[held.index] = model.predict(held[list(FEATURES)].to_numpy(float))
    return score


def hits(candidates: pd.DataFrame, score: pd.Series) -> pd.DataFrame:
    """Per measured case: language and hit@k (a gold symbol among the k best by `score`, ties to the linear order)."""
    frame = candidates.assign(score=score).dropna(subset=["score"])
    out = []
    for case_id, case in frame.groupby("case_id"):
        ordered = case.sort_values(["score", "linear_rank"], ascending=[False, True])
        first = int(np.argmax(ordered["gold"].to_numpy())) + 1 if ordered["gold"].any() else np.inf
        out.append(
            {"case_id": case_id, "language": case["language"].iloc[0], **{f"hit@{k}": float(first <= k) for k in KS}}
        )
    return pd.DataFrame(out)


def comparison(candidates: pd.DataFrame, learned: pd.Series) -> pd.DataFrame:
    """Per language and all: hit@k of the linear ranking and of the learned one on the same measured cases."""
    measured = candidates.loc[learned.dropna().index]
    tables = {"linear": hits(measured, -measured["linear_rank"]), "learned": hits(measured, learned.dropna())}
    rows = []
    for name, table in tables.items():
        for language, group in [*table.groupby("language"), ("all", table)]:
            rows.append(
                {
                    "language": language,
                    "ranker": name,
                    "cases": len(group),
                    **{f"hit@{k}": round(group[f"hit@{k}"].mean(), 3) for k in KS},
                }
            )
    return pd.DataFrame(rows).sort_values(["language", "ranker"], ascending=[True, False], kind="stable")


def main(argv: list[str] | None = None) -> int:
    from cra.dataflows.retrieval.symbol_signals import DEFAULT_SYMBOL_WEIGHTS
    from cra.drivers.research.mined_signals import read_signals
    from cra.drivers.retrieval.retriever import default_symbol_weights

    parser = argparse.ArgumentParser(
        prog="python -m cra.drivers.research.learn_symbol_ranker", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--signals", nargs="+", required=True, help="cra.drivers.research.mined_signals --out DIRs, measured set first"
    )
    parser.add_argument("--out", default="out/learned_symbol_ranker")
    args = parser.parse_args(argv)
    frames, seen = [], set()
    for d in args.signals:
        rows = read_signals(Path(d), "symbols")
        if rows.empty:
            print(
                f"no symbol rows under {d}/symbols: run cra.drivers.research.mined_signals --out {d}", file=sys.stderr
            )
            return 2
        rows = rows[~rows["case_id"].isin(seen)]
        seen |= set(rows["case_id"])
        frames.append(rows)
    measured = set(frames[0]["case_id"])
    candidates = symbol_candidates(
        pd.concat(frames, ignore_index=True), default_symbol_weights() or DEFAULT_SYMBOL_WEIGHTS
    )
    print(
        f"{candidates['case_id'].nunique()} cases with a gold symbol from {candidates['repo'].nunique()} repositories, "
        f"{len(measured & set(candidates['case_id']))} measured",
        file=sys.stderr,
    )
    table = comparison(candidates, cross_validated(candidates, measured))
    write_bytes_atomic(Path(args.out) / "comparison.parquet", parquet_bytes(table))
    print(table.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
