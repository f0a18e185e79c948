"""Parse changed files and merge their rows with the reused rows of unchanged files.

The per-file work of new/changed files (parse, token counts, term counts) runs in batches of files
(`parse_batches` -> `parsed_batch` -> `parsed_rows`), so a driver with a multiprocessing executor
spreads it over cores. Symbols get ids in per-file blocks (`frames.block_symbol_ids`): a file's symbols keep
theirs while another file changes; previous ids of reused files are re-keyed only when a block moved.

Token counts: each file is encoded once; every token is counted on the line holding its first byte
(`count_line_tokens`), so file tokens are exact and a symbol's body_tokens is the sum of its lines.
Term documents: a file is its path + text; a symbol is its qualified name, signature, docstring, body and
attached comments, where a container's (class, interface, enum) body is only the lines none of its members
cover plus the members' names, so a class does not repeat (and re-tokenise) its methods' text.

Resuming: with a `parse_checkpoint` each parsed batch is also saved there, keyed by what it was made of (ids, paths,
languages, text hashes), so a run interrupted mid-way and started again over the same tree loads the batches it
already parsed instead of parsing them again (the driver empties the checkpoint once the KB is written).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from hamilton.htypes import Collect, Parallelizable

from cra.dataflows.index.code_terms import code_term_counts
from cra.dataflows.index.frames import (
    block_symbol_ids,
    conform,
    ids_in,
    in_order,
    kept_rows,
    new_symbol_ids,
    ordered_by,
    previous_table,
    rekeyed_runs,
    spliced,
    stacked,
    stacked_terms,
    symbol_ids_kept,
    take_rows,
    true_runs,
)
from cra.dataflows.index.parsers import parse_source
from cra.dataflows.index.parsers.comments import is_rationale
from cra.dataflows.index.parsers.models import ParsedFile, ParsedSymbol
from cra.dataflows.index.storage import ContentsStore, ParseCheckpoint

BATCH_FILES = 300  # files per parallel task: large enough to amortise pickling, small enough to balance 2+ cores
CONTAINER_KINDS = frozenset({"class", "interface", "enum"})
SYMBOL_COLUMNS = [
    "file_id",
    "local",
    "name",
    "qualified_name",
    "kind",
    "start_line",
    "end_line",
    "signature",
    "docstring",
    "decorators",
    "parent_local",
    "signature_tokens",
    "body_tokens",
    "docstring_tokens",
]
COMMENT_COLUMNS = ["file_id", "local", "line", "text", "is_rationale"]
IMPORT_COLUMNS = ["file_id", "target", "names", "level", "line"]
REFERENCE_COLUMNS = ["file_id", "local", "name", "kind"]


@dataclass
class ParsedBatch:
    """What the per-file work returns for one batch of files, as rows (all keyed by file_id / (file_id, local)).

    Rows, not the parsers' per-file objects: a worker hands back compact frames, and the driver never holds a
    Python object per symbol, comment, import and reference of the whole tree (on a 20,000-file tree those
    objects took about as much memory as every file's text)."""

    errors: pd.Series  # parse error (None when fine) by file_id of every file of the batch
    file_tokens: pd.Series  # cl100k tokens by file_id
    symbols: pd.DataFrame  # SYMBOL_COLUMNS
    comments: pd.DataFrame  # COMMENT_COLUMNS
    imports: pd.DataFrame  # IMPORT_COLUMNS
    references: pd.DataFrame  # REFERENCE_COLUMNS of references made in a symbol, by symbol
    file_terms: pd.DataFrame  # file_id, term, tf; each file's terms sorted
    symbol_terms: pd.DataFrame  # file_id, local, term, tf; each symbol's terms sorted
    concept_terms: pd.DataFrame  # file_id, term, tf of the file's symbol names, docstrings and comments; terms sorted
    resumed: int = 0  # files loaded from the checkpoint of an interrupted run, not parsed by this one


def _parse(language: str, text: str) -> ParsedFile | None:
    """parse_source, with a parser crash recorded like a syntax error instead of stopping the index."""
    try:
        return parse_source(language, text)
    except Exception as exc:  # noqa: BLE001
        return ParsedFile(error=f"{type(exc).__name__}: {exc}")


def _symbol_bodies(lines: list[str], symbols: list[ParsedSymbol]) -> list[str]:
    """Per symbol, the text its terms are counted on: its source lines; for a container (class, interface,
    enum) only the lines no member covers (header, docstring, plain attributes) plus the members' names."""
    members: dict[int, list[ParsedSymbol]] = {}
    for s in symbols:
        if s.parent is not None:
            members.setdefault(s.parent, []).append(s)
    bodies = []
    for idx, s in enumerate(symbols):
        first, last = max(s.start_line - 1, 0), s.end_line
        if s.kind not in CONTAINER_KINDS or idx not in members:
            bodies.append("\n".join(lines[first:last]))
            continue
        own, line = [], first
        for member in sorted(members[idx], key=lambda m: m.start_line):  # (a member may lie past its owner's end:
            own.extend(lines[line : min(max(member.start_line - 1, line), last)])  # Go methods, JS prototypes)
            line = max(line, member.end_line)
        own.extend(lines[line:last])
        bodies.append("\n".join([*own, *(m.name for m in members[idx])]))
    return bodies


def _parse_batch(files: pd.DataFrame, count_tokens: Callable, count_line_tokens: Callable) -> ParsedBatch:
    """Parse each file of a batch (file_id, path, language, text), count its tokens per line and its terms per
    segment (index time)."""
    errors, file_tokens, symbols_, comments_, imports_, references_ = {}, {}, [], [], [], []
    file_terms, symbol_terms, concept_terms = [], [], []
    counted: dict[str, int] = {}

    def tokens_of(text: str) -> int:
        if text not in counted:
            counted[text] = int(count_tokens(text)) if text else 0
        return counted[text]

    for file_id, path, language, text in zip(files["file_id"], files["path"], files["language"], files["text"]):
        file_id = int(file_id)
        result = _parse(language, text)
        errors[file_id] = result.error if result is not None else None
        line_tokens = np.concatenate([[0], np.cumsum(count_line_tokens(text))])
        n_lines = len(line_tokens) - 1
        file_tokens[file_id] = int(line_tokens[-1])
        file_terms.extend((file_id, term, tf) for term, tf in sorted(code_term_counts(path + "\n" + text).items()))
        if result is None:
            continue
        symbols = result.symbols
        for local, s in enumerate(symbols):
            first, last = min(max(s.start_line - 1, 0), n_lines), min(max(s.end_line, 0), n_lines)
            body = int(line_tokens[max(last, first)] - line_tokens[first])
            symbols_.append(
                (
                    file_id,
                    local,
                    s.name,
                    s.qualified_name,
                    s.kind,
                    s.start_line,
                    s.end_line,
                    s.signature,
                    s.docstring,
                    list(s.decorators),
                    s.parent,
                    tokens_of(s.signature),
                    body,
                    tokens_of(s.docstring or ""),
                )
            )
        comments: dict[int, list[str]] = {}
        for c in result.comments:
            comments_.append((file_id, c.symbol, c.line, c.text, bool(is_rationale(c.text))))
            if c.symbol is not None:
                comments.setdefault(c.symbol, []).append(c.text)
        imports_.extend((file_id, i.target, list(i.names), i.level, i.line) for i in result.imports)
        in_symbols = sorted((r for r in result.references if r.symbol is not None), key=lambda r: r.symbol)
        references_.extend(
            (file_id, r.symbol, r.name, r.kind) for r in in_symbols
        )  # (made outside any symbol: no edge)
        for local, (s, body) in enumerate(zip(symbols, _symbol_bodies(text.split("\n"), symbols))):
            doc = "\n".join([s.qualified_name, s.signature, s.docstring or "", body, *comments.get(local, ())])
            symbol_terms.extend((file_id, local, term, tf) for term, tf in sorted(code_term_counts(doc).items()))
        concepts = "\n".join(
            [*(f"{s.qualified_name} {s.docstring or ''}" for s in symbols), *(c.text for c in result.comments)]
        )
        concept_terms.extend((file_id, term, tf) for term, tf in sorted(code_term_counts(concepts).items()))
    return ParsedBatch(
        errors=pd.Series(errors, dtype=object),
        file_tokens=pd.Series(file_tokens, dtype="int64"),
        symbols=pd.DataFrame(symbols_, columns=SYMBOL_COLUMNS),
        comments=pd.DataFrame(comments_, columns=COMMENT_COLUMNS),
        imports=pd.DataFrame(imports_, columns=IMPORT_COLUMNS),
        references=pd.DataFrame(references_, columns=REFERENCE_COLUMNS),
        file_terms=_int32(pd.DataFrame(file_terms, columns=["file_id", "term", "tf"])),
        symbol_terms=_int32(pd.DataFrame(symbol_terms, columns=["file_id", "local", "term", "tf"])),
        concept_terms=_int32(pd.DataFrame(concept_terms, columns=["file_id", "term", "tf"])),
    )


def parsed_symbols(files: pd.DataFrame, count_tokens: Callable, count_line_tokens: Callable) -> pd.DataFrame:
    """The symbols of a few files (file_id, path, language, text) as this index's parse makes them (SYMBOL_COLUMNS),
    for what reads changed files before they are indexed (`cra serve --watch`'s search of symbols)."""
    return _parse_batch(files, count_tokens, count_line_tokens).symbols


def _int32(terms: pd.DataFrame) -> pd.DataFrame:
    """A term frame with its integer columns as int32, the KB's type, and its terms dictionary-encoded (a code per row,
    each distinct term once): OpenJDK's 40M term rows are held until the KB is written, as strings 565 MB more."""
    return terms.astype({c: "int32" if c != "term" else "category" for c in terms.columns})


def changed_files(indexed_files: pd.DataFrame) -> pd.DataFrame:
    """(file_id, path, language, hash) of every new or changed file: the per-file work of this run (the texts are
    read from the written contents where the batch is parsed, not passed to the workers)."""
    return kept_rows(indexed_files[["file_id", "path", "language", "hash"]], ~indexed_files["reused"])


def parse_batches(changed_files: pd.DataFrame, batch_files: int = BATCH_FILES) -> Parallelizable[pd.DataFrame]:
    """Changed files in batches of batch_files (at least one, maybe empty): the unit the executor spreads over cores."""
    for start in range(0, max(len(changed_files), 1), batch_files):
        yield changed_files.iloc[start : start + batch_files]


def parsed_batch(
    parse_batches: pd.DataFrame,
    written_contents: ContentsStore,
    count_tokens: Callable,
    count_line_tokens: Callable,
    parse_checkpoint: ParseCheckpoint | None = None,
) -> ParsedBatch:
    """Parse, token counts and term counts of one batch of files (runs in a worker process when parallel), their
    texts read from the written contents (only this batch's: the texts are not handed to the workers); with a
    parse_checkpoint, taken from there when an interrupted run already parsed this very batch."""
    key = _batch_key(parse_batches) if parse_checkpoint is not None else None
    if key is not None:
        batch = parse_checkpoint.load(key)
        if isinstance(batch, ParsedBatch):  # (anything else: absent, cut short or from another version)
            return replace(batch, resumed=len(batch.errors))
    files = parse_batches.assign(text=written_contents.texts(parse_batches["file_id"]))
    batch = _parse_batch(files, count_tokens, count_line_tokens)
    if key is not None:
        parse_checkpoint.save(key, batch)
    return batch


def _batch_key(files: pd.DataFrame) -> str:
    """What a batch's results depend on besides the code: each file's id, path, language and content hash."""
    digest = hashlib.sha1()
    for file_id, path, language, content in zip(files["file_id"], files["path"], files["language"], files["hash"]):
        digest.update(f"{int(file_id)}\0{path}\0{language}\0{content}\0".encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def parsed_rows(parsed_batch: Collect[ParsedBatch]) -> list[ParsedBatch]:
    """Every parsed batch (one empty batch when nothing was parsed). Each kind of rows is stacked by its own node below,
    which takes it out of the batches: it is let go of once stacked, and the heap is trimmed between kinds (after
    each node), instead of every batch's rows staying alive beside the stacked ones (OpenJDK: 1.1 GB twice over)."""
    batches = list(parsed_batch)
    return batches or [
        _parse_batch(pd.DataFrame(columns=["file_id", "path", "language", "text"]), len, lambda text: [])
    ]


def _taken_field(batches: list[ParsedBatch], field: str) -> list:
    """One kind of rows of every batch, taken out of the batches (this node is its one reader)."""
    values = [getattr(b, field) for b in batches]
    for b in batches:
        setattr(b, field, None)
    return values


def resumed_files(parsed_rows: list[ParsedBatch]) -> int:
    """How many files' parse results came from an interrupted run's checkpoint instead of being parsed again."""
    return sum(b.resumed for b in parsed_rows)


def parsed_errors(parsed_rows: list[ParsedBatch]) -> pd.Series:
    """Parse error (None when fine) by file_id of every file this run parsed (or resumed)."""
    return pd.concat(_taken_field(parsed_rows, "errors"))


def parsed_count(parsed_errors: pd.Series) -> int:
    """How many new or changed files this run parsed (or resumed); progress is reported per finished batch by the
    driver (cra.drivers.index.indexer), not here."""
    return len(parsed_errors)


def parsed_file_tokens(parsed_rows: list[ParsedBatch]) -> pd.Series:
    """cl100k tokens by file_id of the parsed files."""
    return pd.concat(_taken_field(parsed_rows, "file_tokens")).astype("int64")


def new_symbol_rows(parsed_rows: list[ParsedBatch]) -> pd.DataFrame:
    """Symbols of the parsed files with their token counts, keyed by (file_id, local index)."""
    return stacked(_taken_field(parsed_rows, "symbols"), SYMBOL_COLUMNS)


def parsed_comments(parsed_rows: list[ParsedBatch]) -> pd.DataFrame:
    """Comments of the parsed files (COMMENT_COLUMNS)."""
    return stacked(_taken_field(parsed_rows, "comments"), COMMENT_COLUMNS)


def parsed_imports(parsed_rows: list[ParsedBatch]) -> pd.DataFrame:
    """Import statements of the parsed files (IMPORT_COLUMNS)."""
    return stacked(_taken_field(parsed_rows, "imports"), IMPORT_COLUMNS)


def parsed_references(parsed_rows: list[ParsedBatch]) -> pd.DataFrame:
    """Identifier references of the parsed files' symbols (REFERENCE_COLUMNS)."""
    return stacked(_taken_field(parsed_rows, "references"), REFERENCE_COLUMNS)


def parsed_file_terms(parsed_rows: list[ParsedBatch]) -> pd.DataFrame:
    """(file_id, term, tf) of the parsed files, terms as codes over one dictionary."""
    return stacked_terms(_taken_field(parsed_rows, "file_terms"), ["file_id", "term", "tf"])


def parsed_symbol_terms(parsed_rows: list[ParsedBatch]) -> pd.DataFrame:
    """(file_id, local, term, tf) of the parsed files' symbols, terms as codes over one dictionary."""
    return stacked_terms(_taken_field(parsed_rows, "symbol_terms"), ["file_id", "local", "term", "tf"])


def parsed_concept_terms(parsed_rows: list[ParsedBatch]) -> pd.DataFrame:
    """(file_id, term, tf) of the parsed files' identifiers, docstrings and comments, terms as codes over one
    dictionary."""
    return stacked_terms(_taken_field(parsed_rows, "concept_terms"), ["file_id", "term", "tf"])


def reused_symbol_rows(indexed_files: pd.DataFrame, previous_kb: dict[str, pd.DataFrame] | None) -> pd.DataFrame:
    """The previous index's symbols of files whose content did not change, as slices of its runs of them (their
    Arrow text shared, not copied: OpenJDK's 745,000 rows for a one-file change)."""
    previous = previous_table(previous_kb, "symbols")
    return kept_rows(previous, ids_in(previous["file_id"], indexed_files.loc[indexed_files["reused"], "file_id"]))


def symbol_keys(
    reused_symbol_rows: pd.DataFrame, new_symbol_rows: pd.DataFrame, indexed_files: pd.DataFrame
) -> pd.DataFrame:
    """New symbol_id for every symbol, ordered by file then position, in per-file blocks of every indexed file
    (`block_symbol_ids`: ids do not shift when another file gains or loses a symbol); old_id for reused, local for
    new."""
    reused = pd.DataFrame(
        {
            "file_id": reused_symbol_rows["file_id"].astype("int64"),
            "order": reused_symbol_rows["symbol_id"].astype("int64"),
            "old_id": reused_symbol_rows["symbol_id"].astype("int64"),
            "local": -1,
        }
    )
    new = pd.DataFrame(
        {
            "file_id": new_symbol_rows["file_id"].astype("int64"),
            "order": new_symbol_rows["local"].astype("int64"),
            "old_id": -1,
            "local": new_symbol_rows["local"].astype("int64"),
        }
    )
    keys = ordered_by(pd.concat([reused, new], ignore_index=True), "file_id", "order")  # ((file_id, order) unique)
    keys["symbol_id"] = block_symbol_ids(
        keys["file_id"].to_numpy(np.int64), np.sort(indexed_files["file_id"].to_numpy(np.int64))
    )
    return keys.drop(columns="order")


def symbol_ids_of_locals(file_ids: np.ndarray, locals_: np.ndarray, keys: pd.DataFrame) -> np.ndarray:
    """The symbol_id of each (file_id, local) of this run's symbols (keys: their rows of symbol_keys), NaN where
    there is none (local -1 or past the file's symbols). A parsed file's symbols take consecutive ids in local order,
    so an id is its file's first plus its local: int32 arrays the size of the rows, not a hash of the pairs
    (OpenJDK's 20M symbol term rows: 480 -> 100 MB)."""
    key_files, key_locals = keys["file_id"].to_numpy(np.int64), keys["local"].to_numpy(np.int64)
    key_ids = keys["symbol_id"].to_numpy(np.int64)
    size = int(max(key_files.max(initial=-1), file_ids.max(initial=-1))) + 1
    first = np.zeros(size, dtype=np.int64)
    first[key_files[key_locals == 0]] = key_ids[key_locals == 0]
    count = np.bincount(key_files, minlength=size)
    if not (key_ids == first[key_files] + key_locals).all():  # (symbol_keys numbers new symbols this way)
        raise ValueError("new symbols are not numbered consecutively per file")
    ids = first.astype(np.int32)[file_ids]
    np.add(ids, locals_, out=ids, casting="unsafe")  # (locals fit: a file's symbols number far below 2^31)
    count = count.astype(np.int32)
    rows = [slice(start, start + 1_000_000) for start in range(0, len(ids), 1_000_000)]  # no row-sized temporaries
    if all(((locals_[r] >= 0) & (locals_[r] < count[file_ids[r]])).all() for r in rows):
        return ids
    known = (locals_ >= 0) & (locals_ < count[file_ids])
    return np.where(known, ids, np.nan)


def _local_to_new(symbol_keys: pd.DataFrame, file_ids: pd.Series, locals_: pd.Series) -> pd.Series:
    """new symbol_id of (file_id, local index) pairs of parsed files; NA where local is missing."""
    ids = symbol_ids_of_locals(
        file_ids.to_numpy(np.int64), locals_.fillna(-1).to_numpy(np.int64), symbol_keys[symbol_keys["local"] >= 0]
    )
    return pd.Series(ids, index=file_ids.index).astype("Int64")


def file_tokens(indexed_files: pd.DataFrame, previous_files: pd.DataFrame, parsed_file_tokens: pd.Series) -> pd.Series:
    """cl100k tokens of every indexed file by file_id: counted for new files, carried over for reused ones."""
    counted = parsed_file_tokens
    reused_ids = indexed_files.loc[indexed_files["reused"], "file_id"]
    carried = previous_files.set_index("file_id")["tokens"].reindex(reused_ids.to_numpy()).fillna(0).astype("int64")
    return pd.concat([counted, carried]).reindex(indexed_files["file_id"].to_numpy()).fillna(0).astype("int64")


def kb_symbols(
    reused_symbol_rows: pd.DataFrame, new_symbol_rows: pd.DataFrame, symbol_keys: pd.DataFrame
) -> pd.DataFrame:
    """Every definition in the KB (reused rows re-keyed, parsed rows with token counts), ordered by symbol_id."""
    reused = reused_symbol_rows.assign(
        symbol_id=new_symbol_ids(reused_symbol_rows["symbol_id"], symbol_keys),
        parent_id=new_symbol_ids(reused_symbol_rows["parent_id"], symbol_keys),
    )
    new = new_symbol_rows.assign(
        symbol_id=_local_to_new(symbol_keys, new_symbol_rows["file_id"], new_symbol_rows["local"]),
        parent_id=_local_to_new(symbol_keys, new_symbol_rows["file_id"], new_symbol_rows["parent_local"])
        if len(new_symbol_rows)
        else pd.Series(dtype="Int64"),
    )
    columns = list(reused.columns)
    if len(reused) and len(new) and set(columns) <= set(new.columns):  # (parsed rows put between the reused ones)
        symbols = spliced(reused, [0], [len(reused)], new[columns], "symbol_id", typed_as_previous=tuple(columns))
        if symbols is not None:
            return conform(symbols, "symbols")
    frames = [f for f in (reused, new) if len(f)]
    symbols = pd.concat(frames, ignore_index=True) if frames else new
    return conform(ordered_by(symbols, "symbol_id"), "symbols")


def kb_comments(
    parsed_comments: pd.DataFrame,
    indexed_files: pd.DataFrame,
    symbol_keys: pd.DataFrame,
    previous_kb: dict[str, pd.DataFrame] | None,
) -> pd.DataFrame:
    """Comments of every file, attached to their innermost symbol, with the parser's is_rationale flag."""
    new = parsed_comments.assign(
        symbol_id=_local_to_new(symbol_keys, parsed_comments["file_id"], parsed_comments["local"])
        if len(parsed_comments)
        else pd.Series(dtype="Int64")
    )
    previous = previous_table(previous_kb, "comments")
    reused_ids = indexed_files.loc[indexed_files["reused"], "file_id"]
    keep = ids_in(previous["file_id"], reused_ids)
    if in_order(previous, ["file_id", "line"]) and not ids_in(new["file_id"], reused_ids).any():
        # (each file's rows from one side, both in order: the kept rows' text stays as read, arrow-backed)
        kept_ids = symbol_ids_kept(symbol_keys)  # (then the kept rows' ids are the previous ones: not looked up)
        rekeyed = (
            previous if kept_ids else previous.assign(symbol_id=new_symbol_ids(previous["symbol_id"], symbol_keys))
        )
        new = ordered_by(new[[c for c in new.columns if c in previous.columns]], "file_id", "line")
        comments = spliced(rekeyed, *true_runs(keep), new, "file_id", typed_as_previous=("text", "symbol_id"))
        if comments is not None:
            return conform(comments, "comments")
    reused = previous[keep]
    reused = reused.assign(symbol_id=new_symbol_ids(reused["symbol_id"], symbol_keys))
    comments = pd.concat([f for f in (reused, new) if len(f)] or [new], ignore_index=True)
    return conform(ordered_by(comments, "file_id", "line"), "comments")


def kb_imports(
    parsed_imports: pd.DataFrame, indexed_files: pd.DataFrame, previous_kb: dict[str, pd.DataFrame] | None
) -> pd.DataFrame:
    """Raw import statements of every file (kept so edges re-resolve without re-parsing)."""
    new = parsed_imports
    previous = previous_table(previous_kb, "imports")
    reused = previous[previous["file_id"].isin(indexed_files.loc[indexed_files["reused"], "file_id"])]
    imports = pd.concat([f for f in (reused, new) if len(f)] or [new], ignore_index=True)
    return conform(ordered_by(imports, "file_id", "line"), "imports")


def kb_references(
    parsed_references: pd.DataFrame, symbol_keys: pd.DataFrame, previous_kb: dict[str, pd.DataFrame] | None
) -> pd.DataFrame:
    """Raw identifier references (call/base/annotation) made by every symbol, keyed by the new symbol ids, in
    symbol_id order as a fresh index has them (the reused rows, re-keyed, keep their order; this run's rows go in
    between: with ids that do not shift, the table of an edit that changes no reference equals the live one)."""
    ids = symbol_ids_of_locals(
        parsed_references["file_id"].to_numpy(np.int64),
        parsed_references["local"].fillna(-1).to_numpy(np.int64),
        symbol_keys[symbol_keys["local"] >= 0],
    ).astype(np.float64)
    known = np.flatnonzero(~np.isnan(ids))
    rows = known[np.argsort(ids[known], kind="stable")]  # in parse order already: then no copy (`take_rows`)
    new = take_rows(parsed_references, rows).assign(symbol_id=ids[rows].astype(np.int64))
    previous = previous_table(previous_kb, "references")
    runs = rekeyed_runs(previous["symbol_id"], symbol_keys)
    if runs is not None:  # the reused rows as slices of the previous table, this run's put in between (`spliced`)
        starts, ends, shifts = runs
        typed = tuple(c for c in previous.columns if c != "symbol_id")  # (names stay arrow-backed strings)
        merged = spliced(previous, starts, ends, new[list(previous.columns)], "symbol_id", shifts, typed)
        if merged is not None:
            return conform(merged, "references")
    reused = previous.assign(symbol_id=new_symbol_ids(previous["symbol_id"], symbol_keys))
    reused = reused[reused["symbol_id"].notna()]
    references = pd.concat([f for f in (reused, new) if len(f)] or [new], ignore_index=True)
    return conform(ordered_by(references, "symbol_id"), "references")


def file_parse_errors(indexed_files: pd.DataFrame, parsed_errors: pd.Series, previous_files: pd.DataFrame) -> pd.Series:
    """Parse error per file_id (None when fine): from this run's parser, or carried over for reused files."""
    ids = indexed_files["file_id"].astype("int64").to_numpy()
    carried = previous_files.set_index("file_id")["parse_error"] if len(previous_files) else pd.Series(dtype=object)
    errors = pd.Series(carried.reindex(ids).to_numpy(dtype=object), index=ids, dtype=object)
    if len(parsed_errors):
        errors.loc[parsed_errors.index] = parsed_errors
    return errors.where(errors.notna(), None)
