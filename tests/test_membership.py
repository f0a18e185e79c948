"""Rows of a loaded KB's string column holding a request's words (`membership.in_set`): the same answer as
`Series.isin`, from codes factorised once per column and dropped with it."""

from __future__ import annotations

import gc

import numpy as np
import pandas as pd
import pytest

from cra.dataflows.retrieval import membership


@pytest.fixture(autouse=True)
def small_columns_count(monkeypatch):
    monkeypatch.setattr(membership, "MIN_ROWS", 3)


def test_in_set_answers_as_isin_for_arrow_and_numpy_backed_columns_alike():
    words = ["lock", "thread", None, "lock", "queue", "Lock", "thread"]
    for column in (pd.Series(words, dtype="string[pyarrow]"), pd.Series(words, dtype=object)):
        for values in ({"lock", "thread"}, {"nowhere"}, set(), {"lock": 1, "queue": 2}, ["Lock", "queue"]):
            expected = column.isin(values).to_numpy(dtype=bool)
            assert np.array_equal(membership.in_set(column, values), expected)
            assert np.array_equal(membership.in_set(column, values), expected)  # the second time from the codes


def test_an_arrow_column_is_factorised_once_and_forgotten_with_it():
    frame = pd.DataFrame({"concept": pd.Series(["a", "b", "c", "a"], dtype="string[pyarrow]")})
    key = id(frame["concept"].array)
    membership.in_set(frame["concept"], {"a"})
    assert membership._CODES[key][1] is None  # asked once: a plain isin, no codes yet
    membership.in_set(frame["concept"], {"a"})
    codes = membership._CODES[key][1]
    assert codes is not None
    membership.in_set(frame["concept"], {"b", "c"})  # another access to the same column: the same codes
    assert membership._CODES[key][1] is codes
    del frame
    gc.collect()
    assert key not in membership._CODES


def test_numpy_backed_columns_are_factorised_once_each_even_when_they_share_one_block():
    words = ["lock", "thread", None, "lock", "queue"]
    values = np.array([words, ["queue", "lock", "lock", None, "thread"]], dtype=object).T
    frame = pd.DataFrame(values, columns=["entry", "stem"], dtype=object)  # one 2-D object block
    assert membership._owner(frame["entry"].to_numpy()) is membership._owner(frame["stem"].to_numpy())
    before = set(membership._CODES)
    for column in ("entry", "stem", "entry", "stem", "entry"):  # each asked again: answered from its own codes
        for values in ({"lock"}, {"thread", "queue"}, {"nowhere"}):
            expected = frame[column].isin(values).to_numpy(dtype=bool)
            assert np.array_equal(membership.in_set(frame[column], values), expected)
    coded = [membership._CODES[key][1] for key in set(membership._CODES) - before]
    assert len(coded) == 2 and all(codes is not None for codes in coded)  # once per column, not per access
    del frame, coded
    gc.collect()
    assert set(membership._CODES) <= before  # forgotten with the frame
