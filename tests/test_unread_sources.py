"""`cra index` names the large source files whose symbols cover almost none of their lines (the parser missed how
they are written): symbols within their parent's lines count once, imports count a line each."""

from __future__ import annotations

import pandas as pd

from cra.dataflows.index.health import unread_sources


def _files() -> pd.DataFrame:
    rows = [  # file_id, path, language, is_test, parse_error, n_lines
        (0, "covered.py", "python", False, None, 200),
        (1, "nested.py", "python", False, None, 200),
        (2, "methods.go", "go", False, None, 200),
        (3, "reexports.rs", "rust", False, None, 200),
        (4, "test_empty.py", "python", True, None, 200),
        (5, "broken.py", "python", False, "syntax error at line 3", 200),
        (6, "short.py", "python", False, None, 40),
        (7, "notes.md", "markdown", False, None, 500),
    ]
    return pd.DataFrame(rows, columns=["file_id", "path", "language", "is_test", "parse_error", "n_lines"])


def test_files_whose_symbols_span_under_a_tenth_of_their_lines_are_named():
    symbols = pd.DataFrame(
        [  # symbol_id, file_id, start_line, end_line, parent_id
            (0, 0, 1, 150, None),
            (1, 0, 2, 149, 0),
            (10, 1, 1, 15, None),  # a class of 15 lines ...
            (11, 1, 2, 14, 10),  # ... whose method lies within it: 15 lines of 200
            (20, 2, 1, 5, None),  # a type ...
            (21, 2, 10, 40, 20),  # ... and a method outside its lines (Go): 36 lines
        ],
        columns=["symbol_id", "file_id", "start_line", "end_line", "parent_id"],
    ).astype({"parent_id": "Int64"})
    imports = pd.DataFrame(
        [(3, line) for line in range(1, 31)] + [(3, 1)], columns=["file_id", "line"]
    )  # 30 distinct lines of `pub use`: read
    assert unread_sources(_files(), symbols, imports).tolist() == ["nested.py"]
    assert unread_sources(_files(), symbols.iloc[:0], imports.iloc[:0]).tolist() == [
        "covered.py",
        "nested.py",
        "methods.go",
        "reexports.rs",
    ]
