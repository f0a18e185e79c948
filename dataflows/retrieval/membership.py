"""Which rows of a KB's string column hold one of a request's few words, without hashing every row per request.

`Series.isin` on a column of strings hashes all of its rows each time: 3-8 ms for the half a million rows of
OpenJDK's file concepts, a dozen such tests a request. A loaded KB's columns do not change between requests, so each
is factorised once, the second time it is asked about (its distinct values and a code per row, kept while the
column's Arrow array lives; a one-request process pays nothing for them), and a request looks up only its own words
among the distinct values, then reads the codes. A numpy-backed column (the KB's object-dtype word vocabularies) is
wrapped anew at each access, so it is known by the memory its values lie in (the array owning it, kept weakly, the
address and length), not by the wrapper.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable

import numpy as np
import pandas as pd

# a column's identity -> (weak reference to the array owning its values, its codes, Index of its distinct values)
_CODES: dict[object, tuple] = {}
MIN_ROWS = 20_000  # below this a plain isin is as fast as the lookup


def in_set(column: pd.Series, values: Iterable) -> np.ndarray:
    """`column.isin(values).to_numpy()` (bool per row), by the column's codes when it is large."""
    array = column.array
    if len(column) < MIN_ROWS:
        return column.isin(values).to_numpy(dtype=bool)
    if hasattr(array, "_pa_array"):
        key, owner = id(array), array
    else:
        array = column.to_numpy()
        owner = _owner(array)
        if owner is None:
            return column.isin(values).to_numpy(dtype=bool)
        key = (id(owner), array.__array_interface__["data"][0], len(array), array.strides, str(array.dtype))
    cached = _CODES.get(key)
    if cached is None or cached[0]() is not owner:  # first sight: a plain isin (a one-request process asks once)
        _CODES[key] = (weakref.ref(owner, lambda _, key=key: _CODES.pop(key, None)), None, None)
        return column.isin(values).to_numpy(dtype=bool)
    reference, codes, distinct = cached
    if codes is None:  # asked again: the column lives in a loaded KB, worth its codes
        codes, uniques = pd.factorize(array, use_na_sentinel=True)
        distinct = pd.Index(uniques)
        _CODES[key] = (reference, codes, distinct)  # (arrays compare elementwise, unhashable: keyed by identity)
    wanted = np.zeros(len(distinct) + 1, dtype=bool)  # the last slot: a missing value (code -1), never wanted
    at = distinct.get_indexer(pd.Index(list(values), dtype=distinct.dtype))
    wanted[at[at >= 0]] = True
    return wanted[codes]


def _owner(values: np.ndarray) -> np.ndarray | None:
    """The numpy array owning the memory of these values (a view's base, followed to the end); None when the memory
    belongs to something else (a buffer numpy cannot keep a weak reference to)."""
    while isinstance(values.base, np.ndarray):
        values = values.base
    return values if values.base is None else None
