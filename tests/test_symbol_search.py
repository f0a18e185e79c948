"""`search_symbols`' matching over columns lowered once per loaded KB (`cra.drivers.serve.symbol_search`) finds the
same symbols in the same order as testing every symbol's lowered name, qualified name and path for each query."""

from __future__ import annotations

import pandas as pd
import pytest

from cra.drivers.index.indexer import index_repository
from cra.drivers.kb.store import load_kb
from cra.drivers.serve.symbol_search import N_TIERS, matching_symbols
from tests.fixture_repo import make_repo

QUERIES = ["validate_login", "Validate", "login", "handler", "LoginHandler.validate_login", "auth handler", "app",
           "e", "invoice total", "no_such_symbol_anywhere", "  total  "]  # fmt: skip


@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    root = tmp_path_factory.mktemp("symbol-search")
    repo = make_repo(root / "repo", git=False)
    index_repository(repo, root / "kb", history=0)
    return load_kb(root / "kb")


def _every_symbol_tested(kb, query: str, file_ids=None) -> pd.DataFrame:
    """The definition: each symbol's tier from its own lowered name, qualified name and path."""
    symbols = kb.tables["symbols"]
    if file_ids is not None:
        symbols = symbols[symbols["file_id"].isin(file_ids)]
    q = query.strip().lower()
    paths = symbols["file_id"].map(kb.files.set_index("file_id")["path"])
    names, qualified = symbols["name"].str.lower(), symbols["qualified_name"].fillna("").str.lower()
    haystack = qualified + " " + paths.str.lower()
    every_word = pd.Series(True, index=symbols.index)
    for word in q.split():
        every_word &= haystack.str.contains(word, regex=False)
    tiers = [
        names == q,
        (qualified == q) | qualified.str.endswith("." + q),
        names.str.startswith(q),
        names.str.contains(q, regex=False),
        qualified.str.contains(q, regex=False),
        every_word,
    ]
    tier = pd.Series(N_TIERS, index=symbols.index)
    for i, hit in reversed(list(enumerate(tiers))):
        tier[hit.to_numpy()] = i
    found = symbols.assign(tier=tier, path=paths, name_length=names.str.len())
    return found[found["tier"] < N_TIERS].sort_values(["tier", "name_length", "path", "start_line"])


@pytest.mark.parametrize("query", QUERIES)
def test_matching_symbols_are_every_symbol_tested_in_the_same_order(kb, query):
    expected, found = _every_symbol_tested(kb, query), matching_symbols(kb, query)
    assert found.index.tolist() == expected.index.tolist()
    assert found["tier"].tolist() == expected["tier"].tolist()
    assert found["path"].tolist() == expected["path"].tolist()
    assert found["name_length"].tolist() == expected["name_length"].tolist()


def test_matching_symbols_keeps_to_the_files_given(kb):
    some = kb.files["file_id"].iloc[::2]
    for query in ("validate", "e", "auth handler"):
        expected, found = _every_symbol_tested(kb, query, some), matching_symbols(kb, query, some)
        assert found.index.tolist() == expected.index.tolist() and len(found)
