"""Fit the signal weights on evaluation cases, cross-validated leave-one-repository-out.

    python -m cra.drivers.research.tune --cases ../shared/eval/dev.jsonl ../shared/eval/dev_extra.jsonl --mirror ../.mirror

1. For every case: materialise and index its tree (cached), run the retrieval DAG up to `signal_matrix`,
   keep each file's signal values and whether the real fix touched it (`out/tune/signals.parquet`).
2. Fit non-negative weights of the weighted sum by coordinate ascent on mean(Acc@1, Acc@5, MRR).
3. Report leave-one-repository-out figures (fit on the other repositories, score the held-out one): an
   ablation over signal sets, per-task-type weights and two standard learners (`ablation.txt`, `.parquet`,
   `.png`); with --write-weights, write the weights fitted on all cases to `data/weights.toml`.
"""

from __future__ import annotations

import argparse
import sys
from contextlib import suppress
from pathlib import Path

import numpy as np
import pandas as pd

from cra.dataflows.evaluation.metrics import rank_metrics
from cra.dataflows.retrieval.ranking import effective_weights, file_scores, non_source, ranks_of, role_prior
from cra.dataflows.retrieval.signal_list import DEFAULT_PRIORS, DEFAULT_WEIGHTS, SEED_SIGNALS, SIGNALS
from cra.drivers.common.output import write_bytes_atomic, write_text_atomic
from cra.drivers.common.shipped import shipped_path
from cra.drivers.research.figures import parquet_bytes, write_bar_chart

WEIGHTS_FILE = shipped_path("weights.toml")
GRID = (0.0, 0.02, 0.05, 0.1, 0.2, 0.35, 0.5, 0.75, 1.0)
PRIOR_GRID = (0.1, 0.2, 0.35, 0.5, 0.75, 1.0)  # never 0: tests and docs stay reachable as context


def case_signal_rows(case: dict, kb) -> pd.DataFrame:
    """Every file's signal values for one case, labelled with whether the real fix touched the file.

    Under the shipped profile, as a request runs: second-pass signals (`partner_affinity`) relate files to the
    best files of the first pass, which the weights in force choose.
    """
    from cra.drivers.retrieval.retriever import default_weight_profile, kb_inputs, request_overrides, retrieval_driver

    inputs = dict(kb_inputs(kb))
    inputs.update(task_text=case["task"], scope_size=75, weights_override=None, weight_profile=default_weight_profile())
    out = retrieval_driver().execute(["signal_matrix", "task_query"], inputs=inputs, overrides=request_overrides(kb))
    matrix = out["signal_matrix"]
    files = kb.files.set_index("file_id").reindex(matrix.index)
    frame = matrix[["path", *SIGNALS, "seed"]].assign(
        is_test=files["is_test"].fillna(False).astype(bool).to_numpy(),
        non_source=non_source(files),
        case_id=case["case_id"],
        repo=case["repo"],
        task_type=out["task_query"].task_type,
    )
    return frame.assign(gold=frame["path"].isin(set(case["expected_files"])))


def collect(cases: pd.DataFrame, locate_kb, rows_of=case_signal_rows) -> pd.DataFrame:
    """Rows (`rows_of(case, kb)`: file signals by default) of all cases whose KB can be had (locate_kb(case) ->
    KnowledgeBase or None)."""
    from cra.drivers.common.progress import Progress

    frames, progress = [], Progress("collecting", unit="cases")  # (on a terminal, or with CRA_PROGRESS=1)
    progress.update(0, len(cases))
    for i, case in enumerate(cases.to_dict("records"), start=1):
        kb = locate_kb(case)
        if kb is None:
            progress.note(f"[{i}/{len(cases)}] {case['case_id']}: skipped (no tree)")
        else:
            frames.append(rows_of(case, kb))
        progress.update(i, len(cases))
    progress.close()
    return pd.concat(frames, ignore_index=True)


PRIORS = tuple(DEFAULT_PRIORS)  # the last len(PRIORS) entries of a parameter vector


class Ranker:
    """Per-case signal arrays, so a parameter vector (signal weights, then role priors) is scored in milliseconds
    with the pipeline's own arithmetic (`cra.dataflows.retrieval.ranking`) and the evaluation's metrics."""

    def __init__(self, frame: pd.DataFrame, signals: tuple[str, ...]):
        self.signals = signals
        self.cases = []
        for _, g in frame.groupby("case_id", sort=True):
            if g["gold"].any():
                values = g[list(signals)].to_numpy(float)
                roles = (g["is_test"].to_numpy(bool), g["non_source"].to_numpy(bool))
                path_order = g["path"].to_numpy(dtype=object).argsort(kind="stable").argsort()
                self.cases.append(
                    (
                        values,
                        (values > 0).any(axis=0),
                        roles,
                        g["seed"].to_numpy(bool),
                        np.flatnonzero(g["gold"].to_numpy(bool)),
                        path_order,
                    )
                )

    def metrics(self, params: np.ndarray) -> dict[str, float]:
        configured, (test_prior, non_source_prior) = params[: len(self.signals)], params[len(self.signals) :]
        parts = []
        for values, live, (is_test, peripheral), seed, gold, path_order in self.cases:
            prior = role_prior(is_test, peripheral, test_prior, non_source_prior)
            score, total = file_scores(values, effective_weights(configured, live), prior, seed)
            parts.append(rank_metrics(ranks_of(gold, total, score, path_order), len(gold)))
        return case_means(parts)

    def objective(self, weights: np.ndarray) -> float:
        m = self.metrics(weights)
        return (m["acc@1"] + m["acc@5"] + m["mrr"]) / 3


def fit(ranker: Ranker, start: np.ndarray) -> np.ndarray:
    """The best of coordinate ascent from three starts (given, uniform, BM25 only): one start's path decided
    about 2 points of CV Acc@5 either way. Deterministic; weights come back summing to 1."""
    n = len(ranker.signals)
    uniform, bm25_only = start.copy(), start.copy()
    uniform[:n] = 0.1
    bm25_only[:n] = [1.0 if s == "lexical_match" else 0.0 for s in ranker.signals]
    if "lexical_match" not in ranker.signals:
        bm25_only[:n] = 0.1
    fits = [_ascend(ranker, s) for s in (start, uniform, bm25_only)]
    return max(fits, key=ranker.objective)


def _ascend(ranker: Ranker, start: np.ndarray, rounds: int = 5) -> np.ndarray:
    """Coordinate ascent over a grid per parameter, from `start`, until a round changes nothing."""
    params = start.astype(float).copy()
    n = len(ranker.signals)
    best = ranker.objective(params)
    for _ in range(rounds):
        improved = False
        for j in range(len(params)):
            for value in GRID if j < n else PRIOR_GRID:
                trial = params.copy()
                trial[j] = value
                if trial[:n].sum() <= 0:
                    continue
                score = ranker.objective(trial)
                if score > best + 1e-9:
                    best, params, improved = score, trial, True
        if not improved:
            break
    params[:n] /= params[:n].sum()
    return params


def start_params(signals: tuple[str, ...], priors: bool = True) -> np.ndarray:
    """Starting parameters of a fit: default weights of these signals, then the default role priors (or 1: none)."""
    weights = [DEFAULT_WEIGHTS.get(s, 0.1) for s in signals]
    return np.array(weights + [DEFAULT_PRIORS[p] if priors else 1.0 for p in PRIORS])


def _pooled(parts: list[dict[str, float]]) -> dict[str, float]:
    """Case-weighted mean of per-fold metrics."""
    n = sum(m["n"] for m in parts)
    return {k: sum(m[k] * m["n"] for m in parts) / max(n, 1) for k in ("acc@1", "acc@5", "acc@10", "mrr")} | {"n": n}


def cross_validated(frame: pd.DataFrame, signals: tuple[str, ...]) -> dict[str, float]:
    """Leave-one-repository-out: fit on the other repositories, measure on the held-out one, pooled over cases."""
    parts = []
    for repo in sorted(frame["repo"].unique()):
        train, test = Ranker(frame[frame["repo"] != repo], signals), Ranker(frame[frame["repo"] == repo], signals)
        parts.append(test.metrics(fit(train, start_params(signals))))
    return _pooled(parts)


def in_sample(frame: pd.DataFrame, signals: tuple[str, ...], per_repository: bool = False) -> dict[str, float]:
    """Figures of weights fitted on the very cases they score: all cases at once, or each repository on itself.

    Not an estimate of quality: an upper bound on what a weighted sum of these signals can reach on these cases
    (per repository: even with the weights chosen after seeing that repository's answers).
    """
    groups = [g for _, g in frame.groupby("repo")] if per_repository else [frame]
    return _pooled([Ranker(g, signals).metrics(fit(Ranker(g, signals), start_params(signals))) for g in groups])


MIN_TASK_TYPE_CASES = 15  # fewer training cases of a type than this: that type uses the shared weights


def cross_validated_by_task_type(frame: pd.DataFrame, signals: tuple[str, ...]) -> dict[str, float]:
    """As `cross_validated`, but weights fitted per task type (bug_fix, feature, ...) where there are enough cases."""
    parts = []
    for repo in sorted(frame["repo"].unique()):
        train_all = frame[frame["repo"] != repo]
        shared = fit(Ranker(train_all, signals), start_params(signals))
        for task_type, test in frame[frame["repo"] == repo].groupby("task_type"):
            train = train_all[train_all["task_type"] == task_type]
            enough = train["case_id"].nunique() >= MIN_TASK_TYPE_CASES
            params = fit(Ranker(train, signals), start_params(signals)) if enough else shared
            parts.append(Ranker(test, signals).metrics(params))
    return _pooled(parts)


def learner_comparison(frame: pd.DataFrame) -> dict[str, dict[str, float]]:
    """LORO figures of two standard learners on the same features (signals, seed, roles), when installed.

    LightGBM lambdarank and logistic regression (extra `tune`); the shipped combination stays the weighted sum
    unless one of these measures better.
    """
    features = [*SIGNALS, "seed", "is_test", "non_source"]
    data = frame[frame.groupby("case_id")["gold"].transform("any")].sort_values("case_id", kind="stable")
    x, y = data[features].astype(float), data["gold"].astype(int)
    learners = {}
    with suppress(ImportError):  # extra `tune` not installed: no LightGBM row
        import lightgbm

        def lambdarank(tr):
            model = lightgbm.LGBMRanker(
                objective="lambdarank",
                n_estimators=200,
                learning_rate=0.05,
                num_leaves=7,
                min_child_samples=20,
                verbose=-1,
            )
            return model.fit(x[tr], y[tr], group=data[tr].groupby("case_id", sort=True).size().to_numpy()).predict

        learners["LightGBM lambdarank (LORO CV)"] = lambdarank
    with suppress(ImportError):  # nor a logistic-regression row
        from sklearn.linear_model import LogisticRegression

        def logistic(tr):
            return LogisticRegression(max_iter=2000, class_weight="balanced").fit(x[tr], y[tr]).decision_function

        learners["logistic regression (LORO CV)"] = logistic
    rows = {}
    for name, learner in learners.items():
        score = pd.Series(0.0, index=data.index)
        for repo in data["repo"].unique():
            held = (data["repo"] == repo).to_numpy()
            score[held] = learner(~held)(x[held])
        rows[name] = _ranked_metrics(data.assign(score=score))
    return rows


def _ranked_metrics(frame: pd.DataFrame) -> dict[str, float]:
    """Acc@k and MRR of a frame with a `score` column (ties pessimistic: a gold file ranks after its equals)."""
    rank = frame.groupby("case_id")["score"].rank(ascending=False, method="max")
    gold = rank[frame["gold"]].groupby(frame.loc[frame["gold"], "case_id"])
    return case_means([rank_metrics(ranks.to_numpy(), len(ranks)) for _, ranks in gold])


def case_means(parts: list[dict[str, float]]) -> dict[str, float]:
    """Tune's figures (acc@1, acc@5, acc@10, mrr, n) as means of per-case `rank_metrics`."""
    n = len(parts)
    means = {
        name: sum(p[f"file_{name}" if name != "mrr" else name] for p in parts) / (n or 1)
        for name in ("acc@1", "acc@5", "acc@10", "mrr")
    }
    return means | {"n": n}


def ablation(frame: pd.DataFrame) -> pd.DataFrame:
    """CV figures for growing signal sets, plus the untuned defaults, BM25 alone first."""
    rows = {
        "BM25 alone (lexical_match)": {
            **Ranker(frame, ("lexical_match",)).metrics(start_params(("lexical_match",), False)),
            "fitted": "no",
        }
    }
    rows["seed signals, seed weights, no priors"] = {
        **Ranker(frame, SEED_SIGNALS).metrics(start_params(SEED_SIGNALS, False)),
        "fitted": "no",
    }
    rows["all signals, default weights + priors"] = {
        **Ranker(frame, SIGNALS).metrics(start_params(SIGNALS)),
        "fitted": "no",
    }
    rows["seed signals, learned (LORO CV)"] = {**cross_validated(frame, SEED_SIGNALS), "fitted": "CV"}
    extra = [s for s in SIGNALS if s not in SEED_SIGNALS]
    for signal in extra:
        rows[f"seed + {signal}, learned (LORO CV)"] = {
            **cross_validated(frame, SEED_SIGNALS + (signal,)),
            "fitted": "CV",
        }
    rows["all signals, learned (LORO CV)"] = {**cross_validated(frame, SIGNALS), "fitted": "CV"}
    if "task_type" in frame:
        rows["all signals, learned per task type (LORO CV)"] = {
            **cross_validated_by_task_type(frame, SIGNALS),
            "fitted": "CV",
        }
    rows.update({name: {**m, "fitted": "CV"} for name, m in learner_comparison(frame).items()})
    rows["all signals, fitted on all cases (in-sample)"] = {**in_sample(frame, SIGNALS), "fitted": "in-sample"}
    rows["all signals, fitted per repository on itself (in-sample)"] = {
        **in_sample(frame, SIGNALS, per_repository=True),
        "fitted": "in-sample",
    }
    return pd.DataFrame(rows).T[["acc@1", "acc@5", "acc@10", "mrr", "n", "fitted"]]


def weights_toml(params: dict[str, float], note: str) -> str:
    """The profile file: weights, priors, and an empty task-type table (the fitted weights apply to all tasks)."""
    lines = [f"# {line}" for line in note.splitlines()] + ["[weights]"]
    lines += [f"{name} = {value:.4f}" for name, value in params.items() if name in SIGNALS]
    lines += ["", "[priors]"] + [f"{name} = {value:.4f}" for name, value in params.items() if name in PRIORS]
    lines += ["", "[task_types]"]
    return "\n".join(lines) + "\n"


def tree_kb(case: dict, mirror: Path):
    """The KB of a case's base commit from its mirror (tree materialised and indexed once, then cached); None
    without a mirror."""
    from cra.drivers.evaluation.trees import indexed_tree_kb, materialize_tree, mirror_git_dir
    from cra.drivers.kb.store import load_kb

    git_dir = mirror_git_dir(mirror, case["repo"])
    if not git_dir.is_dir():
        return None
    tree = materialize_tree(git_dir, case["base_commit"], case["repo"])
    return load_kb(indexed_tree_kb(tree, git_dir, case["base_commit"]))


def case_arguments(module: str, doc: str, out: str, required: bool = True) -> argparse.ArgumentParser:
    """The options every fitting driver shares: case files, mirrors, output directory, --reuse."""
    parser = argparse.ArgumentParser(prog=f"python -m {module}", description=doc.splitlines()[0])
    parser.add_argument("--cases", nargs="+", required=required)
    parser.add_argument("--mirror", required=required, help="git mirrors laid out as DIR/<owner>+<name>/repo")
    parser.add_argument("--out", default=out)
    parser.add_argument("--reuse", action="store_true", help="reuse OUT/signals.parquet if present")
    return parser


def case_rows(args, rows_of=case_signal_rows) -> pd.DataFrame:
    """The rows of every case (`rows_of(case, kb)`), collected once into OUT/signals.parquet and reused with --reuse."""
    from cra.drivers.evaluation.evaluate import load_cases

    cached = Path(args.out) / "signals.parquet"
    if args.reuse and cached.exists():
        return pd.read_parquet(cached)
    cases = pd.concat([load_cases(Path(c)) for c in args.cases], ignore_index=True).drop_duplicates("case_id")
    frame = collect(cases, lambda case: tree_kb(case, Path(args.mirror)), rows_of)
    write_bytes_atomic(cached, parquet_bytes(frame))
    return frame


def main(argv: list[str] | None = None) -> int:
    parser = case_arguments("cra.drivers.research.tune", __doc__, "out/tune")
    parser.add_argument("--write-weights", action="store_true", help=f"write the fitted weights to {WEIGHTS_FILE}")
    parser.add_argument(
        "--no-ablation", action="store_true", help="skip the cross-validated ablation (with --write-weights)"
    )
    args = parser.parse_args(argv)
    out = Path(args.out)
    frame = case_rows(args)
    if not args.no_ablation:
        table = ablation(frame)
        print(table.to_string(float_format=lambda x: f"{x:.3f}"))
        write_text_atomic(out / "ablation.txt", table.to_string(float_format=lambda x: f"{x:.3f}"))
        write_bytes_atomic(out / "ablation.parquet", parquet_bytes(table.rename_axis("configuration").reset_index()))
        write_bar_chart(
            table[["acc@1", "acc@5", "acc@10", "mrr"]].astype(float),
            out / "ablation.png",
            f"File ranking ablation ({int(table['n'].iloc[0])} cases): untuned, LORO CV, in-sample bounds",
        )
    if args.write_weights:
        params = fit(Ranker(frame, SIGNALS), start_params(SIGNALS))
        note = (
            f"Signal weights and role priors fitted by `python -m cra.drivers.research.tune` on {frame['case_id'].nunique()} "
            "development cases\n(coordinate ascent on mean of Acc@1, Acc@5, MRR); task-type adjustments off "
            "(not fitted).\nCross-validated figures: out/tune/ablation.txt."
        )
        write_text_atomic(WEIGHTS_FILE, weights_toml(dict(zip(SIGNALS + PRIORS, params)), note))
        print(f"wrote {WEIGHTS_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
