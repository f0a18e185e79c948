"""Fit the symbol-signal weights on evaluation cases, cross-validated leave-one-repository-out.

    python -m cra.drivers.research.fit_symbol_weights --cases ../shared/eval/dev.jsonl ../shared/eval/dev_extra.jsonl \
        --mirror ../.mirror [--write-weights]
    python -m cra.drivers.research.fit_symbol_weights --signals ~/.cache/cra/mined/signals   # the mined cases

1. For every case with gold functions: materialise and index its tree (cached), run the retrieval DAG up to
   `symbol_signal_matrix`, label each candidate with whether the real fix changed it (`out/symbols/signals.parquet`).
2. Fit a pairwise logistic model (RankNet, weights kept >= 0): every gold symbol should outscore every other
   candidate of its case;
   the weights are the linear score `symbol_ranking` computes, so the fit ships as `data/symbol_weights.toml`.
3. Report function hit@1/5/10 (a gold function in the top k), acc@5 (all of them) and MRR: hand-set weights,
   leave-one-repository-out fits, and the in-sample fit (the ceiling of these signals).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from cra.dataflows.evaluation.metrics import function_metrics
from cra.dataflows.retrieval.symbol_signals import DEFAULT_SYMBOL_WEIGHTS, SYMBOL_SIGNALS, summed_symbol_ranking
from cra.drivers.common.output import write_text_atomic
from cra.drivers.common.shipped import shipped_path
from cra.drivers.research.mined_signals import case_symbol_rows, read_signals

WEIGHTS_FILE = shipped_path("symbol_weights.toml")
NEGATIVES = 150  # per case: the hardest by lexical + file score, and as many drawn at random
L2 = 1e-3
STEPS = 300
UNFITTED = ("tests",)  # no development case names a test: these keep their hand-set weight


def ranking_metrics(frame: pd.DataFrame, weights: dict[str, float]) -> dict[str, float]:
    """Function hit@1/5/10, acc@5 and MRR (as `cra evaluate` computes them) of the pipeline's ranking under these
    weights, mean over cases; a gold function that is no candidate counts as unranked."""
    rows = []
    for _, case in frame.groupby("case_id", sort=True):
        ranked = summed_symbol_ranking(case, weights)
        ranks = ranked.loc[ranked["gold"].to_numpy(bool), "rank"].tolist()[: case["n_gold"].iloc[0]]
        rows.append(function_metrics(ranks + [None] * (case["n_gold"].iloc[0] - len(ranks))))
    means = pd.DataFrame(rows).mean()
    return {name: float(means[f"function_{name}"]) for name in ("hit@1", "hit@5", "hit@10", "acc@5", "mrr")}


def fitted_weights(frame: pd.DataFrame) -> dict[str, float]:
    """Pairwise logistic weights (gold over each sampled negative of its case), positive ones summing to 1."""
    fitted = [s for s in SYMBOL_SIGNALS if s not in UNFITTED]
    rng = np.random.default_rng(0)
    diffs, weights = [], []
    for _, case in frame.groupby("case_id", sort=True):
        gold = case["gold"].to_numpy(bool)
        if not gold.any() or gold.all():
            continue
        values = case[fitted].to_numpy(float)
        pos, neg = values[gold], values[~gold]
        if len(neg) > 2 * NEGATIVES:
            hard = np.argsort(
                -(case.loc[~gold, "lexical"].to_numpy() + case.loc[~gold, "file"].to_numpy()), kind="stable"
            )
            neg = np.vstack([neg[hard[:NEGATIVES]], neg[rng.choice(len(neg), NEGATIVES, replace=False)]])
        d = (pos[:, None, :] - neg[None, :, :]).reshape(-1, len(fitted))
        diffs.append(d)
        weights.append(np.full(len(d), 1.0 / len(d)))  # every case counts the same
    if not diffs:
        return dict(DEFAULT_SYMBOL_WEIGHTS)
    d, pair_weight = np.vstack(diffs), np.concatenate(weights)
    w = np.zeros(len(fitted))
    n_cases = len(diffs)
    for _ in range(STEPS):  # projected gradient descent on the mean logistic loss of the pairs: weights >= 0
        p = 1 / (1 + np.exp(np.clip(d @ w, -30, 30)))
        w = np.maximum(0.0, w - 5.0 * (-(d * (p * pair_weight)[:, None]).sum(axis=0) / n_cases + L2 * w))
    w = w / w[w > 0].sum() if (w > 0).any() else w
    out = dict(zip(fitted, np.round(w, 4).tolist()))
    hand_total = sum(v for v in DEFAULT_SYMBOL_WEIGHTS.values() if v > 0)
    return out | {s: round(DEFAULT_SYMBOL_WEIGHTS[s] / hand_total, 4) for s in UNFITTED}


def report(frame: pd.DataFrame) -> pd.DataFrame:
    """Hand-set, leave-one-repository-out and in-sample figures, and per held-out repository."""
    n = frame["case_id"].nunique()
    rows = {"hand-set weights": ranking_metrics(frame, DEFAULT_SYMBOL_WEIGHTS) | {"cases": n}}
    held_out = {}
    for repo, test in frame.groupby("repo", sort=True):
        held_out[repo] = ranking_metrics(test, fitted_weights(frame[frame["repo"] != repo])) | {
            "cases": test["case_id"].nunique()
        }
        rows[f"  held out: {repo}"] = held_out[repo]
    rows["fitted, leave-one-repository-out"] = _pooled(list(held_out.values()))
    rows["fitted, in-sample (ceiling)"] = ranking_metrics(frame, fitted_weights(frame)) | {"cases": n}
    if "language" in frame and frame["language"].nunique() > 1:
        shipped = fitted_weights(frame)
        for language, part in frame.groupby("language", sort=True):
            rows[f"  {language}, one shared fit in-sample"] = ranking_metrics(part, shipped) | {
                "cases": part["case_id"].nunique()
            }
            repos = sorted(part["repo"].unique())
            rows[f"  {language}, one shared fit LORO"] = _pooled([held_out[r] for r in repos])
            if len(repos) > 1:  # the same held-out repositories, fitted on their own language's other repositories
                rows[f"  {language}, its own fit LORO"] = _pooled(
                    [
                        ranking_metrics(part[part["repo"] == r], fitted_weights(part[part["repo"] != r]))
                        | {"cases": held_out[r]["cases"]}
                        for r in repos
                    ]
                )
    return pd.DataFrame(rows).T.astype({"cases": int})


def _pooled(parts: list[dict]) -> dict:
    """Case-weighted means of per-repository metrics."""
    n = sum(m["cases"] for m in parts)
    return {k: sum(m["cases"] * m[k] for m in parts) / n for k in parts[0] if k != "cases"} | {"cases": n}


def weights_toml(weights: dict[str, float], note: str) -> str:
    lines = [f"# {line}" for line in note.splitlines()] + ["[weights]"]
    return "\n".join(lines + [f"{name} = {weights[name]}" for name in SYMBOL_SIGNALS]) + "\n"


def main(argv: list[str] | None = None) -> int:
    from cra.drivers.research.tune import case_arguments, case_rows

    parser = case_arguments("cra.drivers.research.fit_symbol_weights", __doc__, "out/symbols", required=False)
    parser.add_argument(
        "--signals",
        help="symbol rows collected by `python -m cra.drivers.research.mined_signals --out DIR` "
        "(instead of --cases and --mirror)",
    )
    parser.add_argument(
        "--write-weights", action="store_true", help=f"write the weights fitted on all cases to {WEIGHTS_FILE}"
    )
    args = parser.parse_args(argv)
    if not args.signals and not (args.cases and args.mirror):
        parser.error("pass --cases FILE... and --mirror DIR, or --signals DIR")
    out = Path(args.out)
    if args.signals:
        frame = read_signals(Path(args.signals), "symbols")
    else:
        frame = case_rows(args, case_symbol_rows)
    frame = frame[frame["n_gold"] > 0]
    table = report(frame)
    text = table.to_string(float_format=lambda x: f"{x:.3f}")
    print(text)
    write_text_atomic(out / "report.txt", text + "\n")
    if args.write_weights:
        note = (
            f"Symbol-signal weights fitted by `python -m cra.drivers.research.fit_symbol_weights` on {frame['case_id'].nunique()} "
            f"{'mined' if args.signals else 'development'} cases\n(pairwise logistic: gold functions over the other candidates of their case); "
            f"{', '.join(UNFITTED)} hand-set (no case exercises it).\nCross-validated figures: {out / 'report.txt'}."
        )
        write_text_atomic(WEIGHTS_FILE, weights_toml(fitted_weights(frame), note))
        print(f"wrote {WEIGHTS_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
