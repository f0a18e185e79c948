"""Carrying a previous KB's unchanged rows over by slices (`cra.dataflows.index.frames`): the spliced table is the
one the sort of kept and new rows gives, and the nodes that splice (terms, comments) write what they wrote before."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from cra.dataflows.index import lexical_terms, parsing
from cra.dataflows.index.frames import (
    MAX_SLICES,
    kept_rows,
    ordered_by,
    rekeyed_runs,
    sorted_rows,
    spliced,
    take_rows,
    true_runs,
)


def _previous_terms(rng: np.random.Generator, docs: int) -> pd.DataFrame:
    """A term table in doc order, as a KB holds it: some docs with no rows, arrow-backed terms."""
    counts = rng.integers(0, 4, size=docs)
    doc = np.repeat(np.arange(docs, dtype=np.int32), counts)
    return pd.DataFrame(
        {
            "doc": doc,
            "term": pd.array([f"t{i}" for i in rng.integers(0, 50, size=len(doc))], dtype="str"),
            "tf": rng.integers(1, 9, size=len(doc)).astype(np.int32),
        }
    )


def _sorted_merge(kept: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
    """What a re-index wrote before: kept rows then new ones, stably sorted by doc."""
    both = pd.concat([kept, new.astype({"term": kept["term"].dtype})], ignore_index=True)
    return both.sort_values("doc", kind="stable", ignore_index=True)


@pytest.mark.parametrize("seed", range(40))
def test_spliced_rows_are_the_stable_sort_of_the_kept_and_new_ones(seed):
    rng = np.random.default_rng(seed)
    previous = _previous_terms(rng, int(rng.integers(1, 60)))
    keep = rng.random(len(previous)) < rng.choice([0.0, 0.5, 0.95, 1.0])
    top = int(previous["doc"].max()) if len(previous) else 0
    new_docs = np.sort(rng.integers(-2, top + 4, size=int(rng.integers(0, 12))))
    new = pd.DataFrame(
        {
            "doc": new_docs.astype(np.int32),
            "term": pd.Categorical([f"n{i}" for i in range(len(new_docs))]),
            "tf": np.ones(len(new_docs), dtype=np.int32),
        }
    )
    got = spliced(previous, *true_runs(keep), new, "doc", typed_as_previous=("term",))
    kept = previous[keep].reset_index(drop=True)
    expected = new if not len(kept) else _sorted_merge(kept, new)
    assert got is not None
    pd.testing.assert_frame_equal(got, expected.reset_index(drop=True))


def test_shifted_runs_give_the_ids_each_row_maps_to_and_keep_doc_order():
    previous = pd.DataFrame(
        {"symbol_id": np.array([0, 0, 1, 8, 8, 9, 16], np.int32), "term": pd.array(list("abcdefg"), dtype="str")}
    )
    # symbols 0, 1 keep their ids, 8 is gone (its file changed), 9 and 16 move up by 8 (a block before them grew)
    keys = pd.DataFrame({"old_id": [0, 1, 9, 16, -1], "symbol_id": [0, 1, 17, 24, 8], "local": [-1, -1, -1, -1, 0]})
    starts, ends, shifts = rekeyed_runs(previous["symbol_id"], keys)
    new = pd.DataFrame({"symbol_id": np.array([8, 8], np.int32), "term": pd.Categorical(["x", "y"])})
    got = spliced(previous, starts, ends, new, "symbol_id", shifts, typed_as_previous=("term",))
    assert got["symbol_id"].tolist() == [0, 0, 1, 8, 8, 17, 24]
    assert got["term"].tolist() == list("abcxyfg")


def test_runs_out_of_doc_order_or_too_many_pieces_are_left_to_a_sort():
    previous = pd.DataFrame({"doc": np.array([2, 1, 3], np.int32), "tf": np.ones(3, np.int32)})
    assert spliced(previous, [0], [3], previous.iloc[:0], "doc") is None
    ordered = pd.DataFrame({"doc": np.arange(4 * MAX_SLICES, dtype=np.int32)})
    every_other = np.arange(len(ordered)) % 2 == 0
    assert spliced(ordered, *true_runs(every_other), ordered.iloc[:0], "doc") is None
    pd.testing.assert_frame_equal(kept_rows(ordered, every_other), ordered[every_other].reset_index(drop=True))


def test_rows_taken_and_ordered_by_slices_equal_the_plain_take_and_sort():
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"a": rng.integers(0, 5, 300), "b": rng.integers(0, 5, 300), "c": np.arange(300)})
    for rows in (np.arange(300), np.r_[0:10, 20:300], np.r_[5:9, 0:3], np.zeros(0, np.int64), rng.permutation(300)):
        pd.testing.assert_frame_equal(take_rows(frame, rows), frame.iloc[rows].reset_index(drop=True))
    expected = frame.sort_values(["a", "b"], kind="stable", ignore_index=True)
    pd.testing.assert_frame_equal(ordered_by(frame, "a", "b"), expected)
    pd.testing.assert_frame_equal(ordered_by(expected, "a", "b"), expected)


def _symbol_keys(old_ids, file_ids) -> pd.DataFrame:
    """symbol_keys of reused symbols whose ids do not move."""
    return pd.DataFrame(
        {"file_id": file_ids, "old_id": old_ids, "local": -1, "symbol_id": old_ids}, dtype="int64"
    ).astype({"local": "int64"})


def test_a_reindex_keeps_the_reused_comments_text_as_read_not_a_python_string_a_row():
    """The previous KB's comments are memory-mapped Arrow columns: the reused rows' text stays Arrow (the old path made
    950,000 Python strings of OpenJDK's comments on a one-file touch) and is written as before."""
    arrow = pd.ArrowDtype
    previous = pd.DataFrame(
        {
            "file_id": pd.array([0, 0, 1, 2], dtype=arrow(pa.int32())),
            "symbol_id": pd.array([0, None, 8, 16], dtype=arrow(pa.int32())),
            "line": pd.array([1, 5, 2, 3], dtype=arrow(pa.int32())),
            "text": pd.array(["a", "b", "old", "c"], dtype=arrow(pa.string())),
            "is_rationale": pd.array([False, True, False, False], dtype=arrow(pa.bool_())),
        }
    )
    indexed = pd.DataFrame({"file_id": [0, 1, 2], "reused": [True, False, True]})
    keys = pd.concat(
        [
            _symbol_keys([0, 16], [0, 2]),
            pd.DataFrame({"file_id": [1], "old_id": [-1], "local": [0], "symbol_id": [8]}),
        ],
        ignore_index=True,
    )
    parsed = pd.DataFrame(
        {"file_id": [1, 1], "local": [0, None], "line": [4, 1], "text": ["new", "top"], "is_rationale": [True, False]}
    )
    got = parsing.kb_comments(parsed, indexed, keys, {"comments": previous})
    assert isinstance(got["text"].dtype, pd.ArrowDtype)
    assert got["text"].tolist() == ["a", "b", "top", "new", "c"]
    assert got["line"].tolist() == [1, 5, 1, 4, 3]
    assert got["symbol_id"].tolist() == [0, pd.NA, pd.NA, 8, 16]
    assert str(got["symbol_id"].dtype) == "Int32" and got["file_id"].dtype == np.int32


def test_symbol_terms_of_a_touched_file_go_back_between_the_kept_ones():
    previous = pd.DataFrame(
        {
            "symbol_id": np.array([0, 0, 8, 8, 16], np.int32),
            "term": pd.array(["a", "b", "old", "older", "c"], dtype="str"),
            "tf": np.ones(5, np.int32),
        }
    )
    keys = pd.concat(
        [
            _symbol_keys([0, 16], [0, 2]),
            pd.DataFrame({"file_id": [1], "old_id": [-1], "local": [0], "symbol_id": [8]}),
        ],
        ignore_index=True,
    )
    parsed = pd.DataFrame(
        {
            "file_id": np.array([1], np.int32),
            "local": np.array([0], np.int32),
            "term": pd.Categorical(["new"]),
            "tf": np.array([2], np.int32),
        }
    )
    got = lexical_terms.kb_symbol_terms(parsed, keys, {"symbol_terms": previous})
    assert got["term"].tolist() == ["a", "b", "new", "c"] and got["symbol_id"].tolist() == [0, 0, 8, 16]
    assert got["tf"].tolist() == [1, 1, 2, 1] and got["symbol_id"].dtype == np.int32


@pytest.mark.parametrize("seed", range(30))
def test_sorted_rows_equal_the_stable_sort_values_of_a_renumbered_table(seed):
    """A table in order whose ids are renumbered (a file added or deleted: one file's rows move, the others shift),
    or shuffled, with repeated keys, text keys (edge kinds) and nullable ids: the same rows in the same order."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 80))
    ids = np.sort(rng.integers(0, 20, size=n))
    if rng.random() < 0.5:  # one id's rows renumbered into the middle, as canonical_ids moves a new file's
        ids = np.where(ids == ids.max(initial=0), int(rng.integers(0, 20)), ids + (ids > 10))
    if rng.random() < 0.3:
        ids = rng.permutation(ids)
    kinds = rng.choice(["call", "base", "annotation", "b\u00e9"], size=n)
    frame = pd.DataFrame(
        {
            "file_id": ids.astype(np.int32),
            "line": rng.integers(0, 4, size=n).astype(np.int64),
            "kind": pd.array(kinds, dtype="str"),
            "parent_id": pd.array(rng.integers(0, 5, size=n), dtype="Int64"),
            "text": pd.array([f"row {i}" for i in range(n)], dtype="str"),
        },
        index=rng.permutation(n),
    )
    if n and rng.random() < 0.3:
        frame.loc[frame.index[0], "parent_id"] = pd.NA  # (nulls: left to sort_values)
    for columns in (["file_id"], ["file_id", "line"], ["file_id", "kind"], ["kind", "line"], ["parent_id", "line"]):
        expected = frame.sort_values(columns, kind="stable", ignore_index=True)
        pd.testing.assert_frame_equal(sorted_rows(frame, columns), expected)


def _chunked_view(frame: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    """frame as a re-index reads a mapped table it splices: every column Arrow-backed, in chunks of random lengths."""
    table = pa.Table.from_pandas(frame, preserve_index=False)
    cuts = np.sort(rng.choice(np.arange(1, max(len(frame), 2)), size=min(6, max(len(frame) - 1, 0)), replace=False))
    bounds = np.r_[0, cuts, len(frame)]
    chunks = [table.slice(int(a), int(b - a)) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]
    return pa.concat_tables(chunks).to_pandas(types_mapper=pd.ArrowDtype)


@pytest.mark.parametrize("seed", range(20))
def test_searches_over_a_views_chunks_are_those_over_its_copy_and_copy_nothing(seed):
    from cra.dataflows.index.frames import doc_count
    from cra.dataflows.index.mapped import ascending, int_chunks, ints_at, sorted_search

    rng = np.random.default_rng(seed)
    frame = _previous_terms(rng, 200)
    view = _chunked_view(frame, rng)
    chunks = int_chunks(view["doc"])
    whole = frame["doc"].to_numpy()
    assert len(chunks) > 1 and not any(c.flags.writeable for c in chunks)  # (Arrow's own buffers: not copies)
    assert ascending(chunks) and not ascending([whole[::-1]])
    keys = rng.integers(-5, 210, size=40)
    for side in ("left", "right"):
        assert np.array_equal(sorted_search(chunks, keys, side), np.searchsorted(whole, keys, side))
    rows = rng.integers(0, len(whole), size=30)
    assert np.array_equal(ints_at(chunks, rows), whole[rows])
    assert doc_count(view["doc"]) == frame["doc"].nunique()


@pytest.mark.parametrize("seed", range(20))
def test_stretches_of_two_views_compare_as_those_of_their_copies(seed):
    """`same_ints` (whether the kept rows of a pieced table keep their ids) walks both columns' chunks: it answers as a
    compare of the copies does, for equal stretches, shifted ones and ones with one value changed."""
    from cra.dataflows.index.mapped import int_chunks, same_ints

    rng = np.random.default_rng(seed)
    frame = _previous_terms(rng, 200)
    a, b = int_chunks(_chunked_view(frame, rng)["doc"]), int_chunks(_chunked_view(frame, rng)["doc"])
    whole = frame["doc"].to_numpy()
    changed = whole.copy()
    changed[rng.integers(0, len(whole))] += 1
    for _ in range(30):
        lo, hi = np.sort(rng.integers(0, len(whole) + 1, size=2))
        shift = int(rng.integers(-3, 4))
        lo2, hi2 = max(lo + shift, 0), min(hi + shift, len(whole))
        assert same_ints(a, lo, hi, b, lo2, hi2) == np.array_equal(whole[lo:hi], whole[lo2:hi2])
        assert same_ints(a, lo, hi, [changed], lo, hi) == np.array_equal(whole[lo:hi], changed[lo:hi])


@pytest.mark.parametrize("seed", range(20))
def test_new_rows_spliced_into_a_views_chunks_are_those_spliced_into_its_copy(seed):
    rng = np.random.default_rng(seed)
    previous = _previous_terms(rng, 200)
    view = _chunked_view(previous, rng)
    keep = rng.random(len(previous)) < 0.9
    docs = np.unique(previous["doc"].to_numpy()[~keep])
    new = pd.DataFrame(
        {"doc": np.repeat(docs, 2).astype(np.int32), "term": ["fresh"] * (2 * len(docs)), "tf": np.int32(1)}
    )
    new = new.astype({"term": previous["term"].dtype})
    expected = spliced(previous, *true_runs(keep), new, "doc", typed_as_previous=("term",))
    got = spliced(view, *true_runs(keep), new, "doc", typed_as_previous=("doc", "term", "tf"))
    assert (expected is None) == (got is None)
    if expected is not None:
        assert all(isinstance(t, pd.ArrowDtype) for t in got.dtypes)  # (the kept rows stay the view's)
        assert got["doc"].tolist() == expected["doc"].tolist()
        assert got["term"].astype(object).tolist() == expected["term"].astype(object).tolist()
        assert got["tf"].tolist() == expected["tf"].tolist()


@pytest.mark.parametrize("dtype", ["str", object, "arrow"])
def test_positions_of_paths_among_others_are_pandas_indexers_whatever_the_column_is_made_of(dtype):
    from cra.dataflows.index.frames import positions_in

    rng = np.random.default_rng(3)
    among = pd.Series([f"src/pkg{i % 7}/mod{i}.py" for i in range(500)], dtype="str")
    values = pd.Series(list(among.sample(300, random_state=1)) + ["gone.py", "src/new.py"], dtype="str")
    view = _chunked_view(pd.DataFrame({"path": among}), rng)["path"] if dtype == "arrow" else among.astype(dtype)
    expected = pd.Index(among).get_indexer(values)
    assert positions_in(values.astype(object), view).tolist() == expected.tolist()
    assert positions_in(values, view)[-2:].tolist() == [-1, -1]
    nothing = pd.Series([], dtype=object)
    assert positions_in(values, nothing).tolist() == [-1] * len(values) and positions_in(nothing, view).tolist() == []


@pytest.mark.parametrize("chunks", [[], [[1, None, 3]], [[None, 5], [7], [None]]])
def test_a_views_nullable_ints_conform_as_pandas_astype_makes_them(chunks):
    """`conform` turns a view's Arrow ints with nulls (a comment's symbol id) into pandas' nullable ints from values
    and mask: the very column `astype` gives, chunked or empty."""
    from cra.dataflows.index.frames import conform
    from cra.dataflows.index.schema import TABLES

    ids = pa.chunked_array([pa.array(c, type=pa.int32()) for c in chunks], type=pa.int32())
    view = pd.Series(pd.arrays.ArrowExtensionArray(ids))
    n = len(view)
    frame = pd.DataFrame({"file_id": np.zeros(n, np.int32), "symbol_id": view, "line": np.arange(n, dtype=np.int32)})
    frame = frame.assign(text=["# why"] * n, is_rationale=np.zeros(n, bool))[list(TABLES["comments"])]
    got = conform(frame, "comments")["symbol_id"]
    pd.testing.assert_series_equal(got, view.astype("Int32"), check_names=False)
    assert got.dtype == "Int32"


@pytest.mark.parametrize("seed", range(20))
def test_a_new_files_rows_renumbered_into_the_middle_are_merged_in_without_a_sort(seed, monkeypatch):
    """canonical_ids after a file is added: the new file's rows come last (its id was above every other) and are
    renumbered between the others; they are put in place by binary search (no argsort), in sort_values' order."""
    rng = np.random.default_rng(seed)
    ids = np.sort(rng.choice(np.arange(0, 200, 2), size=int(rng.integers(2, 40)), replace=False))
    rows = np.repeat(ids, rng.integers(1, 4, size=len(ids)))
    new = int(rng.choice(np.arange(1, 200, 2)))  # (an odd id: none of the others)
    tail = np.full(int(rng.integers(1, 5)), new)
    frame = pd.DataFrame(
        {
            "file_id": np.r_[rows, tail].astype(np.int32),
            "line": np.r_[np.zeros(len(rows), np.int64), np.arange(len(tail))],
            "text": pd.array([f"row {i}" for i in range(len(rows) + len(tail))], dtype="str"),
        }
    )
    for columns in (["file_id"], ["file_id", "line"]):
        expected = frame.sort_values(columns, kind="stable", ignore_index=True)
        with monkeypatch.context() as patched:  # (a sort would fail)
            patched.setattr(np, "lexsort", None)
            patched.setattr(np, "argsort", None)
            got = sorted_rows(frame, columns)
        pd.testing.assert_frame_equal(got, expected)
