"""Fitting the symbol-signal weights on a synthetic signal frame: the fit finds the signal that tells."""

from __future__ import annotations

import tomllib

import numpy as np
import pandas as pd
import pytest

from cra.dataflows.retrieval.symbol_signals import SYMBOL_SIGNALS
from cra.drivers.research import fit_symbol_weights as fit


def frame(n_cases: int = 12, n_symbols: int = 40, seed: int = 0) -> pd.DataFrame:
    """Cases whose gold symbol alone has mention = 1; every other signal is noise shared by all symbols."""
    rng = np.random.default_rng(seed)
    rows = []
    for case in range(n_cases):
        for i in range(n_symbols):
            gold = i == 7
            values = {s: rng.random() for s in SYMBOL_SIGNALS} | {"mention": 1.0 if gold else 0.0}
            rows.append(
                values
                | {
                    "symbol_id": i,
                    "file_id": 0,
                    "path": "a.py",
                    "qualified_name": f"f{i}",
                    "kind": "function",
                    "start_line": i,
                    "end_line": i + 1,
                    "body_tokens": 10,
                    "file_rank": 1,
                    "gold": gold,
                    "case_id": f"c{case}",
                    "repo": f"r{case % 3}",
                    "n_gold": 1,
                    "language": "python",
                }
            )
    return pd.DataFrame(rows)


def test_the_fit_weights_the_telling_signal_most_and_ranks_gold_first():
    data = frame()
    weights = fit.fitted_weights(data)
    assert max(weights, key=weights.get) == "mention"
    assert all(v >= 0 for v in weights.values())
    assert fit.ranking_metrics(data, weights)["hit@1"] == 1.0
    noise_only = dict.fromkeys(SYMBOL_SIGNALS, 0.0) | {"lexical": 1.0}
    assert fit.ranking_metrics(data, noise_only)["hit@1"] < 0.5


def test_report_has_hand_set_cross_validated_and_in_sample_rows():
    table = fit.report(frame())
    assert {"hand-set weights", "fitted, leave-one-repository-out", "fitted, in-sample (ceiling)"} <= set(table.index)
    assert table.loc["fitted, leave-one-repository-out", "hit@1"] == 1.0


def test_report_compares_a_shared_fit_with_each_languages_own_fit_on_the_same_held_out_repositories():
    """Go's gold alone has mention = 1, Rust's alone name = 1, and each carries the other's signal at 0.9 on a
    decoy: one shared fit cannot serve both, each language's own fit can."""
    go, rust = frame(n_cases=12, seed=1), frame(n_cases=12, seed=2)
    rust = rust.assign(
        name=rust["mention"],
        mention=0.0,
        case_id="rust-" + rust["case_id"],
        repo="rust-" + rust["repo"],
        language="rust",
    )
    for part, other in ((go, "name"), (rust, "mention")):
        part.loc[part["symbol_id"] == 3, other] = 0.9
    go = go.assign(name=np.where(go["symbol_id"] == 3, 0.9, 0.0), language="go")
    rust.loc[rust["symbol_id"] != 3, "mention"] = 0.0
    table = fit.report(pd.concat([go, rust], ignore_index=True))
    for language in ("go", "rust"):
        own, shared = table.loc[f"  {language}, its own fit LORO"], table.loc[f"  {language}, one shared fit LORO"]
        assert own["cases"] == shared["cases"] == 12
        assert own["hit@1"] == 1.0
    assert min(table.loc[f"  {language}, one shared fit LORO", "hit@1"] for language in ("go", "rust")) < 1.0


def test_write_weights_writes_a_toml_the_retriever_reads(tmp_path, monkeypatch):
    out = tmp_path / "symbols"
    out.mkdir()
    frame().to_parquet(out / "signals.parquet")
    target = tmp_path / "symbol_weights.toml"
    monkeypatch.setattr(fit, "WEIGHTS_FILE", target)
    assert fit.main(["--cases", "x", "--mirror", "x", "--out", str(out), "--reuse", "--write-weights"]) == 0
    written = tomllib.loads(target.read_text())["weights"]
    assert set(written) == set(SYMBOL_SIGNALS) and written["mention"] == max(written.values())
    assert (out / "report.txt").exists()


def test_mined_symbol_rows_are_fitted_without_cases_or_mirrors(tmp_path, monkeypatch, capsys):
    signals = tmp_path / "mined"
    (signals / "symbols").mkdir(parents=True)
    frame().to_parquet(signals / "symbols" / "1of1-0000.parquet")
    target = tmp_path / "symbol_weights.toml"
    monkeypatch.setattr(fit, "WEIGHTS_FILE", target)
    assert fit.main(["--signals", str(signals), "--out", str(tmp_path / "out"), "--write-weights"]) == 0
    assert "12 mined cases" in target.read_text() and "leave-one-repository-out" in capsys.readouterr().out


def test_without_signals_the_cases_and_mirrors_are_required(capsys):
    with pytest.raises(SystemExit):
        fit.main([])
    assert "--signals DIR" in capsys.readouterr().err
