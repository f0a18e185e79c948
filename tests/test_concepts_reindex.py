"""A re-index scores again the concepts of the files it must only: those changed, those citing a term whose document
frequency rose, those holding one whose frequency fell; every other file carries its concepts over. Concepts and
concept terms equal a fresh index's after each edit."""

from __future__ import annotations

import bisect
import random
from pathlib import Path

import pandas as pd
import pyarrow as pa

from cra.dataflows import lexical
from cra.dataflows.index import metadata
from cra.dataflows.index.schema import arrow_schema
from cra.drivers.common.tokens import count_tokens
from cra.drivers.index.indexer import index_frames, index_repository
from cra.drivers.kb.store import pandas_readable
from tests.kb_compare import compare_kbs

N_FILES = 12
OWN = 11  # words of each file's own (document frequency 1): one more than a file's concepts


def _module(i: int, shared: bool) -> str:
    """A module of OWN functions named by words no other file holds; `shared`: a comment naming 'ledger' (a word of
    many files, so of none's concepts)."""
    letters = "abcdefghijklmnop"
    names = [f"q{letters[i]}{letters[k]}" for k in range(OWN)]
    body = "".join(f"def {name}():\n    return 1\n\n\n" for name in names)
    return body + ("# ledger\n" if shared else "")


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "app").mkdir(parents=True)
    for i in range(N_FILES):
        (repo / "app" / f"m{i:02}.py").write_text(_module(i, shared=i < N_FILES - 1))
    return repo


def _loaded(tables: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """The tables as a KB load returns them (an Arrow round trip: lists become arrays)."""
    return {
        n: pandas_readable(pa.Table.from_pandas(f, schema=arrow_schema(n), preserve_index=False)).to_pandas()
        for n, f in tables.items()
    }


def _concepts(tables: dict[str, pd.DataFrame]) -> dict[str, list[str]]:
    return dict(zip(tables["files"]["path"], map(list, tables["files"]["concepts"])))


def _index(repo: Path, previous=None):
    return index_frames(repo, previous_kb=previous, history=0, count_tokens=count_tokens)[0]


def _scored_files(monkeypatch) -> set[int]:
    """The file_ids whose concepts the next run scores (filled as it goes)."""
    scored: set[int] = set()
    score = metadata._scored_concepts

    def spy(tf, frequencies):
        scored.update(tf["file_id"].astype(int))
        return score(tf, frequencies)

    monkeypatch.setattr(metadata, "_scored_concepts", spy)
    return scored


def _same_as_fresh(repo: Path, incremental: dict[str, pd.DataFrame]) -> None:
    fresh = _index(repo)
    assert _concepts(incremental) == _concepts(fresh)
    rows = lambda t: list(zip(*(t["concept_terms"][c].astype(object) for c in ("file_id", "term", "tf"))))  # noqa: E731
    assert rows(incremental) == rows(fresh)


def test_a_word_added_to_one_file_scores_again_that_file_only_when_no_file_cites_it(tmp_path, monkeypatch):
    repo = _repo(tmp_path)
    first = _index(repo)
    assert not any("ledger" in c for c in _concepts(first).values())  # (11 files hold it: no file's concept)
    last = repo / "app" / f"m{N_FILES - 1:02}.py"
    last.write_text(last.read_text() + "# ledger\n")  # its document frequency rises, in 11 files' scoring rows
    scored = _scored_files(monkeypatch)
    incremental = _index(repo, _loaded(first))
    ids = dict(zip(incremental["files"]["path"], incremental["files"]["file_id"]))
    assert scored == {ids[f"app/m{N_FILES - 1:02}.py"]}
    _same_as_fresh(repo, incremental)


def test_a_word_gone_from_one_file_scores_again_every_file_holding_it(tmp_path, monkeypatch):
    repo = _repo(tmp_path)
    rare = repo / "app" / "m00.py"
    rare.write_text(rare.read_text() + "# qaaa\n")  # m00's first word, in one more file: df 2
    other = repo / "app" / "m01.py"
    other.write_text(other.read_text() + "# qaaa\n")
    first = _index(repo)
    assert "qaaa" not in _concepts(first)["app/m01.py"]  # (df 2: it ranks 12th of m01's 12 words)
    other.write_text(_module(1, shared=True))  # m01 lets go of it: df 1 again, it ranks first in m00
    scored = _scored_files(monkeypatch)
    incremental = _index(repo, _loaded(first))
    ids = dict(zip(incremental["files"]["path"], incremental["files"]["file_id"]))
    assert ids["app/m00.py"] in scored and len(scored) == 2
    _same_as_fresh(repo, incremental)


def test_a_one_file_reindex_splices_the_concept_terms_without_a_mask_over_every_row(tmp_path, monkeypatch):
    repo = _repo(tmp_path)
    first = _index(repo)
    (repo / "app" / "m03.py").write_text(_module(3, shared=True) + "def extra():\n    return 2\n")
    (repo / "app" / "m05.py").unlink()
    (repo / "app" / "m05b.py").write_text(_module(13, shared=False))

    def no_mask(*args, **kwargs):
        raise AssertionError("kept_rows: a mask over every previous row")

    monkeypatch.setattr(metadata, "kept_rows", no_mask)
    incremental = _index(repo, _loaded(first))
    monkeypatch.undo()
    _same_as_fresh(repo, incremental)


def _kb_same_as_fresh(repo: Path, kb: Path, fresh: Path) -> None:
    index_repository(repo, fresh, history=0)
    compared, differences = compare_kbs(kb, fresh, ignore={"n_parsed", "n_reused", "workers", "notes", "carried"})
    assert "files.parquet" in compared and "concept_terms.arrow" in compared
    assert differences == []


def test_a_one_file_reindex_reads_the_document_frequencies_from_the_previous_lexicon(tmp_path, monkeypatch):
    repo = _repo(tmp_path)
    index_repository(repo, tmp_path / "kb", history=0)
    last = repo / "app" / f"m{N_FILES - 1:02}.py"
    last.write_text(last.read_text() + "# ledger qzzz\n")  # one df rises, one term is new

    def counted(*args, **kwargs):
        raise AssertionError("document frequencies counted over every file-term row")

    monkeypatch.setattr(metadata, "_document_frequencies", counted)
    index_repository(repo, tmp_path / "kb", history=0)
    monkeypatch.undo()
    _kb_same_as_fresh(repo, tmp_path / "kb", tmp_path / "fresh")


def test_without_a_lexicon_to_read_the_document_frequencies_are_counted(tmp_path, monkeypatch):
    repo = _repo(tmp_path)
    kb = tmp_path / "kb"
    index_repository(repo, kb, history=0)
    (kb / (kb / "CURRENT").read_text().strip() / "file_terms.bm25.arrow").unlink()  # (derived data: may be absent)
    (repo / "app" / "m02.py").write_text(_module(2, shared=False))  # 'ledger' leaves a file: df falls
    counts = []
    count = metadata._document_frequencies
    monkeypatch.setattr(metadata, "_document_frequencies", lambda *a: counts.append(1) or count(*a))
    index_repository(repo, kb, history=0)
    monkeypatch.undo()
    assert counts
    _kb_same_as_fresh(repo, kb, tmp_path / "fresh")


def test_sorted_positions_are_those_of_bisect_in_code_point_order():
    rng = random.Random(58)
    alphabet = "abz_09éß中𝔸"
    words = sorted({"".join(rng.choices(alphabet, k=rng.randint(1, 6))) for _ in range(3000)})
    probes = [*rng.sample(words, 200), *("".join(rng.choices(alphabet, k=rng.randint(0, 7))) for _ in range(300))]
    at, found = lexical.term_codes(pa.array(words, type=pa.string()), pa.array(probes, type=pa.string()))
    assert list(at) == [bisect.bisect_left(words, p) for p in probes]
    assert list(found) == [p in set(words) for p in probes]
