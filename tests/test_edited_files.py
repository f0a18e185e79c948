"""The symbols `cra serve --watch` reads from changed files before the re-index has them: the index's own parse,
nothing for files it would not index, no overlay at all for a burst of changes."""

from __future__ import annotations

from cra.drivers.serve.edited import MAX_EDITED_FILES, edited_files, with_edited
from cra.drivers.serve.symbol_search import matching_symbols


def test_the_changed_files_symbols_are_those_the_index_parses(tmp_path):
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "tax.py").write_text("class Tax:\n    def vat_rate(self, country):\n        return 0.2\n")
    (tmp_path / "app" / "blob.py").write_bytes(b"def not_text():\0\n")
    (tmp_path / "notes.txt").write_text("def vat_in_prose():\n")
    edited = edited_files(tmp_path, ["app/tax.py", "app/blob.py", "notes.txt", "app/gone.py"])
    assert edited.paths == {"app/tax.py", "app/blob.py", "notes.txt", "app/gone.py"}
    assert edited.files["path"].tolist() == ["app/tax.py"]
    symbols = edited.tables["symbols"]
    assert symbols[["qualified_name", "kind", "start_line", "end_line"]].values.tolist() == [
        ["Tax", "class", 1, 3],
        ["Tax.vat_rate", "method", 2, 3],
    ]
    found = matching_symbols(edited, "vat")
    assert found["path"].tolist() == ["app/tax.py"] and found["name"].tolist() == ["vat_rate"]
    assert edited_files(tmp_path, [f"app/m{i}.py" for i in range(MAX_EDITED_FILES + 1)]) is None


def test_the_kbs_rows_of_a_changed_file_give_way_to_the_files_own(tmp_path):
    (tmp_path / "a.py").write_text("def total_new():\n    return 1\n")
    edited = edited_files(tmp_path, ["a.py", "b.py"])
    kb_found = matching_symbols(edited, "total").assign(path=["b.py"])  # (a stale row of a deleted file)
    merged = with_edited(kb_found, edited, "total", lambda paths: paths == paths)
    assert merged["path"].tolist() == ["a.py"] and merged["name"].tolist() == ["total_new"]
