"""When a file is added or deleted the number of files moves every idf, and with it the order of nearly tied terms:
`metadata.file_concepts` then carries over only the concepts still on top in order (`_still_on_top`) and scores the
other files again. On random small KBs (where a moved count reorders many files' terms) the concepts are those of
scoring every file."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cra.dataflows.index import metadata
from cra.dataflows.lexical import Bm25Index

POOL = [f"w{i:02}" for i in range(40)]


def _terms(rng: np.random.Generator, files: list[int], fallback: set[int]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(concept terms, file terms) of these files: random terms of a small pool, tf 1-20; files in `fallback` have no
    concept terms (their full-text terms are scored)."""
    concept, full = [], []
    for f in files:
        words = rng.choice(POOL, size=int(rng.integers(0, 16)), replace=False)
        for w in words:
            tf = int(rng.integers(1, 21))
            full.append((f, str(w), tf))
            if f not in fallback and rng.random() < 0.8:
                concept.append((f, str(w), int(rng.integers(1, tf + 1))))
    frame = lambda rows: pd.DataFrame(rows, columns=["file_id", "term", "tf"]).astype(  # noqa: E731
        {"file_id": "int32", "term": "str", "tf": "int32"}
    )
    return frame(concept), frame(full)


def _scored(concept: pd.DataFrame, full: pd.DataFrame, files: list[int]) -> pd.Series:
    """Every file scored (nothing carried): the plain definition."""
    indexed = pd.DataFrame({"file_id": files, "reused": False})
    none = pd.DataFrame({"file_id": pd.Series(dtype="int64"), "concepts": pd.Series(dtype=object)})
    return metadata.file_concepts(concept, full, indexed, none, None)


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("edit", ["add", "delete"])
@pytest.mark.parametrize("lexicon", [False, True])
def test_concepts_after_a_file_is_added_or_deleted_are_those_of_scoring_every_file(seed, edit, lexicon):
    """lexicon: the document frequencies come from the previous file lexicon plus the change, not counted."""
    rng = np.random.default_rng(seed)
    before_files = list(range(int(rng.integers(3, 25))))
    fallback = {f for f in before_files if rng.random() < 0.2}
    concept, full = _terms(rng, before_files, fallback)
    previous = pd.DataFrame({"file_id": before_files})
    previous["concepts"] = _scored(concept, full, before_files).reindex(before_files).to_numpy()
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
    assert [list(c) for c in got] == [list(c) for c in expected]


def test_a_file_added_carries_most_files_concepts_over(monkeypatch):
    """Files whose terms are far apart in score keep their concepts without being scored again."""
    rng = np.random.default_rng(7)
    before_files = list(range(200))
    concept, full = _terms(rng, before_files, set())
    previous = pd.DataFrame({"file_id": before_files})
    previous["concepts"] = _scored(concept, full, before_files).reindex(before_files).to_numpy()
    more_concept, more_full = _terms(rng, [200], set())
    indexed = pd.DataFrame({"file_id": [*before_files, 200], "reused": [True] * 200 + [False]})
    scored_files = []
    score = metadata._scored_concepts
    monkeypatch.setattr(
        metadata, "_scored_concepts", lambda tf, fr: scored_files.extend(tf["file_id"].unique()) or score(tf, fr)
    )
    concept_after = pd.concat([concept, more_concept], ignore_index=True)
    full_after = pd.concat([full, more_full], ignore_index=True)
    metadata.file_concepts(concept_after, full_after, indexed, previous, {"file_terms": full})
    assert 200 in scored_files and len(set(scored_files)) < 100


def test_fewer_concepts_than_the_most_beside_other_rows_count_as_moved():
    """A file listing fewer than MAX_CONCEPTS terms while it has other rows: those would be among its concepts."""
    tf = pd.DataFrame({"file_id": [0, 0, 0, 1], "term": ["a", "b", "c", "a"], "tf": [5, 2, 1, 1]}).astype(
        {"term": "str"}
    )
    frequencies = metadata._document_frequencies(tf)
    concepts = pd.Series([["a", "b"], ["a"]], index=[0, 1], dtype=object)
    assert metadata._still_on_top(concepts, tf, frequencies).tolist() == [1]
