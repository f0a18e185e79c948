"""Which rows of a KB's string column hold one of a request's few words, without hashing every row per request.

`Series.isin` on a column of strings hashes all of its rows each time: 3-8 ms for the half a million rows of
OpenJDK's file concepts, a dozen such tests a request. A loaded KB's columns do not change between requests, so each
is factorised once, the second time it is asked about (its distinct values and a code per row, kept while the
column's Arrow array lives; a one-request process pays nothing for them), and a request looks up only its own words
among the distinct values, then reads the codes.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable

import numpy as np
import pandas as pd

_CODES: dict[int, tuple] = {}  # id(column array) -> (weak reference to it, its codes, Index of distinct values)
MIN_ROWS = 20_000  # below this a plain isin is as fast as the lookup


def in_set(column: pd.Series, values: Iterable) -> np.ndarray:
    """`column.isin(values).to_numpy()` (bool per row), by the column's codes when it is large."""
    array = column.array
    if len(column) < MIN_ROWS or not hasattr(array, "_pa_array"):  # (a numpy-backed column is wrapped anew each time)
        return column.isin(values).to_numpy(dtype=bool)
    cached = _CODES.get(id(array))
    if cached is None or cached[0]() is not array:  # first sight: a plain isin (a one-request process asks once)
        _CODES[id(array)] = (weakref.ref(array, lambda _, key=id(array): _CODES.pop(key, None)), None, None)
        return column.isin(values).to_numpy(dtype=bool)
    reference, codes, distinct = cached
    if codes is None:  # asked again: the column lives in a loaded KB, worth its codes
        codes, uniques = pd.factorize(array, use_na_sentinel=True)
        distinct = pd.Index(uniques)
        _CODES[id(array)] = (reference, codes, distinct)  # (arrays compare elementwise, unhashable: keyed by identity)
    wanted = np.zeros(len(distinct) + 1, dtype=bool)  # the last slot: a missing value (code -1), never wanted
    at = distinct.get_indexer(pd.Index(list(values), dtype=distinct.dtype))
    wanted[at[at >= 0]] = True
    return wanted[codes]
