"""When a file is added or deleted the number of files moves every idf, and with it the order of nearly tied terms:
`metadata.file_concepts` then carries over the concepts of the files whose range (`concept_lo`, `concept_hi`) holds
the new number and scores the other files again. On random small KBs (where a moved count reorders many files'
terms) the concepts are those of scoring every file."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cra.dataflows.index import metadata
from cra.dataflows.lexical import Bm25Index

POOL = [f"w{i:02}" for i in range(40)]


def _terms(
    rng: np.random.Generator, files: list[int], fallback: set[int], pool: list[str] = POOL
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(concept terms, file terms) of these files: random terms of a small pool, tf 1-20; files in `fallback` have no
    concept terms (their full-text terms are scored)."""
    concept, full = [], []
    for f in files:
        words = rng.choice(pool, size=int(rng.integers(0, 16)), replace=False)
        for w in words:
            tf = int(rng.integers(1, 21))
            full.append((f, str(w), tf))
            if f not in fallback and rng.random() < 0.8:
                concept.append((f, str(w), int(rng.integers(1, tf + 1))))
    frame = lambda rows: pd.DataFrame(rows, columns=["file_id", "term", "tf"]).astype(  # noqa: E731
        {"file_id": "int32", "term": "str", "tf": "int32"}
    )
    return frame(concept), frame(full)


def _scored(concept: pd.DataFrame, full: pd.DataFrame, files: list[int]) -> pd.DataFrame:
    """Every file scored (nothing carried): the plain definition (concepts and their range)."""
    indexed = pd.DataFrame({"file_id": files, "reused": False})
    none = pd.DataFrame({"file_id": pd.Series(dtype="int64"), "concepts": pd.Series(dtype=object)})
    return metadata.file_concepts(concept, full, indexed, none, None)


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("edit", ["add", "delete"])
@pytest.mark.parametrize("lexicon", [False, True])
@pytest.mark.parametrize("checked", [False, True])
def test_concepts_after_a_file_is_added_or_deleted_are_those_of_scoring_every_file(
    seed, edit, lexicon, checked, monkeypatch
):
    """lexicon: the document frequencies come from the previous file lexicon plus the change, not counted; checked:
    the files in doubt are checked (`_still_on_top`, with their ranges then) before any is scored again."""
    monkeypatch.setattr(metadata, "CHECK_MIN_FILES", 0 if checked else 10**9)
    rng = np.random.default_rng(seed)
    before_files = list(range(int(rng.integers(3, 25))))
    fallback = {f for f in before_files if rng.random() < 0.2}
    concept, full = _terms(rng, before_files, fallback)
    previous = _previous(_scored(concept, full, before_files), before_files)
    if edit == "add":  # a new file (its rows added, ids of the others kept: as before canonical_ids)
        new = len(before_files)
        files, reused = [*before_files, new], [*([True] * len(before_files)), False]
        more_concept, more_full = _terms(rng, [new], set())
        concept_after = pd.concat([concept, more_concept], ignore_index=True)
        full_after = pd.concat([full, more_full], ignore_index=True)
    else:
        gone = int(rng.choice(before_files))
        files = [f for f in before_files if f != gone]
        reused = [True] * len(files)
        concept_after = concept[concept["file_id"] != gone].reset_index(drop=True)
        full_after = full[full["file_id"] != gone].reset_index(drop=True)
    indexed = pd.DataFrame({"file_id": files, "reused": reused})
    previous_lexicon = Bm25Index.from_terms(full, "file_id") if lexicon else None
    got = metadata.file_concepts(concept_after, full_after, indexed, previous, {"file_terms": full}, previous_lexicon)
    expected = _scored(concept_after, full_after, files)
    assert got.index.tolist() == expected.index.tolist()
    assert [list(c) for c in got["concepts"]] == [list(c) for c in expected["concepts"]]
    # a second count, by a file of words no other file has: only the ranges carried over decide what is scored
    again = _previous(got, files)
    n_more = max(files) + 1
    more = pd.DataFrame({"file_id": [*files, n_more], "reused": [True] * len(files) + [False]})
    extra_concept, extra_full = _terms(rng, [n_more], set(), [f"new{i}" for i in range(40)])
    concept_more = pd.concat([concept_after, extra_concept], ignore_index=True)
    full_more = pd.concat([full_after, extra_full], ignore_index=True)
    got = metadata.file_concepts(concept_more, full_more, more, again, {"file_terms": full_after})
    expected = _scored(concept_more, full_more, [*files, n_more])
    assert [list(c) for c in got["concepts"]] == [list(c) for c in expected["concepts"]]


def _previous(concepts: pd.DataFrame, files: list[int]) -> pd.DataFrame:
    """A previous files table of these files with these concepts and ranges."""
    return concepts.reindex(files).rename_axis("file_id").reset_index()


def test_a_file_added_carries_most_files_concepts_over(monkeypatch):
    """A file of words no other file has moves only the number of files: the files whose range holds the new number
    (nearly all) keep their concepts without being scored again."""
    rng = np.random.default_rng(7)
    before_files = list(range(200))
    concept, full = _terms(rng, before_files, set())
    previous = _previous(_scored(concept, full, before_files), before_files)
    more_concept, more_full = _terms(rng, [200], set(), [f"new{i}" for i in range(40)])
    indexed = pd.DataFrame({"file_id": [*before_files, 200], "reused": [True] * 200 + [False]})
    scored_files = []
    score = metadata._scored_concepts
    monkeypatch.setattr(
        metadata, "_scored_concepts", lambda tf, fr: scored_files.extend(tf["file_id"].unique()) or score(tf, fr)
    )
    concept_after = pd.concat([concept, more_concept], ignore_index=True)
    full_after = pd.concat([full, more_full], ignore_index=True)
    metadata.file_concepts(concept_after, full_after, indexed, previous, {"file_terms": full})
    assert 200 in scored_files and len(set(scored_files)) < 10


@pytest.mark.parametrize("seed", range(30))
def test_a_files_range_is_where_scoring_it_again_gives_the_same_concepts(seed):
    """Inside a file's range the concepts scored under another number of files are the same, just outside (where a
    pair of its rows swaps) they are not."""
    rng = np.random.default_rng(seed)
    files = list(range(int(rng.integers(2, 12))))
    concept, full = _terms(rng, files, set())
    frequencies = metadata._document_frequencies(full)
    scored = metadata._scored_concepts(full, frequencies)
    for f, row in scored.iterrows():
        lo, hi = row["concept_lo"], row["concept_hi"]
        assert lo < np.log1p(frequencies[0]) + 1 < hi
        for level, same in ((lo + 1e-3, True), (hi - 1e-3, True), (lo - 1e-3, False), (hi + 1e-3, False)):
            if not np.isfinite(level) or (same and not lo + 1e-3 < hi - 1e-3):
                continue
            n = float(np.expm1(level - 1))  # (the number of files that puts A at this level)
            again = metadata._scored_concepts(full, (n, *frequencies[1:]))
            assert (list(again.loc[f, "concepts"]) == list(row["concepts"])) == same, (f, level)


@pytest.mark.parametrize("seed", range(30))
def test_a_check_of_concepts_still_on_top_gives_the_ranges_scoring_gives(seed):
    """`_still_on_top` of the concepts scoring just gave keeps every file but those whose last concept ties another
    row (it counts a tie as moved), with the same range (both are the range of A where the same pairs of rows keep
    their order)."""
    rng = np.random.default_rng(seed)
    files = list(range(int(rng.integers(2, 30))))
    concept, full = _terms(rng, files, set())
    frequencies = metadata._document_frequencies(full)
    scored = metadata._scored_concepts(full, frequencies)
    held = metadata._still_on_top(scored["concepts"], full, frequencies)
    assert set(held.index) <= set(scored.index) and len(held) >= len(scored) / 2
    for column in metadata.BOUNDS:
        np.testing.assert_allclose(held[column], scored.loc[held.index, column], rtol=1e-12)
