"""The weight fitting of `cra.drivers.research.tune` on synthetic signal rows: it finds the signal that predicts the fix."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from cra.dataflows.retrieval.signal_list import SIGNALS
from cra.drivers.common.errors import CraError
from cra.drivers.research import tune
from cra.drivers.retrieval.retriever import load_weights, retrieve


def synthetic_rows(n_cases: int = 24, n_files: int = 30, seed: int = 0) -> pd.DataFrame:
    """Cases over 3 repositories where `history_match` ranks the gold file first and every other signal is noise."""
    rng = np.random.default_rng(seed)
    frames = []
    for case in range(n_cases):
        values = rng.uniform(0.0, 1.0, size=(n_files, len(SIGNALS)))
        frame = pd.DataFrame(values, columns=list(SIGNALS))
        gold = rng.integers(n_files)
        frame["history_match"] = rng.uniform(0.0, 0.5, size=n_files)
        frame.loc[gold, "history_match"] = 1.0
        frame = frame.assign(
            path=[f"f{i}.py" for i in range(n_files)],
            seed=False,
            is_test=False,
            non_source=False,
            case_id=f"c{case}",
            repo=f"r{case % 3}",
            task_type="bug_fix",
            gold=False,
        )
        frame.loc[gold, "gold"] = True
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def test_fit_puts_the_weight_on_the_predictive_signal_and_cross_validation_confirms_it():
    rows = synthetic_rows()
    untuned = tune.Ranker(rows, SIGNALS).metrics(tune.start_params(SIGNALS))
    params = tune.fit(tune.Ranker(rows, SIGNALS), tune.start_params(SIGNALS))
    weights = dict(zip(SIGNALS, params))
    assert max(weights, key=weights.get) == "history_match"
    assert tune.Ranker(rows, SIGNALS).metrics(params)["acc@1"] == 1.0 > untuned["acc@1"]
    cv = tune.cross_validated(rows, SIGNALS)  # fitted on 16 cases, scored on the other 8, three times
    assert cv["n"] == 24 and cv["acc@1"] >= 0.9 > untuned["acc@1"]
    assert tune.cross_validated_by_task_type(rows, SIGNALS)["acc@1"] >= 0.9


def test_per_repository_in_sample_fit_bounds_what_one_shared_weighting_can_reach():
    rows = synthetic_rows(n_cases=18)
    other = rows["repo"] == "r1"  # in this repository title_match marks the fix and history_match is noise
    rows.loc[other, ["history_match", "title_match"]] = rows.loc[other, ["title_match", "history_match"]].to_numpy()
    per_repository = tune.in_sample(rows, SIGNALS, per_repository=True)
    assert per_repository["acc@1"] == 1.0 and per_repository["n"] == 18
    assert tune.cross_validated(rows, SIGNALS)["acc@1"] <= tune.in_sample(rows, SIGNALS)["acc@1"] < 1.0


def test_fitted_weights_file_loads_back_as_the_default_profile_format(tmp_path):
    params = dict(
        zip(SIGNALS + tune.PRIORS, tune.fit(tune.Ranker(synthetic_rows(), SIGNALS), tune.start_params(SIGNALS)))
    )
    path = tmp_path / "weights.toml"
    path.write_text(tune.weights_toml(params, "fitted on synthetic rows"))
    loaded = load_weights(path)
    assert set(loaded) == set(SIGNALS) | set(tune.PRIORS)
    assert loaded["history_match"] == round(params["history_match"], 4)


def test_reused_signal_rows_give_the_ablation_as_text_parquet_and_plot(tmp_path):
    synthetic_rows(n_cases=6, n_files=8).to_parquet(tmp_path / "signals.parquet", index=False)
    assert tune.main(["--cases", "unused.jsonl", "--mirror", "unused", "--out", str(tmp_path), "--reuse"]) == 0
    table = pd.read_parquet(tmp_path / "ablation.parquet")
    assert "all signals, learned (LORO CV)" in set(table["configuration"])
    assert table["n"].eq(6).all() and table["acc@5"].between(0, 1).all()
    assert "acc@5" in (tmp_path / "ablation.txt").read_text() and (tmp_path / "ablation.png").stat().st_size > 0


@pytest.mark.parametrize(
    ("weights", "message"),
    [
        ({"bm25": 0.5}, "unknown signal weight(s) ['bm25']; valid names: path_match"),
        ({"lexical_match": -1}, "non-negative numbers"),
        ({"test_file_prior": "high"}, "non-negative numbers"),
    ],
)
def test_bad_weights_are_one_user_error_from_a_file_and_from_retrieve(tmp_path, weights, message):
    path = tmp_path / "weights.toml"
    path.write_text("".join(f"{name} = {value!r}\n" for name, value in weights.items()).replace("'", '"'))
    with pytest.raises(CraError, match=re.escape(f"Weights file {path}: ") + ".*" + re.escape(message)):
        load_weights(path)
    with pytest.raises(CraError, match=re.escape(message)):
        retrieve(object(), "fix the parser", weights=weights)  # rejected before the KB is read
