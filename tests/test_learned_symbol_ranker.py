"""The learned symbol ranker's measurement: trained on other repositories' cases of every signal set,
measured on the first set's cases only, each case once."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cra.dataflows.retrieval.symbol_signals import SYMBOL_SIGNALS
from cra.drivers.research import learn_symbol_ranker

pytest.importorskip("lightgbm")  # the `dev` extra installs it


def _symbol_rows(n_cases: int, seed: int, prefix: str) -> pd.DataFrame:
    """Cases whose gold symbol is the one with a tiny body (what no linear signal says; the signals are noise)."""
    rng = np.random.default_rng(seed)
    frames = []
    for case in range(n_cases):
        n = 40
        gold = int(rng.integers(n))
        frame = pd.DataFrame(rng.uniform(0.0, 0.6, size=(n, len(SYMBOL_SIGNALS))), columns=list(SYMBOL_SIGNALS))
        frame = frame.assign(
            symbol_id=range(n),
            file_id=np.arange(n) // 8,
            path=[f"src/f{i // 8}.py" for i in range(n)],
            qualified_name=[f"f{i}" for i in range(n)],
            kind="function",
            start_line=np.arange(n) * 10 + 1,
            end_line=np.arange(n) * 10 + 9,
            file_rank=np.arange(n) // 8 + 1,
            body_tokens=np.where(np.arange(n) == gold, 7, rng.integers(100, 1000, size=n)),
            gold=np.arange(n) == gold,
            case_id=f"{prefix}-r{case % 6}-c{case}",
            repo=f"o/r{case % 6}",
            n_gold=1,
            language="python",
        )
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def _signal_dir(path, rows: pd.DataFrame):
    (path / "symbols").mkdir(parents=True)
    rows.to_parquet(path / "symbols" / "1of1-0000.parquet")
    return path


def test_the_learned_symbol_ranker_is_measured_leave_repositories_out_on_the_first_set(tmp_path, capsys):
    dev = _symbol_rows(30, 0, "dev")
    mined = pd.concat([_symbol_rows(90, 1, "mined"), dev.iloc[: 40 * 5]])  # five development cases mined too
    out = tmp_path / "out"
    argv = [
        "--signals",
        str(_signal_dir(tmp_path / "dev", dev)),
        str(_signal_dir(tmp_path / "mined", mined)),
        "--out",
        str(out),
    ]
    assert learn_symbol_ranker.main(argv) == 0
    table = pd.read_parquet(out / "comparison.parquet").set_index(["language", "ranker"])
    assert table.loc[("all", "learned"), "cases"] == 30 == table.loc[("all", "linear"), "cases"]
    assert table.loc[("all", "learned"), "hit@1"] > table.loc[("all", "linear"), "hit@1"] + 0.5
    assert "learned" in capsys.readouterr().out


def test_a_fold_is_never_trained_on_its_own_repositories(monkeypatch):
    rows = learn_symbol_ranker.symbol_candidates(_symbol_rows(30, 2, "dev"), {s: 1.0 for s in SYMBOL_SIGNALS})
    seen = []

    class Spy:
        def __init__(self, **params):
            self.params = params

        def fit(self, x, y, group):
            seen.append(len(x))
            return self

        def predict(self, x):
            return np.zeros(len(x))

    import lightgbm

    monkeypatch.setattr(lightgbm, "LGBMRanker", Spy)
    score = learn_symbol_ranker.cross_validated(rows, set(rows["case_id"]))
    fold_of = learn_symbol_ranker.repository_folds(rows.drop_duplicates("case_id").set_index("case_id")["repo"])
    fold = rows["repo"].map(fold_of)
    assert score.notna().all()
    teaching = rows.groupby("case_id")["gold"].transform("any")  # a case whose gold is not a candidate teaches nothing
    assert seen == [int(((fold != k) & teaching).sum()) for k in range(learn_symbol_ranker.FOLDS)]  # other folds only
