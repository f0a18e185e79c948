"""Parse changed files and merge their rows with the reused rows of unchanged files.

Symbols get dense ids over the whole KB (previous ids of reused files are re-keyed), token counts of
new files and symbols are computed in one `count_tokens_batch` call per run, so requests never tokenise.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from dataflows.index.parsers import parse_source
from dataflows.index.parsers.comments import is_rationale
from dataflows.index.parsers.models import ParsedFile
from dataflows.index.schema import TABLES

_NULLABLE_INTS = {("symbols", "parent_id"), ("comments", "symbol_id"), ("files", "last_commit_time")}


def _conform(frame: pd.DataFrame, table: str) -> pd.DataFrame:
    """Exactly the schema's columns in order, ints as int32/int64 (nullable ones as Int32/Int64), index reset."""
    out = pd.DataFrame(index=range(len(frame)))
    for column, typ in TABLES[table].items():
        values = frame[column].reset_index(drop=True) if column in frame else pd.Series([None] * len(frame))
        name = str(typ)
        if name in ("int32", "int64"):
            nullable = (table, column) in _NULLABLE_INTS
            values = values.astype(name.capitalize() if nullable else name)
        elif name == "bool":
            values = values.astype(bool)
        elif name == "string":
            values = values.astype(object).where(values.notna(), None)
        out[column] = values
    return out


def _previous(previous_kb: dict[str, pd.DataFrame] | None, table: str) -> pd.DataFrame:
    """One table of the last index, or an empty frame with the schema's columns."""
    if previous_kb and table in previous_kb:
        return previous_kb[table]
    return _conform(pd.DataFrame(columns=list(TABLES[table])), table)


def parsed_files(indexed_files: pd.DataFrame, on_progress: Callable) -> dict[int, ParsedFile | None]:
    """ParsedFile per file_id of every new or changed file (None where no parser knows the language)."""
    todo = indexed_files[~indexed_files["reused"]]
    total = len(todo)
    out: dict[int, ParsedFile | None] = {}
    for done, (file_id, language, text) in enumerate(zip(todo["file_id"], todo["language"], todo["text"]), 1):
        try:
            out[int(file_id)] = parse_source(language, text)
        except Exception as exc:  # a parser bug must not stop the index: record it like a syntax error
            out[int(file_id)] = ParsedFile(error=f"{type(exc).__name__}: {exc}")
        on_progress(done, total)
    return out


def new_symbol_rows(parsed_files: dict[int, ParsedFile | None], indexed_files: pd.DataFrame) -> pd.DataFrame:
    """Symbols of the parsed files with their source body (lines start..end), keyed by (file_id, local index)."""
    texts = dict(zip(indexed_files["file_id"], indexed_files["text"]))
    rows = []
    for file_id, parsed in parsed_files.items():
        if parsed is None or not parsed.symbols:
            continue
        lines = texts[file_id].splitlines(keepends=True)
        for local, s in enumerate(parsed.symbols):
            body = "".join(lines[max(s.start_line - 1, 0) : s.end_line])
            rows.append((file_id, local, s.name, s.qualified_name, s.kind, s.start_line, s.end_line, s.signature,
                         s.docstring, list(s.decorators), s.parent, body))  # fmt: skip
    columns = ["file_id", "local", "name", "qualified_name", "kind", "start_line", "end_line", "signature",
               "docstring", "decorators", "parent_local", "body"]  # fmt: skip
    return pd.DataFrame(rows, columns=columns)


def reused_symbol_rows(indexed_files: pd.DataFrame, previous_kb: dict[str, pd.DataFrame] | None) -> pd.DataFrame:
    """The previous index's symbols of files whose content did not change."""
    previous = _previous(previous_kb, "symbols")
    return previous[previous["file_id"].isin(indexed_files.loc[indexed_files["reused"], "file_id"])]


def symbol_keys(reused_symbol_rows: pd.DataFrame, new_symbol_rows: pd.DataFrame) -> pd.DataFrame:
    """Dense new symbol_id for every symbol, ordered by file then position; old_id for reused, local for new."""
    reused = pd.DataFrame(
        {"file_id": reused_symbol_rows["file_id"].astype("int64"), "order": reused_symbol_rows["symbol_id"].astype("int64"),
         "old_id": reused_symbol_rows["symbol_id"].astype("int64"), "local": -1}  # fmt: skip
    )
    new = pd.DataFrame(
        {"file_id": new_symbol_rows["file_id"].astype("int64"), "order": new_symbol_rows["local"].astype("int64"),
         "old_id": -1, "local": new_symbol_rows["local"].astype("int64")}  # fmt: skip
    )
    keys = pd.concat([reused, new], ignore_index=True).sort_values(["file_id", "order"], ignore_index=True)
    keys["symbol_id"] = np.arange(len(keys), dtype="int64")
    return keys.drop(columns="order")


def _old_to_new(symbol_keys: pd.DataFrame) -> pd.Series:
    """new symbol_id by previous symbol_id (reused files)."""
    reused = symbol_keys[symbol_keys["old_id"] >= 0]
    return pd.Series(reused["symbol_id"].to_numpy(), index=reused["old_id"].to_numpy())


def _local_to_new(symbol_keys: pd.DataFrame, file_ids: pd.Series, locals_: pd.Series) -> pd.Series:
    """new symbol_id of (file_id, local index) pairs of parsed files; NA where local is missing."""
    new = symbol_keys[symbol_keys["local"] >= 0]
    lookup = pd.Series(new["symbol_id"].to_numpy(), index=pd.MultiIndex.from_arrays([new["file_id"], new["local"]]))
    keys = pd.MultiIndex.from_arrays([file_ids.astype("int64"), locals_.fillna(-1).astype("int64")])
    return pd.Series(lookup.reindex(keys).to_numpy(), index=file_ids.index).astype("Int64")


def token_counts(
    indexed_files: pd.DataFrame, new_symbol_rows: pd.DataFrame, count_tokens_batch: Callable
) -> dict[str, np.ndarray]:
    """Tokens of new/changed files and of their symbols' signature, body, docstring: one batched call per run."""
    new_files = indexed_files[~indexed_files["reused"]]
    parts = {
        "file": new_files["text"].tolist(),
        "signature": new_symbol_rows["signature"].fillna("").tolist(),
        "body": new_symbol_rows["body"].fillna("").tolist(),
        "docstring": new_symbol_rows["docstring"].fillna("").tolist(),
    }
    texts = [t for texts in parts.values() for t in texts]
    counts = np.asarray(count_tokens_batch(texts) if texts else [], dtype="int64")
    out, start = {}, 0
    for name, texts in parts.items():
        out[name] = counts[start : start + len(texts)]
        start += len(texts)
    return out


def file_tokens(indexed_files: pd.DataFrame, previous_files: pd.DataFrame, token_counts: dict[str, np.ndarray]) -> pd.Series:
    """cl100k tokens of every indexed file by file_id: counted for new files, carried over for reused ones."""
    new_ids = indexed_files.loc[~indexed_files["reused"], "file_id"].to_numpy()
    counted = pd.Series(token_counts["file"], index=new_ids, dtype="int64")
    reused_ids = indexed_files.loc[indexed_files["reused"], "file_id"]
    carried = previous_files.set_index("file_id")["tokens"].reindex(reused_ids.to_numpy()).fillna(0).astype("int64")
    return pd.concat([counted, carried]).reindex(indexed_files["file_id"].to_numpy()).fillna(0).astype("int64")


def kb_symbols(
    reused_symbol_rows: pd.DataFrame,
    new_symbol_rows: pd.DataFrame,
    symbol_keys: pd.DataFrame,
    token_counts: dict[str, np.ndarray],
) -> pd.DataFrame:
    """Every definition in the KB (reused rows re-keyed, parsed rows with token counts), ordered by symbol_id."""
    old_to_new = _old_to_new(symbol_keys)
    reused = reused_symbol_rows.assign(
        symbol_id=reused_symbol_rows["symbol_id"].map(old_to_new),
        parent_id=reused_symbol_rows["parent_id"].map(old_to_new),
    )
    new = new_symbol_rows.assign(
        symbol_id=_local_to_new(symbol_keys, new_symbol_rows["file_id"], new_symbol_rows["local"]),
        parent_id=_local_to_new(symbol_keys, new_symbol_rows["file_id"], new_symbol_rows["parent_local"])
        if len(new_symbol_rows) else pd.Series(dtype="Int64"),
        signature_tokens=token_counts["signature"],
        body_tokens=token_counts["body"],
        docstring_tokens=token_counts["docstring"],
    )
    frames = [f for f in (reused, new) if len(f)]
    symbols = pd.concat(frames, ignore_index=True) if frames else new
    return _conform(symbols.sort_values("symbol_id"), "symbols")


def kb_comments(
    parsed_files: dict[int, ParsedFile | None],
    indexed_files: pd.DataFrame,
    symbol_keys: pd.DataFrame,
    previous_kb: dict[str, pd.DataFrame] | None,
) -> pd.DataFrame:
    """Comments of every file, attached to their innermost symbol, with the parser's is_rationale flag."""
    rows = [
        (file_id, c.symbol, c.line, c.text, bool(is_rationale(c.text)))
        for file_id, parsed in parsed_files.items()
        if parsed is not None
        for c in parsed.comments
    ]
    new = pd.DataFrame(rows, columns=["file_id", "local", "line", "text", "is_rationale"])
    new["symbol_id"] = _local_to_new(symbol_keys, new["file_id"], new["local"]) if len(new) else pd.Series(dtype="Int64")
    previous = _previous(previous_kb, "comments")
    reused = previous[previous["file_id"].isin(indexed_files.loc[indexed_files["reused"], "file_id"])]
    reused = reused.assign(symbol_id=reused["symbol_id"].map(_old_to_new(symbol_keys)))
    comments = pd.concat([f for f in (reused, new) if len(f)] or [new], ignore_index=True)
    return _conform(comments.sort_values(["file_id", "line"], kind="stable"), "comments")


def kb_imports(
    parsed_files: dict[int, ParsedFile | None], indexed_files: pd.DataFrame, previous_kb: dict[str, pd.DataFrame] | None
) -> pd.DataFrame:
    """Raw import statements of every file (kept so edges re-resolve without re-parsing)."""
    rows = [
        (file_id, i.target, list(i.names), i.level, i.line)
        for file_id, parsed in parsed_files.items()
        if parsed is not None
        for i in parsed.imports
    ]
    new = pd.DataFrame(rows, columns=["file_id", "target", "names", "level", "line"])
    previous = _previous(previous_kb, "imports")
    reused = previous[previous["file_id"].isin(indexed_files.loc[indexed_files["reused"], "file_id"])]
    reused = reused.assign(names=reused["names"].map(list))
    imports = pd.concat([f for f in (reused, new) if len(f)] or [new], ignore_index=True)
    return _conform(imports.sort_values(["file_id", "line"], kind="stable"), "imports")


def kb_references(
    parsed_files: dict[int, ParsedFile | None], symbol_keys: pd.DataFrame, previous_kb: dict[str, pd.DataFrame] | None
) -> pd.DataFrame:
    """Raw identifier references (call/base/annotation) made by every symbol, keyed by the new symbol ids."""
    rows = [
        (file_id, r.symbol, r.name, r.kind)
        for file_id, parsed in parsed_files.items()
        if parsed is not None
        for r in parsed.references
    ]
    new = pd.DataFrame(rows, columns=["file_id", "local", "name", "kind"])
    new["symbol_id"] = _local_to_new(symbol_keys, new["file_id"], new["local"]) if len(new) else pd.Series(dtype="Int64")
    previous = _previous(previous_kb, "references")
    reused = previous.assign(symbol_id=previous["symbol_id"].map(_old_to_new(symbol_keys)))
    reused = reused[reused["symbol_id"].notna()]
    references = pd.concat([f for f in (reused, new) if len(f)] or [new], ignore_index=True)
    references = references[references["symbol_id"].notna()]
    return _conform(references.sort_values(["symbol_id"], kind="stable"), "references")


def file_parse_errors(
    indexed_files: pd.DataFrame, parsed_files: dict[int, ParsedFile | None], previous_files: pd.DataFrame
) -> pd.Series:
    """Parse error per file_id (None when fine): from this run's parser, or carried over for reused files."""
    carried = previous_files.set_index("file_id")["parse_error"] if len(previous_files) else pd.Series(dtype=object)
    errors = [
        (parsed_files[fid].error if parsed_files[fid] is not None else None)
        if fid in parsed_files
        else carried.get(fid)
        for fid in indexed_files["file_id"]
    ]
    series = pd.Series(errors, index=indexed_files["file_id"].to_numpy(), dtype=object)
    return series.where(series.notna(), None)
