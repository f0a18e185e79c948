"""The symbol table's derived arrays (`cra.dataflows.retrieval.symbol_table.derived_arrays`) kept in a KB version:
built by the first process that loads the version, memory-mapped by every later one. A cold request on OpenJDK
(745k symbols, 980k symbol edges) spent 0.3-0.5 s deriving them. Derived data: a version files are never modified
in, so the arrays stay valid for it while the code and conventions that derive them are the same (the directory
name carries their hash); anything missing, unreadable or not of the frames' lengths is derived again.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from cra.dataflows.retrieval import symbol_table as symbol_table_module
from cra.dataflows.retrieval import word_tables as word_table_nodes
from cra.dataflows.retrieval.symbol_table import DERIVED_ARRAYS, SymbolTable, derived_arrays, table_of
from cra.drivers.kb.mapped import mapped_table, write_table

_PREFIX = "symbol_table."  # + the stamp: a directory of one `<array>.arrow` per derived array


def _stamp(words_stamp: bytes, conventions: dict) -> str:
    """Identifies what derives the arrays: the symbol-table and word-table code, and the language conventions."""
    source = b"".join(Path(m.__file__).read_bytes() for m in (symbol_table_module, word_table_nodes))
    digest = hashlib.sha1(b"cra-symbol-table-1" + source + words_stamp)
    digest.update(json.dumps(conventions, sort_keys=True, default=str).encode())
    return digest.hexdigest()[:20]


def _read(folder: Path) -> dict[str, np.ndarray] | None:
    """The arrays kept in folder (integers as read-only views of the mapped files), None when any is absent."""
    if not folder.is_dir():
        return None
    out = {}
    for name in DERIVED_ARRAYS:
        column = mapped_table(folder / f"{name}.arrow").column("values")
        array = column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
        out[name] = array.to_numpy(zero_copy_only=False)
    return out


def _fits(arrays: dict[str, np.ndarray], symbols: pd.DataFrame, edges: pd.DataFrame, name_terms: pd.DataFrame) -> bool:
    """Whether arrays read back are of these frames' lengths (a KB re-indexed under a reader is not used)."""
    per_symbol = all(len(arrays[n]) == len(symbols) for n in ("parent", "is_test_fn", "is_test_code", "name_code"))
    rows = arrays["edge_rows"]
    return per_symbol and len(arrays["name_term_id"]) == len(name_terms) and (not len(rows) or rows[-1] < len(edges))


def _write(folder: Path, arrays: dict[str, np.ndarray]) -> None:
    """The arrays as one Arrow file each in folder, made whole elsewhere in the version and renamed into place
    (another process doing the same wins or loses the rename: either copy is the same)."""
    staging = Path(tempfile.mkdtemp(dir=folder.parent, prefix=".tmp-symbol-table-"))
    try:
        for name, values in arrays.items():
            array = pa.array(values, type=pa.string()) if values.dtype == object else pa.array(values)
            write_table(pa.table({"values": array}), staging / f"{name}.arrow")
        os.rename(staging, folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def symbol_table(
    version: Path | None, words_stamp: bytes, words: dict, tables: dict[str, pd.DataFrame], conventions: dict
) -> SymbolTable:
    """The `kb_symbol_table` of a loaded KB: its derived arrays read from its version when kept there, else derived
    and kept (unless the version cannot be written: then derived on every load, as before)."""
    symbols, edges, files = tables["symbols"], tables["symbol_edges"], tables["files"]
    name_codes, name_terms, norms = words["symbol_name_codes"], words["symbol_name_terms"], words["symbol_norms"]
    folder = version / f"{_PREFIX}{_stamp(words_stamp, conventions)}" if version is not None else None
    try:
        arrays = _read(folder) if folder is not None else None
    except (OSError, KeyError, IndexError, pa.ArrowException):
        arrays = None
    if arrays is None or not _fits(arrays, symbols, edges, name_terms):
        arrays = derived_arrays(symbols, edges, name_codes, name_terms, files, conventions)
        if folder is not None and not folder.exists():
            try:
                _write(folder, arrays)
            except (OSError, pa.ArrowException):
                pass  # (a read-only KB: derived per load)
    return table_of(symbols, edges, name_terms, norms, arrays)
