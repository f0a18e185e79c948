"""`cra.dataflows.distinct`: NumPy's set routines by sorting (its hash path for integers is slow here)."""

from __future__ import annotations

import numpy as np
import pytest

from cra.dataflows.distinct import distinct, distinct_difference, distinct_union, isin

DTYPES = [np.int8, np.int32, np.int64, np.uint16, np.bool_, np.float64]


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("dtype", DTYPES)
def test_distinct_values_are_numpys_set_routines(seed, dtype):
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(0, 60)), int(rng.integers(0, 60))
    a = rng.integers(-20 if dtype != np.uint16 else 0, 20, n).astype(dtype)
    b = rng.integers(0, 30, m).astype(dtype)
    for got, want in (
        (distinct(a), np.unique(a)),
        (distinct_union(a, b), np.union1d(a, b)),
        (distinct_difference(a, b), np.setdiff1d(a, b)),
    ):
        assert got.dtype == want.dtype and np.array_equal(got, want)


def test_distinct_keeps_numpys_answer_for_floats_with_nan_and_objects():
    floats = np.array([2.0, np.nan, 1.0, np.nan, 2.0])
    assert np.array_equal(distinct(floats), np.unique(floats), equal_nan=True) and len(distinct(floats)) == 3
    words = np.array(["b", "a", "b"], dtype=object)
    assert distinct(words).tolist() == ["a", "b"]


@pytest.mark.parametrize("seed", range(8))
def test_isin_is_numpys_for_wide_and_narrow_integers(seed):
    rng = np.random.default_rng(seed)
    for high in (50, 2**40):
        a, b = (rng.integers(0, high, int(rng.integers(0, 300))) for _ in range(2))
        b = np.concatenate([b, a[: len(a) // 3]])
        assert np.array_equal(isin(a, b), np.isin(a, b))
        assert np.array_equal(isin(a.reshape(-1, 1), b), np.isin(a.reshape(-1, 1), b))
    words = np.array(["a", "b"], dtype=object)
    assert isin(words, ["b"]).tolist() == [False, True]
