"""BM25 weights computed at query time, per query term: the same floats as weighting every posting at index time (what
a KB persisted before), and a persisted lexicon that holds no per-posting weight for a patch to recompute."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from cra.dataflows import lexical
from cra.dataflows.lexical import K1, B, Bm25Index
from cra.drivers.index.indexer import index_repository
from cra.drivers.kb.store import live_version
from tests.fixture_repo import make_repo


def _random_terms(rng: np.random.Generator, docs: int, words: int) -> pd.DataFrame:
    """(doc, term, tf) rows: Zipf-like term choice (a few terms in most docs), docs of very different lengths."""
    rows = []
    for doc in range(docs):
        n = int(rng.integers(1, 60))
        terms = np.unique(np.minimum(rng.zipf(1.3, n), words) - 1)
        rows += [(doc * 3, f"t{t}", int(rng.integers(1, 9))) for t in terms]
    return pd.DataFrame(rows, columns=["doc", "term", "tf"])


def _weights_all_at_once(index: Bm25Index) -> np.ndarray:
    """Every posting's weight computed over the whole index at once, step by step as index time did."""
    df = np.diff(index.starts)
    idf = np.log(1.0 + (len(index.doc_ids) - df + 0.5) / (df + 0.5))
    counts = index.postings_tf.astype(np.float64)
    norm = index.doc_len[index.postings_doc]
    norm *= B
    norm /= index.doc_len.mean() or 1.0
    norm += 1.0 - B
    norm *= K1
    norm += counts
    weight = idf[np.repeat(np.arange(len(df)), df)]
    weight *= counts
    weight *= K1 + 1.0
    weight /= norm
    return weight


@pytest.mark.parametrize("seed", range(5))
def test_query_time_scores_are_bit_for_bit_those_of_weights_computed_at_index_time(seed):
    rng = np.random.default_rng(seed)
    index = Bm25Index.from_terms(_random_terms(rng, 400, 300), "doc")
    weight = _weights_all_at_once(index)
    vocab = list(index.vocab)
    for _ in range(20):
        query = [vocab[i] for i in rng.integers(0, len(vocab), int(rng.integers(1, 12)))] + ["unknown"]
        expected = np.zeros(len(index.doc_ids))
        for term, count in Counter(query).items():
            if term in vocab:
                i = vocab.index(term)
                start, end = index.starts[i], index.starts[i + 1]
                np.add.at(expected, index.postings_doc[start:end], weight[start:end] * (1.0 + np.log(count)))
        got = index.scores(query)
        assert np.array_equal(got.to_numpy(), expected) and list(got.index) == list(index.doc_ids)


def test_a_persisted_lexicon_holds_term_counts_and_lengths_not_weights(tmp_path):
    repo = make_repo(tmp_path / "repo", git=False)
    index_repository(repo, tmp_path / "kb", history=0)
    for name in ("file_terms", "symbol_terms"):
        with pa.memory_map(str(live_version(tmp_path / "kb") / f"{name}.bm25.arrow")) as source:
            columns = pa.ipc.open_file(source).schema.names
        assert columns == list(lexical.ARRAYS) and "postings_weight" not in columns
