"""Tables kept as uncompressed Arrow IPC files and memory-mapped when read: every file's text and every comment, of
which a request, or a parse worker, reads only the rows it needs, the term tables, lexicons and word tables. Every
Arrow file of the KB store is written and mapped here (`cra.drivers.kb.store`, `cra.drivers.kb.word_cache`, an index
run's `TableSpill`); an index run writes its contents table here before the parse (`ContentsFile`), so that the
tree's texts are on disk, not in the driver's memory, while the files are parsed."""

from __future__ import annotations

import json
import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from cra.dataflows.index.mapped import taken
from cra.dataflows.index.schema import TABLES, arrow_schema
from cra.dataflows.index.storage import BATCH_ROWS, CarriedRows, ContentsStore

TEXT_TABLES = frozenset({"contents", "comments"})  # (other tables' rows are small: converted a million at a time)
CONTENTS_FILE = "contents.arrow"  # the contents table's file in a run's contents directory (the KB's own name for it)


def write_mapped(frame: pd.DataFrame | None, table: str, path: Path) -> None:
    """One KB table (the schema's columns; None or empty: no rows) as an Arrow IPC file, a batch of rows at a time."""
    if frame is None or frame.empty:  # typed by the schema, whatever an empty frame's columns were inferred as
        frame = pd.DataFrame({c: pd.Series(dtype=object) for c in TABLES[table]})
    frame, schema = frame[list(TABLES[table])], arrow_schema(table)
    rows = BATCH_ROWS if table in TEXT_TABLES else 1 << 20
    batches = (
        pa.Table.from_pandas(frame.iloc[start : start + rows], schema=schema, preserve_index=False)
        for start in range(0, len(frame), rows)
    )
    write_batches(batches, table, path)


def write_batches(batches, table: str, path: Path) -> None:
    """One KB table as an Arrow IPC file from Arrow tables of its rows (in the schema's columns and types)."""
    with pa.ipc.new_file(path, arrow_schema(table)) as writer:
        for batch in batches:
            writer.write_table(batch)


def write_table(table: pa.Table, path: Path) -> None:
    """An Arrow table as an uncompressed Arrow IPC file in its own schema (metadata included), for `mapped_table`."""
    with pa.ipc.new_file(path, table.schema) as writer:
        writer.write_table(table)


def mapped_table(path: Path) -> pa.Table:
    """The Arrow table of an IPC file, its buffers views of the memory-mapped file (pages read when touched)."""
    return pa.ipc.open_file(pa.memory_map(str(path), "r")).read_all()


MAX_PIECES = 64  # beyond, a pieced table is written whole again (its pieces merged): reads stay a few slices
PIECES_SUFFIX = ".pieces.json"  # a table kept as slices of segment files: [[segment file, start row, stop row], ...]


def segment_name(table: str) -> str:
    """A new segment file's name for a pieced table: never the table's own file name (that means "whole")."""
    return f"{table}.seg-{uuid.uuid4().hex[:12]}.arrow"


def table_pieces(version: Path, table: str) -> list[tuple[str, int, int]] | None:
    """The pieces of a table kept in pieces in this version, None when it is one whole file (or absent)."""
    path = Path(version) / f"{table}{PIECES_SUFFIX}"
    if not path.is_file():
        return None
    try:
        pieces = [(str(name), int(start), int(stop)) for name, start, stop in json.loads(path.read_text())]
    except (ValueError, TypeError) as exc:
        raise pa.ArrowInvalid(f"{path.name} is not a list of pieces: {exc}") from None
    if any("/" in name or not 0 <= start <= stop for name, start, stop in pieces):
        raise pa.ArrowInvalid(f"{path.name} names a piece outside its version")
    return pieces


def write_pieces(path: Path, pieces: list[tuple[str, int, int]]) -> None:
    """A table's pieces file (its segments are written or linked beside it first)."""
    Path(path).write_text(json.dumps([list(piece) for piece in pieces]))


def version_table(version: Path, table: str) -> pa.Table:
    """A mapped table of a version: its one file, or its pieces' rows concatenated in order (zero-copy slices of
    their memory-mapped segment files)."""
    pieces = table_pieces(version, table)
    if pieces is None:
        return mapped_table(Path(version) / f"{table}.arrow")
    segments: dict[str, pa.Table] = {}
    parts = []
    for name, start, stop in pieces:
        if name not in segments:
            segments[name] = mapped_table(Path(version) / name)
        if stop > segments[name].num_rows:
            raise pa.ArrowInvalid(f"{table}{PIECES_SUFFIX}: rows {start}-{stop} of {name}, which has fewer")
        parts.append(segments[name].slice(start, stop - start))
    return pa.concat_tables(parts) if parts else arrow_schema(table).empty_table()


def has_table(version: Path, table: str) -> bool:
    """Whether a version holds a mapped table, whole or in pieces."""
    return (Path(version) / f"{table}.arrow").is_file() or (Path(version) / f"{table}{PIECES_SUFFIX}").is_file()


def texts_of(table: pa.Table, file_ids) -> list[str]:
    """The texts of these file_ids in a contents table (ordered by file_id, as the index writes it)."""
    ids = table.column("file_id").to_numpy()
    rows = np.searchsorted(ids, np.asarray(file_ids, dtype=ids.dtype))
    if len(rows) and (rows.max() >= len(ids) or (ids[rows] != np.asarray(file_ids)).any()):
        raise KeyError("file ids missing from the contents table")
    return taken(table.column("text"), rows).to_pylist()


def link_table(source: Path, target: Path, table: str) -> None:
    """Hard-link (copy across file systems) a mapped table from one directory into another: its one file, or its
    pieces file and the segments it names."""
    pieces = table_pieces(source, table)
    names = (
        [f"{table}.arrow"] if pieces is None else [*dict.fromkeys(f for f, _, _ in pieces), f"{table}{PIECES_SUFFIX}"]
    )
    for name in names:
        _link_or_copy(source / name, target / name)


def _link_or_copy(source: Path, target: Path) -> None:
    """target as a hard link to source, or a copy where no link can be made (another file system)."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


def linked_segments(
    live: Path, target: Path, table: str, pieces: list[tuple[str, int, int]], new: str
) -> list[tuple[str, int, int]]:
    """Link (copy across file systems) into target the live version's segments these pieces name, all but the new
    segment written there: a whole `<table>.arrow` under a segment name (that name means "whole"). The pieces as
    they name the files in target."""
    renamed = {}
    for name in dict.fromkeys(f for f, _, _ in pieces if f != new):
        renamed[name] = segment_name(table) if name == f"{table}.arrow" else name
        _link_or_copy(live / name, target / renamed[name])
    return [(renamed.get(f, f), a, b) for f, a, b in pieces]


def merged_pieces(pieces: list[tuple[str, int, int]]) -> list[tuple[str, int, int]]:
    """The pieces without empty ones, adjacent pieces of a segment that continue each other as one."""
    out: list[tuple[str, int, int]] = []
    for file, start, stop in pieces:
        if stop == start:
            continue
        if out and out[-1][0] == file and out[-1][2] == start:
            out[-1] = (file, out[-1][1], stop)
        else:
            out.append((file, start, stop))
    return out


def sliced_pieces(pieces: list[tuple[str, int, int]], start: int, stop: int) -> list[tuple[str, int, int]]:
    """The pieces that hold rows start:stop of the table these pieces make."""
    out, offset = [], 0
    for name, first, end in pieces:
        lo, hi = max(start, offset), min(stop, offset + end - first)
        if lo < hi:
            out.append((name, first + lo - offset, first + hi - offset))
        offset += end - first
    return out


@dataclass(frozen=True)
class ContentsFile(ContentsStore):
    """An index run's contents table as the KB stores it (in a directory of the run's): written before the parse,
    read by the parse workers a batch of files at a time, then linked into the new KB version. With `previous` (the
    live version's directory), rows it carries over are not written again: the table is kept in pieces, the live
    segments hard-linked beside one new segment of the changed files' texts (OpenJDK: 525 MB rewritten for a touch)."""

    directory: str
    previous: str | None = None

    @property
    def carries_previous(self) -> bool:
        return self.previous is not None

    @property
    def path(self) -> Path:
        return Path(self.directory) / CONTENTS_FILE

    def write(self, batches) -> None:
        if not self.carries_previous:
            write_batches(batches, "contents", self.path)
            return
        live, here = Path(self.previous), Path(self.directory)
        live_pieces = table_pieces(live, "contents")
        if live_pieces is None:
            live_pieces = [(CONTENTS_FILE, 0, mapped_table(live / CONTENTS_FILE).num_rows)]
        segment, pieces, parts, rows = segment_name("contents"), [], [], 0
        for batch in batches:  # (in row order: slices of the live table, or tables of new rows)
            if isinstance(batch, CarriedRows):
                pieces.extend(sliced_pieces(live_pieces, batch.start, batch.stop))
            else:
                pieces.append((segment, rows, rows + batch.num_rows))
                rows += batch.num_rows
            parts.append(batch)
        pieces = merged_pieces(pieces)
        if len(pieces) > MAX_PIECES:  # written whole again, its pieces merged
            whole = version_table(live, "contents")
            carried = (whole.slice(p.start, p.stop - p.start) if isinstance(p, CarriedRows) else p for p in parts)
            write_batches(carried, "contents", self.path)
            return
        if rows:
            write_batches((p for p in parts if not isinstance(p, CarriedRows)), "contents", here / segment)
        write_pieces(here / f"contents{PIECES_SUFFIX}", linked_segments(live, here, "contents", pieces, segment))

    def rewrite(self, frame: pd.DataFrame, old_ids: np.ndarray | None = None) -> None:
        """Replace the stored table by this frame (the run renumbered its files; old_ids: each row's file_id in the
        stored table). Where the store holds its rows in pieces, the rows of files that kept their id stay in the
        pieces that hold them and the others (a file added or deleted moves only its chunk's ids) make one new
        segment; else, or past MAX_PIECES, the frame is written whole."""
        here = Path(self.directory)
        pieces = table_pieces(here, "contents") if old_ids is not None else None
        if pieces is not None:
            stored = version_table(here, "contents").column("file_id").to_numpy().astype(np.int64)
            new_ids = frame["file_id"].to_numpy(np.int64)
            at = np.minimum(np.searchsorted(stored, old_ids), max(len(stored) - 1, 0))
            same = (stored[at] == old_ids) & (new_ids == old_ids) if len(stored) else np.zeros(len(frame), bool)
            breaks = np.flatnonzero((same[1:] != same[:-1]) | (same[1:] & (at[1:] != at[:-1] + 1))) + 1
            segment, kept, written = segment_name("contents"), [], []
            for begin, end in zip(np.r_[0, breaks], np.r_[breaks, len(frame)]):
                if same[begin]:
                    kept.extend(sliced_pieces(pieces, int(at[begin]), int(at[begin] + end - begin)))
                else:
                    start = sum(b - a for a, b in written)
                    kept.append((segment, start, start + int(end - begin)))
                    written.append((int(begin), int(end)))
            kept = merged_pieces(kept)
            if len(kept) <= MAX_PIECES:
                if written:  # (as slices: a take of rows from the texts' many chunks joins them all, 1 s on OpenJDK)
                    rows = pd.concat([frame.iloc[a:b] for a, b in written], ignore_index=True)
                    write_mapped(rows, "contents", here / segment)
                write_pieces(here / f"contents{PIECES_SUFFIX}", kept)
                named = {name for name, _, _ in kept}
                for path in here.glob("contents.seg-*"):
                    if path.name not in named:
                        path.unlink()
                return
        for path in here.glob("contents*"):
            path.unlink()
        write_mapped(frame, "contents", self.path)

    def texts(self, file_ids) -> list[str]:
        return texts_of(version_table(Path(self.directory), "contents"), file_ids)

    def frame(self) -> pd.DataFrame:
        return version_table(Path(self.directory), "contents").to_pandas(types_mapper=pd.ArrowDtype)
