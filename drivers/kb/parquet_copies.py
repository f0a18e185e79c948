"""Mapped copies of a KB version's Parquet tables for `load_kb`: the first process that loads a version writes each
Parquet request table once more as an uncompressed Arrow IPC file beside it (`<table>.parquet.arrow`), and every
later load maps that copy instead of decoding the Parquet file. On OpenJDK the files, symbols, edges and symbol
edges took 0.35-0.9 s of CPU to decode on every cold request, and 0.03 s to map; the copies take 232 MB beside
the version's 1.9 GB. A re-index reads the previous version's tables from them too (making those that are missing)
and writes the copy of each Parquet table it writes: OpenJDK's symbols took 1.2 s to decode on every one-file edit.
Derived data: a copy records the size, mtime and inode of the Parquet file it was made from and is used only while
they match; one that is missing or unreadable means the Parquet file is read (and copied again where the version
can be written).
"""

from __future__ import annotations

import os
import threading
from contextlib import suppress
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from cra.drivers.kb.mapped import mapped_table, write_table

SUFFIX = ".parquet.arrow"
_SOURCE = b"cra_parquet_source"  # schema metadata of a copy: the stat of the Parquet file it was made from


def _source(parquet: Path) -> bytes:
    stat = parquet.stat()
    return f"{stat.st_size}:{stat.st_mtime_ns}:{stat.st_ino}".encode()


def current_copy(version: Path, name: str) -> pa.Table | None:
    """The mapped copy of a version's `<name>.parquet` when there is one made from that very file, else None."""
    with suppress(OSError, pa.ArrowException):
        table = mapped_table(version / f"{name}{SUFFIX}")
        metadata = dict(table.schema.metadata or {})
        if metadata.pop(_SOURCE, None) == _source(version / f"{name}.parquet"):
            return table.replace_schema_metadata(metadata or None)
    return None


def parquet_table(version: Path, name: str, make_copy: bool = True) -> pa.Table:
    """The Arrow table of a version's `<name>.parquet`: its mapped copy when there is a current one, else decoded
    from Parquet (not pq.read_table: its dataset layer cost 46 ms) and, with make_copy, copied for the next load."""
    table = current_copy(version, name)
    if table is not None:
        return table
    parquet = version / f"{name}.parquet"
    source = _source(parquet)  # (before reading: a file replaced meanwhile leaves a copy that is never current)
    table = pq.ParquetFile(parquet).read()
    if make_copy:
        write_copy(parquet, table, source)
    return table


def write_copy(parquet: Path, table: pa.Table, source: bytes | None = None) -> None:
    """Write the mapped copy of a Parquet file that holds `table` (source: the file's stat when it was read, else
    now); where it cannot be written (a read-only KB) there is none, and the Parquet file is decoded as before."""
    copy = parquet.with_name(f"{parquet.name.removesuffix('.parquet')}{SUFFIX}")
    staging = copy.with_name(f".{copy.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        source = source or _source(parquet)
        write_table(table.replace_schema_metadata({**(table.schema.metadata or {}), _SOURCE: source}), staging)
        os.replace(staging, copy)
    except (OSError, pa.ArrowException):
        with suppress(OSError):
            staging.unlink()
