"""A lexicon with an edit's docs layered over it answers every query with the floats of the lexicon built from the
new rows, and tells the same document frequencies."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from cra.dataflows.lexical import ARRAYS, Bm25Index
from cra.dataflows.lexicon_layers import LayeredIndex
from cra.drivers.index.indexer import index_repository
from cra.drivers.kb import store
from cra.drivers.kb.store import live_version, load_kb
from tests.fixture_repo import make_repo
from tests.kb_compare import compare_kbs
from tests.test_incremental_kb import RUN_STATS, _answers
from tests.test_incremental_kb import _edit as _edit_repo


def _terms(docs: dict[int, dict[str, int]]) -> pd.DataFrame:
    rows = [(d, t, tf) for d, terms in sorted(docs.items()) for t, tf in sorted(terms.items())]
    return pd.DataFrame(rows, columns=["doc", "term", "tf"]).astype({"doc": "int64", "tf": "int64"})


def _layers(seed: int) -> tuple[LayeredIndex, Bm25Index, list[str]]:
    """Docs dropped, changed, added in between and renumbered: (the layers, the fresh index, every word)."""
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(60)]
    doc = lambda key: {t: rng.randint(1, 6) for t in rng.sample([*words, f"new{key}"], rng.randint(1, 12))}  # noqa: E731
    docs = {i: {t: rng.randint(1, 6) for t in rng.sample(words, rng.randint(1, 12))} for i in range(rng.randint(1, 60))}
    docs[0] = {**docs[0], "only0": 1}  # (a word of its own: gone with the doc when it is dropped)
    base = Bm25Index.from_terms(_terms(docs), "doc")
    events = sorted([(k, "old") for k in docs] + [(k + 0.5, "new") for k in docs if rng.random() < 0.2])
    dropped = {k for k in docs if rng.random() < 0.15}
    changed = {k for k in docs if rng.random() < 0.15} - dropped
    shift = rng.choice([0, 0, 3])  # every id moved
    after, new_id, added = {}, {}, set()
    for key, kind in events:
        if kind == "old" and key in dropped:
            continue
        new_id[key] = len(after) + shift
        if kind == "new" or key in changed:
            added.add(len(after) + shift)
            after[len(after) + shift] = doc(key)
        else:
            after[len(after) + shift] = docs[key]
    base_ids = np.array([new_id[k] if k in new_id and k not in changed else -1 for k in sorted(docs)])
    delta = Bm25Index.from_terms(_terms({d: after[d] for d in added}), "doc")
    return LayeredIndex(base, base_ids, delta), Bm25Index.from_terms(_terms(after), "doc"), [*words, "only0", "nope"]


@pytest.mark.parametrize("seed", range(60))
def test_layers_score_every_query_with_the_floats_of_the_fresh_index(seed):
    layered, fresh, words = _layers(seed)
    assert np.array_equal(layered.doc_ids, fresh.doc_ids) and layered.doc_ids.dtype == fresh.doc_ids.dtype
    assert layered.n_postings == fresh.n_postings and layered.avg_len == fresh.avg_len
    rng = random.Random(seed)
    for query in [[w] for w in words] + [rng.choices(words, k=rng.randint(2, 9)) for _ in range(30)]:
        assert np.array_equal(layered.totals(query), fresh.totals(query)), query
    ids = np.arange(-2, len(fresh.doc_ids) + 5)
    assert np.array_equal(layered.scores_at(words[:5], ids), fresh.scores_at(words[:5], ids))
    assert [layered.document_frequency(w) for w in words] == [fresh.document_frequency(w) for w in words]


@pytest.mark.parametrize("seed", range(30))
def test_layers_tell_the_document_frequencies_of_the_fresh_index(seed):
    layered, fresh, words = _layers(seed)
    terms = pa.array(sorted({*words, *fresh.vocab, *layered.base.vocab}))
    assert np.array_equal(layered.counts_of(terms), fresh.counts_of(terms))
    vocab, counts = layered.term_counts()
    fresh_vocab, fresh_counts = fresh.term_counts()
    assert vocab.to_pylist() == sorted(vocab.to_pylist())  # sorted: looked up by bisection
    assert dict(zip(vocab.to_pylist(), counts.tolist())) == {
        **{t: 0 for t in vocab.to_pylist()},
        **dict(zip(fresh_vocab.to_pylist(), fresh_counts.tolist())),
    }


@pytest.mark.parametrize("seed", range(30))
def test_layers_fold_into_the_fresh_index_bit_for_bit(seed):
    layered, fresh, _ = _layers(seed)
    merged = layered.merged("doc")
    for name in ARRAYS:
        a, b = (np.asarray(getattr(i, name) if name != "vocab" else list(getattr(i, name))) for i in (merged, fresh))
        assert a.dtype == b.dtype and np.array_equal(a, b), name


def test_a_query_of_repeated_terms_counts_them_as_the_fresh_index_does():
    layered, fresh, words = _layers(7)
    query = [w for w, n in Counter({words[1]: 3, words[2]: 1, words[40]: 2}).items() for _ in range(n)]
    assert np.array_equal(layered.scores(query).to_numpy(), fresh.scores(query).to_numpy())


@pytest.mark.parametrize("seed", range(3))
def test_a_kb_whose_lexicons_are_layered_edit_after_edit_answers_as_a_fresh_index(tmp_path, capsys, monkeypatch, seed):
    """Every patchable edit layered (the delta written beside the linked base, then replaced by the next one):
    `cra retrieve` prints what it prints over a fresh index, and the folded lexicons are the fresh ones."""
    monkeypatch.setattr(store, "LAYER_MAX_SHARE", store.PATCH_MAX_SHARE)
    rng = random.Random(seed)
    repo = make_repo(tmp_path / "repo", git=False)
    kb = tmp_path / "kb"
    index_repository(repo, kb, history=0)
    layered = 0
    for step in range(5):
        did = _edit_repo(repo, rng)
        index_repository(repo, kb, history=0)
        version = live_version(kb)
        deltas = sorted(p.name for p in version.glob("*.bm25.delta.arrow"))
        layered += bool(deltas)
        for name in deltas:  # the base is the linked file of an earlier version
            assert (version / name.replace(".delta", "")).stat().st_nlink >= 1
        fresh = tmp_path / f"fresh{step}"
        index_repository(repo, fresh, history=0)
        assert _answers(repo, kb, capsys) == _answers(repo, fresh, capsys), f"step {step}: {did}"
        compared, differences = compare_kbs(kb, fresh, ignore=RUN_STATS)
        assert "file_terms.bm25.arrow" in compared and differences == [], f"step {step}: {did}"
    assert layered >= 3


def test_a_layered_lexicon_is_folded_once_its_delta_outgrows_its_share(tmp_path, monkeypatch):
    repo = make_repo(tmp_path / "repo", git=False)
    kb = tmp_path / "kb"
    index_repository(repo, kb, history=0)
    monkeypatch.setattr(store, "LAYER_MAX_SHARE", store.PATCH_MAX_SHARE)
    ldap = repo / "app/auth/ldap.py"
    ldap.write_text(ldap.read_text() + "\n# ledger invoice\n")
    index_repository(repo, kb, history=0)
    assert (live_version(kb) / "file_terms.bm25.delta.arrow").is_file()
    assert isinstance(load_kb(kb).file_lexicon, LayeredIndex)
    monkeypatch.setattr(store, "LAYER_MAX_SHARE", 0.0)  # the next edit's delta is over the share: folded
    ldap.write_text(ldap.read_text() + "\n# payment\n")
    index_repository(repo, kb, history=0)
    assert not list(live_version(kb).glob("*.bm25.delta.arrow"))
    fresh = tmp_path / "fresh"
    index_repository(repo, fresh, history=0)
    assert compare_kbs(kb, fresh, ignore=RUN_STATS)[1] == []
