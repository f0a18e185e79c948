"""The KB store: atomic versioned writes, schema-version checks, clear errors."""

import json
import os

import pandas as pd
import pytest

from cra.dataflows.index.schema import SCHEMA_VERSION, TABLES
from cra.drivers.common.errors import CraError
from cra.drivers.kb.store import load_kb, read_metadata, read_tables, write_kb


def _files(paths):
    n = len(paths)
    return pd.DataFrame(
        {
            "file_id": range(n),
            "path": paths,
            "language": ["python"] * n,
            "size": [10] * n,
            "hash": ["h"] * n,
            "is_test": [False] * n,
            "module": paths,
            "package": [""] * n,
            "domain": [""] * n,
            "concepts": [["alpha"]] * n,
            "parse_error": [None] * n,
            "n_lines": [1] * n,
            "tokens": [3] * n,
            "last_commit_time": [None] * n,
            "commit_count": [0] * n,
        }
    )


def test_write_then_read_round_trips_every_table(tmp_path):
    kb = tmp_path / "kb"
    write_kb(kb, {"files": _files(["a.py", "b.py"])}, {"repo_root": "x"})
    tables = read_tables(kb, TABLES)
    assert list(tables["files"]["path"]) == ["a.py", "b.py"]
    assert list(tables["files"].columns) == list(TABLES["files"])
    assert tables["symbols"].empty and list(tables["symbols"].columns) == list(TABLES["symbols"])
    assert read_metadata(kb)["schema_version"] == SCHEMA_VERSION


def test_texts_written_in_batches_read_back_whole(tmp_path, monkeypatch):
    """A memory-mapped table (file texts) is converted and written a batch of rows at a time; it reads back as one."""
    monkeypatch.setattr("cra.drivers.kb.mapped.BATCH_ROWS", 2)
    texts = [f"text of file {i}\n" * (i + 1) for i in range(5)]
    contents = pd.DataFrame({"file_id": range(5), "text": texts})
    write_kb(tmp_path / "kb", {"files": _files([f"{i}.py" for i in range(5)]), "contents": contents}, {})
    back = read_tables(tmp_path / "kb", ["contents"])["contents"]
    assert back["text"].tolist() == texts and back["file_id"].tolist() == list(range(5))


def test_a_rewrite_links_unchanged_tables_and_lets_go_of_the_previous_ones(tmp_path):
    """Tables equal to the live version's are hard-linked, a changed one written; the previous frames are let go
    once compared (a 100,000-file re-index peaked at 4.3 GB holding them through the write, 3.4 GB without), and
    the new ones once written."""
    kb = tmp_path / "kb"
    write_kb(kb, {"files": _files(["a.py"])}, {})

    def inode(name):
        return (kb / (kb / "CURRENT").read_text().strip() / name).stat().st_ino

    files_before, symbols_before = inode("files.parquet"), inode("symbols.arrow")
    previous = read_tables(kb, TABLES)
    tables = {
        "files": _files(["a.py", "b.py"]),
        "symbols": previous["symbols"].copy(),
        "contents": pd.DataFrame({"file_id": [0, 1], "text": ["a = 1\n", "b = 2\n"]}),
    }
    write_kb(kb, tables, {}, previous)
    assert previous == {}
    assert tables == {}  # each table let go of once written and once what is built from it (word tables) is
    assert inode("symbols.arrow") == symbols_before and inode("files.parquet") != files_before
    assert list(read_tables(kb, ["files"])["files"]["path"]) == ["a.py", "b.py"]


def test_rewrite_swaps_versions_and_leaves_one(tmp_path):
    kb = tmp_path / "kb"
    write_kb(kb, {"files": _files(["a.py"])}, {})
    write_kb(kb, {"files": _files(["b.py"])}, {})
    assert [p.name for p in kb.iterdir() if p.is_dir()].__len__() == 1
    assert list(load_kb(kb).files["path"]) == ["b.py"]


def test_interrupted_write_keeps_previous_kb(tmp_path, monkeypatch):
    kb = tmp_path / "kb"
    write_kb(kb, {"files": _files(["a.py"])}, {})

    def boom(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("cra.drivers.kb.store._write_table", boom)
    with pytest.raises(KeyboardInterrupt):
        write_kb(kb, {"files": _files(["b.py"])}, {})
    monkeypatch.undo()
    assert list(read_tables(kb, ["files"])["files"]["path"]) == ["a.py"]
    assert not [p for p in kb.iterdir() if p.name.startswith(".tmp-")]


def test_missing_kb_names_cra_index(tmp_path):
    with pytest.raises(CraError, match="cra index"):
        load_kb(tmp_path / "nothing")


def test_older_schema_says_reindex(tmp_path):
    kb = tmp_path / "kb"
    version = write_kb(kb, {"files": _files(["a.py"])}, {})
    meta = json.loads((version / "metadata.json").read_text())
    meta["schema_version"] = SCHEMA_VERSION - 1
    (version / "metadata.json").write_text(json.dumps(meta))
    with pytest.raises(CraError, match=r"schema version .*Re-run `cra index"):
        load_kb(kb)


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_unwritable_kb_dir_is_a_clear_error(tmp_path):
    kb = tmp_path / "ro"
    kb.mkdir()
    kb.chmod(0o500)
    try:
        with pytest.raises(CraError, match="not writable"):
            write_kb(kb, {"files": _files(["a.py"])}, {})
    finally:
        kb.chmod(0o700)


def test_kb_path_that_is_a_file_is_a_clear_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(CraError, match="not writable"):
        write_kb(blocker / "kb", {"files": _files(["a.py"])}, {})


def test_a_table_written_by_the_index_is_linked_into_the_version_not_converted_again(tmp_path):
    """The index writes contents before its parse; write_kb links that file (the same inode) instead of writing it."""
    from cra.drivers.kb.mapped import write_mapped

    written = tmp_path / "contents.arrow"
    write_mapped(pd.DataFrame({"file_id": [0], "text": ["a = 1\n"]}), "contents", written)
    kb = tmp_path / "kb"
    write_kb(kb, {"files": _files(["a.py"]), "contents": None}, {}, written={"contents": tmp_path})
    version = kb / (kb / "CURRENT").read_text().strip()
    assert (version / "contents.arrow").stat().st_ino == written.stat().st_ino
    assert read_tables(kb, ["contents"])["contents"]["text"].tolist() == ["a = 1\n"]


def test_term_tables_are_memory_mapped_and_read_back_as_the_parquet_ones_were(tmp_path):
    """Term tables (read whole by every re-index) are stored as Arrow IPC and mapped: the same values and dtypes as
    a Parquet table gives (integers as numpy, not Arrow-backed); an older version's Parquet term table still reads."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    terms = pd.DataFrame({"symbol_id": [0, 0, 1], "term": ["parse", "date", "parse"], "tf": [2, 1, 1]})
    kb = tmp_path / "kb"
    write_kb(kb, {"files": _files(["a.py"]), "symbol_terms": terms}, {})
    version = kb / (kb / "CURRENT").read_text().strip()
    assert (version / "symbol_terms.arrow").is_file() and not (version / "symbol_terms.parquet").exists()
    back = read_tables(kb, ["symbol_terms"])["symbol_terms"]
    assert back["symbol_id"].dtype == "int32" and back["tf"].dtype == "int32"
    assert back.astype({"term": object}).to_dict("list") == terms.to_dict("list")
    (version / "symbol_terms.arrow").unlink()  # as a version written before: Parquet
    pq.write_table(pa.Table.from_pandas(terms, preserve_index=False), version / "symbol_terms.parquet")
    assert read_tables(kb, ["symbol_terms"])["symbol_terms"]["term"].tolist() == ["parse", "date", "parse"]


@pytest.mark.parametrize("apart_rows, apart", [(100, True), (2, False)])
def test_word_tables_are_built_beside_the_lexicons_only_on_a_small_kb(tmp_path, monkeypatch, apart_rows, apart):
    """A small KB's word tables (Python string work) are built in a thread of their own beside the lexicons; a large
    one's after them in the same thread, so that their arrays are never held at once."""
    import threading

    import cra.drivers.kb.store as kb_module

    threads = {}
    for name in ("write_word_tables", "_write_lexicon"):
        original = getattr(kb_module, name)

        def recording(*args, _original=original, _name=name, **kwargs):
            threads.setdefault(_name, set()).add(threading.get_ident())
            return _original(*args, **kwargs)

        monkeypatch.setattr(kb_module, name, recording)
    monkeypatch.setattr(kb_module, "BUILDS_APART_ROWS", apart_rows)
    terms = pd.DataFrame({"symbol_id": [0, 0, 1], "term": ["parse", "date", "parse"], "tf": [2, 1, 1]})
    symbols = pd.DataFrame(
        {
            "symbol_id": [0],
            "file_id": [0],
            "name": ["parse_date"],
            "qualified_name": ["parse_date"],
            "kind": ["function"],
            "start_line": [1],
            "end_line": [1],
            "signature": ["def parse_date():"],
            "docstring": [None],
            "decorators": [[]],
            "parent_id": [None],
            "signature_tokens": [4],
            "body_tokens": [4],
            "docstring_tokens": [0],
        }
    )
    write_kb(tmp_path / "kb", {"files": _files(["a.py"]), "symbols": symbols, "symbol_terms": terms}, {})
    assert len(threads["write_word_tables"]) == len(threads["_write_lexicon"]) == 1
    assert (threads["write_word_tables"] != threads["_write_lexicon"]) is apart
    assert load_kb(tmp_path / "kb").words["symbol_names"]["name"].tolist() == ["parse_date"]


def test_a_table_equal_to_the_live_one_read_back_in_batches_is_linked(tmp_path, monkeypatch):
    """A memory-mapped table written in several batches reads back as chunked Arrow columns; this run's frame of the
    same values (texts as Python strings, as a re-index's parsed rows make them) is still found equal and linked."""
    monkeypatch.setattr("cra.drivers.kb.mapped.BATCH_ROWS", 2)
    kb = tmp_path / "kb"
    comments = pd.DataFrame(
        {
            "file_id": [0, 0, 0, 0, 0],
            "symbol_id": pd.array([None, 0, 0, 1, None], dtype="Int32"),
            "line": [1, 2, 3, 5, 8],
            "text": [f"comment {i}" for i in range(5)],
            "is_rationale": [False, True, False, False, True],
        }
    )
    write_kb(kb, {"files": _files(["a.py"]), "comments": comments}, {})
    linked = (kb / (kb / "CURRENT").read_text().strip() / "comments.arrow").stat().st_ino
    previous = read_tables(kb, TABLES)
    write_kb(kb, {"files": _files(["a.py"]), "comments": comments.astype({"text": object})}, {}, previous)
    assert (kb / (kb / "CURRENT").read_text().strip() / "comments.arrow").stat().st_ino == linked


def test_a_reindex_reads_the_previous_term_tables_without_copying_their_terms(tmp_path):
    """The term tables a re-index reads whole (OpenJDK: 40M rows) are views of the mapped files: reading them does
    not copy their terms (cast to pandas' large strings they took 0.6 GB), and their values are the table's."""
    import pyarrow as pa

    from cra.drivers.kb.store import PreviousTables

    names = ["file_terms", "symbol_terms", "concept_terms"]
    terms = [f"{word * 40}{i}" for i in range(2000) for word in ("alpha", "beta", "gamma")]  # 6000 rows, 1.2 MB
    frames = {
        n: pd.DataFrame({"symbol_id" if n == "symbol_terms" else "file_id": [0, 0, 1] * 2000, "term": terms, "tf": 1})
        for n in names
    }
    kb = tmp_path / "kb"
    write_kb(kb, {"files": _files(["a.py", "b.py"]), **frames}, {"repo_root": "x"})
    before = pa.total_allocated_bytes()
    previous = PreviousTables(kb, names)
    read = {n: previous[n] for n in names}
    assert pa.total_allocated_bytes() - before < sum(map(len, terms)) / 4  # (the id and count columns: 48 kB each)
    for name in names:
        assert read[name]["term"].astype(object).tolist() == terms
        assert read[name]["tf"].tolist() == [1] * len(terms)


def test_deferred_previous_tables_are_views_until_converted_and_cleared_where_handed_out(tmp_path):
    """A deferred table is only mapped: `views` gives it as Arrow-backed columns over the file (no heap), `converted`
    as the others are read, with the same values; `clear` (what `write_kb` does once it has compared them) empties the
    dicts handed to the dataflow too, so they do not hold the previous tables through the write."""
    from cra.drivers.kb.store import PreviousTables

    terms = pd.DataFrame({"symbol_id": [0, 0, 1], "term": ["alpha", "beta", "alpha"], "tf": [1, 2, 1]})
    kb = tmp_path / "kb"
    write_kb(kb, {"files": _files(["a.py", "b.py"]), "symbol_terms": terms}, {"repo_root": "x"})
    previous = PreviousTables(kb, ["files", "symbol_terms"], deferred={"symbol_terms"})
    viewed = previous.views()
    assert all(isinstance(t, pd.ArrowDtype) for t in viewed["symbol_terms"].dtypes)
    assert not any(isinstance(t, pd.ArrowDtype) for t in viewed["files"][["file_id"]].dtypes)
    converted = previous.converted({"symbol_terms"})
    assert not isinstance(converted["symbol_terms"]["symbol_id"].dtype, pd.ArrowDtype)
    assert converted["symbol_terms"]["term"].astype(object).tolist() == viewed["symbol_terms"]["term"].tolist()
    assert converted["symbol_terms"]["tf"].tolist() == [1, 2, 1]
    previous.clear()
    assert viewed == {} and converted == {} and len(previous) == 0
