"""Sorted distinct integers by sorting. NumPy 2.4's `np.unique` without a return_* flag (and `union1d`, `setdiff1d`
and `isin(kind="sort")`, which call it) hashes integers, which on these machines is 10-25 times slower than sorting:
745k int64 took 1.3 s to hash, 0.07 s to sort. Floats, objects and strings are left to np.unique."""

from __future__ import annotations

import numpy as np


def distinct(values) -> np.ndarray:
    """np.unique(values) of a 1-d array: sorted, each value once."""
    values = np.asarray(values)
    if values.dtype.kind not in "iub" or values.ndim != 1:
        return np.unique(values)
    ordered = np.sort(values)
    if len(ordered) < 2:
        return ordered
    keep = np.empty(len(ordered), dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]


def distinct_union(*arrays) -> np.ndarray:
    """np.union1d of the arrays (any number): their distinct values, sorted."""
    return distinct(np.concatenate([np.asarray(a).ravel() for a in arrays]))


def distinct_difference(values, other) -> np.ndarray:
    """np.setdiff1d(values, other): the distinct values not in other, sorted."""
    kept = distinct(np.asarray(values).ravel())
    return kept[~np.isin(kept, np.asarray(other).ravel())]


def isin(values, ids) -> np.ndarray:
    """np.isin(values, ids); for integers of a wide range (where NumPy neither takes its lookup table nor sorts
    without hashing `ids`) by binary search over the sorted distinct ids."""
    values, ids = np.asarray(values), np.asarray(ids)
    if values.dtype.kind not in "iu" or ids.dtype.kind != values.dtype.kind or not len(values) or not len(ids):
        return np.isin(values, ids)
    keys = distinct(ids.ravel())
    at = np.minimum(np.searchsorted(keys, values), len(keys) - 1)
    return keys[at] == values
