"""Whether a table to write equals the live version's (then it is linked, not written): object columns compare only
the rows that are not the very same objects, with the verdict of comparing them all."""

from __future__ import annotations

import numpy as np
import pandas as pd

from cra.drivers.kb import store


def _imports(names: list) -> pd.DataFrame:
    n = len(names)
    return pd.DataFrame(
        {
            "file_id": np.arange(n, dtype="int32"),
            "target": [f"m{i}" for i in range(n)],
            "names": pd.Series(names, dtype=object),
            "level": np.zeros(n, dtype="int32"),
            "line": np.ones(n, dtype="int32"),
        }
    )


def test_object_rows_carried_over_as_the_same_objects_are_not_converted_and_the_verdict_stays_exact(monkeypatch):
    carried = [np.array(["a", "b"], dtype=object), None, np.array([], dtype=object)]
    before = _imports([*carried, np.array(["x"], dtype=object)])
    converted, as_arrow = [], store._as_arrow

    def recording(values, typ):
        converted.append(len(values))
        return as_arrow(values, typ)

    monkeypatch.setattr(store, "_as_arrow", recording)
    assert store._same_table("imports", _imports([*carried, before["names"][3]]), before)
    assert converted == []  # (every row the same object: nothing converted)
    assert store._same_table("imports", _imports([*carried, ["x"]]), before)  # a list equals the array read back
    assert converted == [1, 1]  # (only the row that is another object)
    assert not store._same_table("imports", _imports([*carried, ["y"]]), before)
    assert not store._same_table("imports", _imports([*carried[:2], ["x"], before["names"][3]]), before)
