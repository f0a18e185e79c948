"""The knowledge-base (KB) tables: one Parquet file each, these columns, this schema version.

Every producer (index dataflow) and consumer (retrieval dataflow, stores) agrees on these names.
Ids are integers assigned at index time, a function of the tree alone: file ids ascending in path order, in chunks
of paths (`frames.path_block_ids`), symbol ids in (file, position) order in per-file blocks within windows of file ids
(`frames.block_symbol_ids`), both with holes; paths are POSIX, relative to the repository root.
"""

from __future__ import annotations

import pyarrow as pa

SCHEMA_VERSION = 6

_str = pa.string()
_i32 = pa.int32()
_i64 = pa.int64()
_f64 = pa.float64()
_bool = pa.bool_()
_strs = pa.list_(pa.string())

TABLES: dict[str, dict[str, pa.DataType]] = {
    # one row per indexed (text, non-ignored, non-oversized) file
    "files": {
        "file_id": _i32,
        "path": _str,
        "language": _str,  # python|javascript|typescript|tsx|go|java|rust|markdown|text|...
        "size": _i64,  # bytes
        "hash": _str,  # sha1 of the raw bytes
        "is_test": _bool,
        "module": _str,  # dotted module (python/java), package path (go), path without extension otherwise
        "package": _str,  # directory of the file ("" at the root)
        "domain": _str,  # top-level area: first path component below src/lib/pkg roots
        "concepts": _strs,  # the file's most distinctive terms (deterministic, no LLM)
        "concept_lo": _f64,  # the range of log(1 + number of files) + 1 over which the concepts stay these (a re-index
        "concept_hi": _f64,  # after a file is added or deleted carries them while the new number is in it)
        "parse_error": _str,  # null when parsed fine
        "n_lines": _i32,
        "tokens": _i32,  # cl100k tokens of the whole file
        "last_commit_time": _i64,  # unix seconds of the newest commit touching it; null without history
        "commit_count": _i32,  # commits touching it within the indexed history (0 without history)
    },
    # whole file text, read lazily: only the files a request includes are sliced
    "contents": {"file_id": _i32, "text": _str},
    # one row per definition
    "symbols": {
        "symbol_id": _i32,
        "file_id": _i32,
        "name": _str,
        "qualified_name": _str,  # Outer.inner within the file, e.g. "Rule_L031._lint_aliases"
        "kind": _str,  # function|method|class|interface|type_alias|enum|constant
        "start_line": _i32,  # 1-based, inclusive, decorators included
        "end_line": _i32,
        "signature": _str,  # the def/class header line(s), e.g. "def f(a: int) -> str:"
        "docstring": _str,  # null when none
        "decorators": _strs,
        "parent_id": _i32,  # enclosing symbol, null at module level
        "signature_tokens": _i32,
        "body_tokens": _i32,  # tokens of the full source lines start..end
        "docstring_tokens": _i32,
    },
    # comments, attached to the innermost enclosing symbol when there is one
    "comments": {
        "file_id": _i32,
        "symbol_id": _i32,  # null for module-level comments
        "line": _i32,
        "text": _str,
        "is_rationale": _bool,  # explains *why*: workaround, because, must, hack, legacy, issue refs ...
    },
    # raw import statements, kept so edges re-resolve without re-parsing unchanged files
    "imports": {
        "file_id": _i32,
        "target": _str,  # as written: "pkg.mod", "./util", "github.com/x/y/z", "com.acme.Foo"
        "names": _strs,  # imported names (python `from x import a, b`; js named imports)
        "level": _i32,  # python relative-import level (0 = absolute)
        "line": _i32,
    },
    # raw identifier references made by a symbol (calls, bases, annotations)
    "references": {
        "file_id": _i32,
        "symbol_id": _i32,  # the referring symbol
        "name": _str,  # referenced identifier as written, possibly dotted ("os.path.join", "Base")
        "kind": _str,  # call|base|annotation
    },
    # every import resolved inside the repository (member null for a module), kept for re-indexes
    "import_bindings": {"file_id": _i32, "dst_file_id": _i32, "local": _str, "member": _str},
    # resolved file -> file import edges inside the repository
    "edges": {"src_file_id": _i32, "dst_file_id": _i32, "kind": _str},
    # resolved symbol -> symbol references inside and across files
    "symbol_edges": {"src_symbol_id": _i32, "dst_symbol_id": _i32, "kind": _str},
    # git history (empty without a repository)
    "commits": {"commit": _str, "time": _i64, "author": _str, "message": _str, "n_files": _i32},
    "commit_files": {"commit": _str, "path": _str},
    "cochange": {"file_a": _i32, "file_b": _i32, "count": _i32},  # file_a < file_b
    # non-source files most fix commits change too (changelogs, release notes): shown, not ranked
    "companions": {"path": _str, "share": _f64, "n_fix_commits": _i32, "latest": _str},
    # lexical index: term frequencies (kept for incremental rebuilds) and BM25 weights (queried)
    "file_terms": {"file_id": _i32, "term": _str, "tf": _i32},
    # what file concepts are scored on: terms of each file's symbol names, docstrings and comments (kept for re-indexes)
    "concept_terms": {"file_id": _i32, "term": _str, "tf": _i32},
    "symbol_terms": {"symbol_id": _i32, "term": _str, "tf": _i32},
    "commit_terms": {"commit": _str, "term": _str, "tf": _i32},
}

# columns a table is written with as nulls when a frame lacks them (what only the index computes: a files table
# made elsewhere, e.g. by a notebook or a test, has no concept ranges; the next re-index scores those files)
OPTIONAL = {"files": ("concept_lo", "concept_hi")}

# tables a request needs in memory (contents is loaded lazily, terms only for rebuilds)
REQUEST_TABLES = (
    "files",
    "symbols",
    "comments",
    "edges",
    "symbol_edges",
    "cochange",
    "commits",
    "commit_files",
    "companions",
)


def arrow_schema(table: str) -> pa.Schema:
    """The pyarrow schema of one KB table, so every writer produces identical column types."""
    return pa.schema([(name, typ) for name, typ in TABLES[table].items()])
