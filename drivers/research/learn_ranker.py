"""Train and measure the learned file ranker on mined signals (extra `tune`: LightGBM, scikit-learn).

    python -m cra.drivers.research.learn_ranker --signals DIR [DIR ...] [--write-model]

Each DIR is a `cra.drivers.research.mined_signals` output (the mined training set; the development sets collected the same way).
Leave-repositories-out over all of them: the repositories are dealt into FOLDS groups; each group is ranked by a
model trained on the others. Printed per signal set and language beside the shipped weighted sum on the same
cases, with the share of cases whose gold files are all among the sum's CANDIDATES best (no re-ordering can bring
the others in), and where the learned order's misses are (`ceiling`). Every case is used twice, as collected and
as a tree without git history would give it (unless --history-only), so one model serves both kinds of checkout.
`--write-model` trains on every case and writes data/models/file_ranker.json. `--learning-curve` also measures, on
the same folds, models trained on a growing share of the other folds' repositories and one trained and measured on
every case (what the features can express at all), per set and language: whether more mined fixes, or more
evidence per file, is what a gap needs. Tables go to OUT as Parquet and a plot.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from cra.dataflows.evaluation.metrics import rank_metrics
from cra.dataflows.retrieval.learned import CANDIDATES, FEATURES, TreeModel, candidate_features, lightgbm_spec
from cra.dataflows.retrieval.ranking import effective_weights, file_scores, role_prior
from cra.dataflows.retrieval.signal_list import DEFAULT_PRIORS, DEFAULT_WEIGHTS, SIGNALS
from cra.drivers.common.errors import CraError, exit_code
from cra.drivers.common.output import write_bytes_atomic, write_text_atomic
from cra.drivers.common.shipped import shipped_path
from cra.drivers.research.figures import parquet_bytes, write_bar_chart
from cra.drivers.research.tune import case_means

MODEL_FILE = shipped_path("models", "file_ranker.json")
FOLDS = 5
SHARES = (0.25, 0.5, 1.0)  # of the other folds' repositories, for --learning-curve
HISTORY_SIGNALS = ("cochange_affinity", "recency", "history_match")  # 0 for every file of a tree without git history
PARAMS = dict(
    objective="lambdarank",
    n_estimators=200,
    learning_rate=0.05,
    num_leaves=7,
    min_child_samples=100,
    subsample=0.8,
    subsample_freq=1,
    colsample_bytree=0.8,
    lambdarank_truncation_level=20,
    verbose=-1,
)


def _linear(case: pd.DataFrame, weights: np.ndarray, priors: tuple[float, float]) -> pd.DataFrame:
    """One case's rows best first by the shipped weighted sum, with its `total` and `score`."""
    values = case[list(SIGNALS)].to_numpy(float)
    prior = role_prior(case["is_test"].to_numpy(bool), case["non_source"].to_numpy(bool), *priors)
    score, total = file_scores(
        values, effective_weights(weights, (values > 0).any(axis=0)), prior, case["seed"].to_numpy(bool)
    )
    ranked = case.assign(score=score, total=total)
    return ranked.sort_values(["total", "score", "path"], ascending=[False, False, True], kind="stable")


def case_candidates(frame: pd.DataFrame, profile: dict | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(candidate rows with features, gold, case and rank by the sum; per case: language, gold count, and the
    sum's ranks of its gold files) for every case that has gold files."""
    profile = profile or {}
    configured = {**DEFAULT_WEIGHTS, **profile.get("weights", {})}
    weights = np.array([configured.get(s, 0.0) for s in SIGNALS])
    priors_map = {**DEFAULT_PRIORS, **profile.get("priors", {})}
    priors = (priors_map["test_file_prior"], priors_map["non_source_prior"])
    rows, cases = [], []
    for case_id, case in frame.groupby("case_id", sort=True):
        if not case["gold"].any():
            continue
        ranked = _linear(case, weights, priors)
        gold_ranks = np.flatnonzero(ranked["gold"].to_numpy(bool)) + 1
        top = ranked.head(CANDIDATES).rename(
            columns={"file_language": "language", "file_tokens": "tokens", "file_lines": "n_lines"}
        )
        features = candidate_features(top, int(case["n_files"].iloc[0]), str(case["task_type"].iloc[0]))
        rows.append(
            features.assign(
                case_id=case_id,
                path=top["path"].to_numpy(),
                gold=top["gold"].to_numpy(bool),
                sum_rank=np.arange(1, len(top) + 1),
            )
        )
        cases.append(
            {
                "case_id": case_id,
                "repo": case["repo"].iloc[0],
                "language": case["case_language"].iloc[0],
                "sum_gold_ranks": gold_ranks,
            }
        )
    return pd.concat(rows, ignore_index=True), pd.DataFrame(cases).set_index("case_id")


def _metrics(gold_ranks: list[np.ndarray]) -> dict[str, float]:
    return case_means([rank_metrics(r, len(r)) for r in gold_ranks])


def reranked_gold(candidates: pd.DataFrame, cases: pd.DataFrame, score: np.ndarray) -> pd.Series:
    """Per case, the ranks of its gold files once the candidates are ordered by `score` (ties pessimistic; gold
    files beyond the candidates keep the sum's rank)."""
    frame = candidates[["case_id", "gold"]].assign(score=score)
    frame["rank"] = frame.groupby("case_id")["score"].rank(ascending=False, method="max")
    inside = frame[frame["gold"]].groupby("case_id")["rank"].apply(lambda r: r.to_numpy())
    out = {}
    for case_id, sum_ranks in cases["sum_gold_ranks"].items():
        beyond = sum_ranks[sum_ranks > CANDIDATES]
        out[case_id] = np.sort(np.concatenate([inside.get(case_id, np.array([])), beyond]))
    return pd.Series(out)


def train(candidates: pd.DataFrame):
    """A LightGBM lambdarank model over candidate features (cases without a gold candidate teach nothing)."""
    import lightgbm

    useful = candidates[candidates.groupby("case_id")["gold"].transform("any")]
    groups = useful.groupby("case_id", sort=False).size().to_numpy()
    model = lightgbm.LGBMRanker(**PARAMS, random_state=0)
    return model.fit(useful[list(FEATURES)].to_numpy(float), useful["gold"].astype(int).to_numpy(), group=groups)


def repository_folds(repos: pd.Series) -> dict[str, int]:
    """Repository -> fold, dealt round-robin by case count so folds are about even."""
    order = repos.value_counts().sort_index(kind="stable").sort_values(ascending=False, kind="stable").index
    return {repo: i % FOLDS for i, repo in enumerate(order)}


def cross_validated(candidates: pd.DataFrame, cases: pd.DataFrame) -> pd.Series:
    """Learned gold ranks of every case from the model of the folds its repository is not in."""
    fold_of = repository_folds(cases["repo"])
    case_fold = cases["repo"].map(fold_of)
    row_fold = candidates["case_id"].map(case_fold).to_numpy()
    score = np.zeros(len(candidates))
    for fold in range(FOLDS):
        held = row_fold == fold
        model = train(candidates[~held])
        score[held] = model.predict(candidates.loc[held, list(FEATURES)].to_numpy(float))
        print(f"fold {fold + 1}/{FOLDS}: {int(case_fold.eq(fold).sum())} held-out cases", file=sys.stderr, flush=True)
    return reranked_gold(candidates, cases, score)


def learning_curve(candidates: pd.DataFrame, cases: pd.DataFrame, shares: tuple[float, ...] = SHARES) -> pd.DataFrame:
    """Acc@1/5/10 and MRR per signal set and language (and overall) of every case ranked by models trained on a share
    of the other folds' repositories (drawn once, in a fixed random order, so a larger share holds the smaller), then
    in-sample: trained on every case, what these features can express at all for each language."""
    fold_of = repository_folds(cases["repo"])
    order = list(np.random.default_rng(0).permutation(sorted(fold_of)))
    row_repo = candidates["case_id"].map(cases["repo"]).to_numpy()
    row_fold = pd.Series(row_repo).map(fold_of).to_numpy()
    x = candidates[list(FEATURES)].to_numpy(float)
    rows = []
    for share in (*shares, None):
        score, trained = np.zeros(len(candidates)), []
        for fold in range(FOLDS) if share else [None]:
            others = [r for r in order if fold_of[r] != fold]
            chosen = np.isin(row_repo, others[: max(1, round(share * len(others)))] if share else others)
            trained.append(int(cases["repo"].isin(set(row_repo[chosen])).sum()))
            model = train(candidates[chosen])
            held = row_fold == fold if share else np.ones(len(candidates), bool)
            score[held] = model.predict(x[held])
        gold = reranked_gold(candidates, cases, score)
        label = f"{share:.0%} of the other folds" if share else "in-sample (every case)"
        for (signal_set, language), group in _set_language_groups(cases):
            m = _metrics(list(gold.reindex(group.index)))
            rows.append(
                {
                    "training": label,
                    "training_cases": int(np.mean(trained)),
                    "set": signal_set,
                    "language": language,
                    "cases": m["n"],
                    **{k: round(m[k], 3) for k in ("acc@1", "acc@5", "acc@10", "mrr")},
                }
            )
        print(f"learning curve: {rows[-1]}", file=sys.stderr, flush=True)
    return pd.DataFrame(rows)


def _set_language_groups(cases: pd.DataFrame) -> list[tuple[tuple[str, str], pd.DataFrame]]:
    """((set, language), cases) for every language of every signal set, each set as a whole, and all cases."""
    groups = [
        ((s, lang), g)
        for s, by_set in cases.groupby("set", sort=False)
        for lang, g in [*by_set.groupby("language"), ("all", by_set)]
    ]
    return [*groups, (("all", "all"), cases)]


def comparison(cases: pd.DataFrame, learned: pd.Series) -> pd.DataFrame:
    """Per signal set and language, and overall: the weighted sum's and the learned ranker's Acc@1/5/10 and MRR on
    the same cases."""
    rows = []
    for (signal_set, language), group in _set_language_groups(cases):
        reach = np.mean([r.max() <= CANDIDATES for r in group["sum_gold_ranks"]])
        for name, ranks in (("weighted sum", group["sum_gold_ranks"]), ("learned", learned.reindex(group.index))):
            m = _metrics(list(ranks))
            rows.append(
                {
                    "set": signal_set,
                    "language": language,
                    "ranker": name,
                    "cases": m["n"],
                    "repos": group["repo"].nunique(),
                    **{k: round(m[k], 3) for k in ("acc@1", "acc@5", "acc@10", "mrr")},
                    "gold_in_candidates": round(float(reach), 3),
                }
            )
    return pd.DataFrame(rows)


def ceiling(cases: pd.DataFrame, learned: pd.Series) -> pd.DataFrame:
    """Per signal set, where the learned order's misses are: Acc@1 can credit one-file fixes only (Acc@k needs every
    gold file in the top k), so their share bounds it; Acc@1/5 on one-file and multi-file fixes apart; the Acc@5
    misses by where their worst gold file is; and what a perfect re-ordering of the ten best would reach."""
    rows = []
    for signal_set, group in [*cases.groupby("set", sort=False), ("all", cases)]:
        n_gold = group["sum_gold_ranks"].map(len)
        worst = learned.reindex(group.index).map(lambda r: r.max())
        one = n_gold.eq(1)
        miss = worst[worst > 5]
        rows.append(
            {
                "set": signal_set,
                "cases": len(group),
                "one_file_share": one.mean(),
                "acc@1 one-file": worst[one].le(1).mean(),
                "acc@5 one-file": worst[one].le(5).mean(),
                "acc@5 multi-file": worst[~one].le(5).mean(),
                "misses@5 at 6-10": miss.between(6, 10).mean(),
                "misses@5 at 11-100": miss.between(11, 100).mean(),
                "misses@5 beyond 100": miss.gt(100).mean(),
                "acc@1 top-10 reordered": (worst.le(10) & one).mean(),
                "acc@5 top-10 reordered": (worst.le(10) & n_gold.le(5)).mean(),
            }
        )
    return pd.DataFrame(rows).round(3)


def without_history(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows as a tree without git history would give them (an unpacked archive, a shallow copy): the history
    signals 0, no commits, no age; each case renamed `<id>~no-history`. (partner_affinity keeps its co-change
    part: redoing it needs the KB.)"""
    return frame.assign(
        **dict.fromkeys(HISTORY_SIGNALS, 0.0),
        commit_count=0.0,
        age_days=np.nan,
        case_id=frame["case_id"].astype(str) + "~no-history",
    )


def signal_sets(
    directories: list[Path], profile: dict | None, history_both_ways: bool = True
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """`case_candidates` of several signal directories, each case labelled with its directory's name (`set`); a case
    in several (a mined commit that is also a development case) counts in the first. history_both_ways: every case
    also appears without its history (`without_history`, set `<name> (no history)`), so the model ranks trees with
    and without git history alike; its folds keep both copies of a repository together."""
    from cra.drivers.research.mined_signals import read_signals

    named = []
    for d in directories:
        frame = read_signals(d)
        if frame.empty:
            raise CraError(
                f"No signal rows under {d / 'parts'}: collect them first "
                f"(python -m cra.drivers.research.mined_signals --mirror DIR --out {d})."
            )
        named.append((d.name, frame))
        if history_both_ways:
            named.append((f"{d.name} (no history)", without_history(frame)))
    parts = [case_candidates(frame, profile) for _, frame in named]
    candidates = pd.concat([c.assign(set=name) for (c, _), (name, _) in zip(parts, named)], ignore_index=True)
    cases = pd.concat([k.assign(set=name) for (_, k), (name, _) in zip(parts, named)])
    cases = cases[~cases.index.duplicated()]
    kept = candidates["set"].to_numpy() == cases["set"].reindex(candidates["case_id"]).to_numpy()
    return candidates[kept], cases


def main(argv: list[str] | None = None) -> int:
    from cra.drivers.research.mined_signals import default_dir
    from cra.drivers.retrieval.retriever import default_weight_profile

    parser = argparse.ArgumentParser(
        prog="python -m cra.drivers.research.learn_ranker", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--signals",
        nargs="+",
        default=[str(default_dir())],
        help="python -m cra.drivers.research.mined_signals --out DIR",
    )
    parser.add_argument("--out", default="out/learned_ranker")
    parser.add_argument("--write-model", action="store_true", help=f"write {MODEL_FILE}")
    parser.add_argument(
        "--history-only",
        action="store_true",
        help="train and measure on the cases as collected, without their copies that lack git history",
    )
    parser.add_argument(
        "--learning-curve",
        action="store_true",
        help="also measure models trained on a growing share of the repositories, and in-sample",
    )
    args = parser.parse_args(argv)
    profile = default_weight_profile()
    started = time.perf_counter()
    candidates, cases = signal_sets([Path(d) for d in args.signals], profile, not args.history_only)
    print(
        f"{len(cases)} cases from {cases['repo'].nunique()} repositories, {len(candidates)} candidate rows "
        f"({time.perf_counter() - started:.0f} s)",
        file=sys.stderr,
    )
    out = Path(args.out)
    learned = cross_validated(candidates, cases)
    result = comparison(cases, learned)
    write_bytes_atomic(out / "comparison.parquet", parquet_bytes(result))
    write_bar_chart(
        result.pivot_table(index=["set", "language"], columns="ranker", values="acc@5", sort=False),
        out / "comparison.png",
        "Learned ranker against the weighted sum",
        "file Acc@5",
    )
    print(result.to_string(index=False))
    limits = ceiling(cases, learned)
    write_bytes_atomic(out / "ceiling.parquet", parquet_bytes(limits))
    print(limits.set_index("set").T.to_string())
    if args.learning_curve:
        curve = learning_curve(candidates, cases)
        write_bytes_atomic(out / "learning_curve.parquet", parquet_bytes(curve))
        overall = curve[(curve["set"] == "all") & (curve["language"] == "all")].set_index("training")
        write_bar_chart(
            overall[["acc@1", "acc@5", "acc@10"]],
            out / "learning_curve.png",
            "Learned ranker by training data (leave-repositories-out; last: in-sample)",
        )
        print("learning curve, Acc@5 per set and language by training data (last column: in-sample)")
        print(curve.pivot_table(index=["set", "language"], columns="training", values="acc@5", sort=False).to_string())
    if args.write_model:
        model = train(candidates)
        trained_on = {
            "cases": len(cases),
            "repositories": int(cases["repo"].nunique()),
            "sets": {k: int(v) for k, v in cases["set"].value_counts().sort_index().items()},
            "written": time.strftime("%Y-%m-%d", time.gmtime()),
        }
        spec = {"trained_on": trained_on, **lightgbm_spec(model.booster_.dump_model(), FEATURES)}
        x = candidates[list(FEATURES)].to_numpy(float)[:2000]
        if not np.allclose(TreeModel(spec).predict(x), model.predict(x), atol=1e-9):
            raise SystemExit("the numpy evaluation of the model differs from LightGBM's: model not written")
        write_text_atomic(MODEL_FILE, json.dumps(spec, separators=(",", ":")))
        print(f"wrote {MODEL_FILE} ({MODEL_FILE.stat().st_size // 1024} KiB, {len(spec['trees'])} trees)")
    return 0


if __name__ == "__main__":
    sys.exit(exit_code(main))
