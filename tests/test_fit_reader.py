"""The one-sitting reader fit (issue 57, `cra.drivers.research.fit_reader`): its splits, its tokens built as requests
build them, and its compact weights (torch only where installed: the reader venv)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cra.dataflows.retrieval.reader import pair_ids
from cra.drivers.research.fit_reader import Tokens, validation_repos
from tests.test_reader_model import _tokenizer


def test_the_validation_split_is_one_training_repository_per_language_and_the_same_every_time():
    languages = {"a/go1": "go", "b/go2": "go", "c/py1": "python", "d/py2": "python", "e/rs": "rust"}
    chosen = validation_repos(list(languages), languages)
    assert sorted(languages[r] for r in chosen) == ["go", "python", "rust"]
    assert validation_repos(list(reversed(languages)), languages) == chosen


def test_training_rows_are_tokenised_as_requests_tokenise_them_at_any_length():
    tokenizer = _tokenizer()
    pairs = pd.DataFrame(
        {
            "query": ["parse retry after headers", "parse retry after headers", "login form users"],
            "passage": ["def parse_retry_after(headers): return none", "class invoice total", "export form"],
        }
    )
    tokens = Tokens(tokenizer, pairs)
    for length in (8, 16, 64):
        for rows in ([0, 1], [2]):
            theirs = pair_ids(tokenizer, pairs["query"].iat[rows[0]], pairs["passage"].iloc[rows].tolist(), length)
            for ours, expected in zip(tokens.batch(rows, length), theirs):
                assert np.array_equal(ours, expected)


def test_compact_weights_come_back_within_int8_error_from_chunks(tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")  # the reader venv
    from cra.drivers.research import fit_reader

    monkeypatch.setattr(fit_reader, "CHUNK", 1000)
    state = {
        fit_reader.EMBEDDINGS: torch.randn(50, 8),
        "bert.encoder.layer.0.attention.self.query.weight": torch.randn(8, 8),
        "bert.embeddings.position_ids": torch.arange(16)[None],
    }
    paths = fit_reader.write_chunks(state, tmp_path / "m.pt")
    assert len(paths) > 1 and all(p.stat().st_size <= 1000 for p in paths)
    back = fit_reader.read_chunks(tmp_path / "m.pt")
    assert set(back) == set(state)
    emb = state[fit_reader.EMBEDDINGS]
    assert (back[fit_reader.EMBEDDINGS] - emb).abs().max() <= emb.abs().amax(1).max() / 127
    assert torch.equal(back["bert.embeddings.position_ids"], state["bert.embeddings.position_ids"])


def test_packed_pairs_are_the_pairs_read_back_as_one_folder(tmp_path):
    from cra.drivers.research.fit_reader import main
    from cra.drivers.research.train_reader import read_pairs

    parts = tmp_path / "pairs" / "signals"
    parts.mkdir(parents=True)
    rows = pd.DataFrame(
        {"case_id": ["a", "a", "b", "b"], "kind": ["file"] * 4, "key": ["x.py", "y.py", "x.py", "z.py"],
         "repo": ["o/r"] * 4, "query": ["q1", "q1", "q2", "q2"], "passage": ["p1", "p2", "p1", "p3"],
         "gold": [True, False, False, True], "rank": np.arange(1, 5, dtype=np.int32)}
    )  # fmt: skip
    rows.iloc[:3].to_parquet(parts / "1of2-0000.parquet")
    rows.iloc[2:].to_parquet(parts / "2of2-0000.parquet")  # (row 2 twice: parts may overlap)
    assert main(["--pairs", str(tmp_path / "pairs"), "--pack", str(tmp_path / "packed")]) == 0
    packed = read_pairs(tmp_path / "packed")
    pd.testing.assert_frame_equal(packed, rows)
    assert [p.name for p in (tmp_path / "packed").rglob("*") if p.is_file()] == ["all.parquet"]
