"""The learned file ranker: mined signal collection, training and leave-repositories-out measurement,
the numpy evaluation of the shipped model, and its place in a request."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pandas as pd
import pytest

from cra.dataflows.retrieval.combination import file_roles
from cra.dataflows.retrieval.learned import (
    CANDIDATES,
    FEATURES,
    TreeModel,
    candidate_features,
    learned_order,
    lightgbm_spec,
)
from cra.dataflows.retrieval.signal_list import SIGNALS
from cra.drivers.common.errors import exit_code
from cra.drivers.research import learn_ranker, mined_signals
from cra.drivers.retrieval.retriever import read_tree_model
from tests.fixture_repo import make_repo

lightgbm = pytest.importorskip("lightgbm")  # the `dev` extra installs it


def _ranker(x: np.ndarray, y: np.ndarray, groups: list[int], **params):
    return lightgbm.LGBMRanker(
        objective="lambdarank", n_estimators=40, num_leaves=7, min_child_samples=5, verbose=-1, **params
    ).fit(x, y, group=groups)


def test_numpy_trees_score_exactly_as_lightgbm():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2000, 6))
    x[:, 5] = rng.integers(0, 3, size=2000)  # ties at split thresholds go left, as in LightGBM
    y = ((x[:, 0] + x[:, 1] * x[:, 2] > 0.5) | (x[:, 5] == 2)).astype(int)
    model = _ranker(x, y, [100] * 20)
    ours = TreeModel(lightgbm_spec(model.booster_.dump_model(), tuple("abcdef")))
    assert np.array_equal(ours.predict(x), model.predict(x))


def test_splits_the_numpy_evaluation_cannot_follow_are_refused():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(1000, 3))
    y = (x[:, 0] > 0).astype(int)
    x[::3, 0] = np.nan  # LightGBM then learns where missing values go
    model = _ranker(x, y, [50] * 20)
    with pytest.raises(ValueError, match="unsupported split"):
        lightgbm_spec(model.booster_.dump_model(), tuple("abc"))


def _prefers_tests() -> TreeModel:
    """A one-split model: test files score 1, everything else 0."""
    at = FEATURES.index("is_test")
    return TreeModel(
        {
            "features": list(FEATURES),
            "trees": [{"feature": [at], "threshold": [0.5], "left": [-1], "right": [-2], "leaf": [0.0, 1.0]}],
        }
    )


def _matrix(n: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    ids = pd.Index(range(n), name="file_id")
    paths = [f"tests/test_m{i}.py" if i % 10 == 9 else f"src/m{i}.py" for i in range(n)]
    totals = np.linspace(0.9, 0.0, n)
    matrix = pd.DataFrame(
        {"path": paths, **{s: totals for s in SIGNALS}, "prior": 1.0, "score": totals, "total": totals, "seed": False},
        index=ids,
    )
    files = pd.DataFrame(
        {
            "file_id": ids,
            "path": paths,
            "language": "python",
            "tokens": 100,
            "n_lines": 10,
            "commit_count": 1,
            "last_commit_time": 1_700_000_000,
            "is_test": [p.startswith("tests/") for p in paths],
        }
    )
    return matrix, files


def test_learned_order_reorders_the_best_files_and_hands_them_the_sums_totals():
    matrix, files = _matrix(CANDIDATES + 20)
    out = learned_order(matrix, files, "bug_fix", _prefers_tests(), file_roles(files))
    top = out.head(CANDIDATES)
    tests_among_top = [i for i in matrix.index[:CANDIDATES] if i % 10 == 9]
    assert list(top.index[: len(tests_among_top)]) == tests_among_top  # the model's choice first, else the sum's order
    assert np.allclose(
        np.sort(top["total"].to_numpy()), np.sort(matrix["total"].head(CANDIDATES).to_numpy()), atol=1e-6
    )
    assert (np.diff(out["total"].to_numpy()) <= 0).all()  # still best first by total, as scope sorts
    assert (
        list(out.index[CANDIDATES:]) == list(matrix.index[CANDIDATES:])
        and out["learned"].iloc[CANDIDATES:].isna().all()
    )


def test_a_model_reads_its_own_columns_whatever_features_came_since():
    matrix, files = _matrix(20)
    only_is_test = TreeModel(
        {
            "features": ["is_test"],
            "trees": [{"feature": [0], "threshold": [0.5], "left": [-1], "right": [-2], "leaf": [0.0, 1.0]}],
        }
    )
    out = learned_order(matrix, files, "bug_fix", only_is_test, file_roles(files))
    assert list(out.index[:2]) == [9, 19]  # its column 0 is is_test, not FEATURES[0]


def test_the_shipped_model_reads_only_features_that_requests_build():
    from cra.drivers.retrieval.retriever import default_file_ranker

    model = default_file_ranker()
    assert model is not None and set(model.features) <= set(FEATURES), set(model.features) - set(FEATURES)


def test_features_are_the_models_columns_and_carry_no_missing_values():
    matrix, files = _matrix(12)
    candidates = matrix.assign(
        language="rust", tokens=np.nan, n_lines=3, commit_count=0, age_days=np.nan, is_test=False, non_source=False
    )
    x = candidate_features(candidates, 500, "feature")
    assert tuple(x.columns) == FEATURES and not x.isna().any().any()
    assert x["lang_rust"].eq(1).all() and x["task_feature"].eq(1).all() and x["total_rank"].iloc[0] == 0.0


def test_a_request_uses_the_shipped_ranker_unless_the_user_sets_weights(tmp_path, monkeypatch):
    from cra.drivers.index.indexer import index_repository
    from cra.drivers.kb.store import default_kb_dir, load_kb
    from cra.drivers.retrieval import retriever

    repo = make_repo(tmp_path / "repo")
    index_repository(repo)
    kb = load_kb(default_kb_dir(repo))
    task = "Fix the login validation bug: validate_login accepts short passwords"
    monkeypatch.setattr(retriever, "default_file_ranker", _prefers_tests)
    learned = retriever.retrieve(kb, task, budget=4000).signal_matrix
    assert kb.files.set_index("path").loc[learned["path"].iloc[0], "is_test"]  # the model's pick leads
    assert learned["learned"].notna().any()
    own = retriever.retrieve(kb, task, budget=4000, weights={"lexical_match": 1.0}).signal_matrix
    assert "learned" not in own.columns


def test_verbose_retrieve_says_the_learned_ranker_ordered_the_files(tmp_path, monkeypatch, capsys):
    from cra.drivers.cli.main import main
    from cra.drivers.retrieval import retriever

    repo = make_repo(tmp_path / "repo")
    assert main(["index", str(repo)]) == 0
    monkeypatch.setattr(retriever, "default_file_ranker", _prefers_tests)
    capsys.readouterr()
    assert (
        main(["retrieve", "Fix validate_login for short passwords", "--repo", str(repo), "-v", "--budget", "2000"]) == 0
    )
    err = capsys.readouterr()
    text = err.out + err.err
    assert "order: the learned ranker" in text and "sum_rank" in text


def _mined_rows(n_cases: int, seed: int) -> pd.DataFrame:
    """Signal rows where the fix is the file on which two signals agree: no weighted sum finds it, trees do."""
    rng = np.random.default_rng(seed)
    frames = []
    for case in range(n_cases):
        n = 40
        frame = pd.DataFrame(rng.uniform(0.0, 0.6, size=(n, len(SIGNALS))), columns=list(SIGNALS))
        gold = int(rng.integers(n))
        frame.loc[gold, ["title_match", "history_match"]] = 0.55
        frame = frame.assign(
            path=[f"src/f{i}.py" for i in range(n)],
            seed=False,
            is_test=False,
            non_source=False,
            case_id=f"r{case % 6}-c{case}",
            repo=f"o/r{case % 6}",
            task_type="bug_fix",
            gold=np.arange(n) == gold,
            file_language="python",
            file_tokens=100.0,
            file_lines=10.0,
            commit_count=1.0,
            age_days=1.0,
            case_language="python",
            n_files=n,
        )
        frame["history_match"] = np.where(frame["gold"] | (rng.uniform(size=n) < 0.5), frame["history_match"], 0.0)
        frame.loc[~frame["gold"] & (frame["history_match"] > 0), "title_match"] = 0.0
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def test_training_measures_leave_repositories_out_and_writes_a_model_requests_can_read(tmp_path, monkeypatch, capsys):
    signals = tmp_path / "signals"
    (signals / "parts").mkdir(parents=True)
    _mined_rows(120, 0).to_parquet(signals / "parts" / "1of1-0000.parquet")
    model_file = tmp_path / "file_ranker.json"
    monkeypatch.setattr(learn_ranker, "MODEL_FILE", model_file)
    out = tmp_path / "out"
    assert learn_ranker.main(["--signals", str(signals), "--out", str(out), "--write-model"]) == 0
    table = pd.read_parquet(out / "comparison.parquet").set_index(["set", "language", "ranker"])
    assert (
        table.loc[("signals", "python", "learned"), "cases"]
        == 120
        == table.loc[("signals (no history)", "python", "learned"), "cases"]
    )
    assert table.loc[("all", "all", "learned"), "cases"] == 240
    assert (
        table.loc[("signals", "python", "learned"), "acc@1"]
        > table.loc[("signals", "python", "weighted sum"), "acc@1"] + 0.2
    )
    model = read_tree_model(model_file)
    assert model.features == FEATURES and len(model.feature) > 0
    assert "wrote" in capsys.readouterr().out


def test_a_case_in_two_signal_sets_counts_once_in_the_first(tmp_path):
    rows = _mined_rows(12, 1)
    for name in ("dev", "mined"):
        (tmp_path / name / "parts").mkdir(parents=True)
        rows.to_parquet(tmp_path / name / "parts" / "1of1-0000.parquet")
    candidates, cases = learn_ranker.signal_sets([tmp_path / "dev", tmp_path / "mined"], None, history_both_ways=False)
    assert len(cases) == 12 and set(cases["set"]) == {"dev"} and set(candidates["set"]) == {"dev"}
    assert len(candidates) == 12 * 40


def test_every_case_also_teaches_the_model_as_a_tree_without_git_history(tmp_path):
    (tmp_path / "dev" / "parts").mkdir(parents=True)
    _mined_rows(12, 1).to_parquet(tmp_path / "dev" / "parts" / "1of1-0000.parquet")
    candidates, cases = learn_ranker.signal_sets([tmp_path / "dev"], None)
    assert cases["set"].value_counts().to_dict() == {"dev": 12, "dev (no history)": 12}
    bare = candidates[candidates["set"] == "dev (no history)"]
    assert bare["case_id"].str.endswith("~no-history").all()
    assert (bare[["cochange_affinity", "recency", "history_match", "log_commits"]] == 0).all().all()
    assert (bare["log_age_days"] == -1).all()  # no history: no age
    assert (candidates.loc[candidates["set"] == "dev", "history_match"] > 0).any()
    assert cases.groupby("repo")["set"].nunique().eq(2).all()  # both copies of a repository share its fold


def _git(repo, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def test_collection_indexes_each_case_from_the_previous_tree_and_resumes(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CRA_CACHE", str(tmp_path / "cache"))
    repo = make_repo(tmp_path / "repo")
    mirror = tmp_path / "mirror"
    subprocess.run(["git", "clone", "-q", "--bare", str(repo), str(mirror / "ex+app" / "repo")], check=True)
    shas = _git(repo, "log", "--format=%H", "--reverse").split()
    cases = [
        {
            "instance_id": f"ex__app-{i}",
            "repo": "ex/app",
            "base_commit": shas[i - 1],
            "created_at": f"2024-01-0{i}",
            "problem_statement": "Fix LDAP login fallback for users without a name (#3)",
            "gold_files": ["app/auth/ldap.py"],
            "language": "python",
        }
        for i in (2, 3)
    ]
    case_file = tmp_path / "cases.jsonl"
    case_file.write_text("".join(json.dumps(c) + "\n" for c in cases))
    out = tmp_path / "signals"
    args = ["--cases", str(case_file), "--mirror", str(mirror), "--out", str(out)]
    assert mined_signals.main(args) == 0
    rows = mined_signals.read_signals(out)
    assert set(rows["case_id"]) == {"ex__app-2", "ex__app-3"}
    assert rows.groupby("case_id")["gold"].sum().eq(1).all()
    assert {"file_language", "file_tokens", "age_days", "case_language"} <= set(rows.columns)
    assert not any((tmp_path / "cache" / "trees").glob("ex+app@*"))  # the trees it extracted are gone
    parts = sorted((out / "parts").iterdir())
    assert mined_signals.main(args) == 0 and sorted((out / "parts").iterdir()) == parts  # nothing collected twice

    # the gold of a case derived again (one case gone, the other's fix in another file): relabelled, not collected
    other = rows.loc[(rows["case_id"] == "ex__app-3") & ~rows["gold"], "path"].iloc[0]
    stale = tmp_path / "stale.jsonl"  # the same case in two files: the later file's gold wins
    stale.write_text(json.dumps(cases[1]) + "\n")
    case_file.write_text(json.dumps(cases[1] | {"gold_files": [other]}) + "\n")
    assert mined_signals.main(["--relabel", "--cases", str(stale), str(case_file), "--out", str(out)]) == 0
    fresh = mined_signals.read_signals(out)
    assert set(fresh["case_id"]) == {"ex__app-3"} and fresh.loc[fresh["gold"], "path"].tolist() == [other]
    kept = rows[rows["case_id"] == "ex__app-3"].reset_index(drop=True)
    assert fresh.drop(columns="gold").equals(kept.drop(columns="gold"))
    symbols = mined_signals.read_signals(out, "symbols")
    assert set(symbols["case_id"]) == {"ex__app-3"} and not symbols["gold"].any() and (symbols["n_gold"] == 0).all()
    assert exit_code(mined_signals.main, ["--cases", str(case_file), "--out", str(out)]) == 2  # collecting: no mirror
    assert capsys.readouterr().err.splitlines()[-1].startswith("error: collecting needs the git mirrors: pass --mirror")


def test_shards_split_the_cases_without_overlap():
    cases = pd.DataFrame(
        {
            "case_id": [f"c{i}" for i in range(30)],
            "repo": [f"r{i % 4}" for i in range(30)],
            "created_at": [f"2024-01-{i + 1:02d}" for i in range(30)],
        }
    )
    shards = [mined_signals.chosen_cases(cases, 5, (k, 2)) for k in (1, 2)]
    ids = [set(s["case_id"]) for s in shards]
    assert not ids[0] & ids[1] and len(ids[0] | ids[1]) == 20  # the newest 5 of each of 4 repositories
    assert all(s.groupby("repo")["created_at"].apply(lambda d: d.is_monotonic_increasing).all() for s in shards)


def test_the_learning_curve_trains_on_growing_shares_of_other_repositories_then_in_sample(tmp_path):
    signals = tmp_path / "signals"
    (signals / "parts").mkdir(parents=True)
    rows = _mined_rows(120, 0)
    rows.loc[rows["repo"].isin(["o/r0", "o/r1"]), "case_language"] = "rust"
    rows.to_parquet(signals / "parts" / "1of1-0000.parquet")
    out = tmp_path / "out"
    assert learn_ranker.main(["--signals", str(signals), "--out", str(out), "--history-only", "--learning-curve"]) == 0
    by_language = pd.read_parquet(out / "learning_curve.parquet")
    curve = by_language[(by_language["set"] == "all") & (by_language["language"] == "all")]
    assert list(curve["training"]) == [
        "25% of the other folds",
        "50% of the other folds",
        "100% of the other folds",
        "in-sample (every case)",
    ]
    # six repositories in five folds: a held-out fold's model learns from 1, then 2, then all 4-5 others
    assert list(curve["training_cases"]) == sorted(curve["training_cases"]) and curve["training_cases"].iloc[0] < 60
    assert curve["training_cases"].iloc[-1] == 120
    full = pd.read_parquet(out / "comparison.parquet").set_index(["set", "language", "ranker"])
    assert curve["acc@1"].iloc[2] == full.loc[("all", "all", "learned"), "acc@1"]  # same folds as the comparison
    assert curve["acc@1"].iloc[-1] >= curve["acc@1"].iloc[2]
    assert (out / "ceiling.parquet").is_file()
    # per language too, so a language's gap can be told apart from what its features can express at all
    languages = by_language[(by_language["set"] != "all") & (by_language["language"] != "all")]
    assert set(languages["language"]) == {"python", "rust"} and set(languages["cases"]) == {40, 80}
    for training, part in languages.groupby("training"):
        pooled = (part["acc@5"] * part["cases"]).sum() / part["cases"].sum()
        assert abs(pooled - curve.set_index("training").loc[training, "acc@5"]) < 0.01


def test_the_ceiling_bounds_acc1_by_the_one_file_share_and_splits_misses():
    cases = pd.DataFrame(
        {"set": ["s"] * 4, "sum_gold_ranks": [np.array([1]), np.array([3]), np.array([1, 2]), np.array([2, 40])]},
        index=["a", "b", "c", "d"],
    )
    learned = pd.Series({"a": np.array([1]), "b": np.array([7]), "c": np.array([1, 2]), "d": np.array([1, 40])})
    row = learn_ranker.ceiling(cases, learned).set_index("set").loc["s"]
    assert row["one_file_share"] == 0.5 and row["acc@1 one-file"] == 0.5 and row["acc@5 one-file"] == 0.5
    assert row["acc@5 multi-file"] == 0.5
    assert row["misses@5 at 6-10"] == 0.5 and row["misses@5 at 11-100"] == 0.5  # b at 7, d's worst at 40
    assert row["acc@1 top-10 reordered"] == 0.5 and row["acc@5 top-10 reordered"] == 0.75


def test_signals_never_collected_are_one_clear_error(tmp_path, capsys):
    from cra.drivers.common.errors import exit_code

    assert exit_code(learn_ranker.main, ["--signals", str(tmp_path / "none"), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith("error: No signal rows under")
        and "cra.drivers.research.mined_signals" in err
        and "Traceback" not in err
    )
    assert not (tmp_path / "out").exists()


def test_symbol_parts_collected_before_a_signal_existed_read_it_as_zero_and_say_so(tmp_path, capsys):
    (tmp_path / "symbols").mkdir()
    pd.DataFrame({"case_id": ["a"], "lexical": [0.5], "gold": [True]}).to_parquet(tmp_path / "symbols" / "0.parquet")
    rows = mined_signals.read_signals(tmp_path, "symbols")
    assert rows.at[0, "title"] == 0.0 and rows.at[0, "lexical"] == 0.5
    assert "no title" in capsys.readouterr().err
