"""Frame helpers the index node modules share (a helper module, not a Hamilton module: no driver lists it, so
its public functions are not nodes): schema conformance, the previous run's tables, stacking, symbol re-keying,
canonical ids."""

from __future__ import annotations

import zlib

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from cra.dataflows.index.mapped import ascending, int_chunks, ints_at, sorted_search
from cra.dataflows.index.schema import TABLES

NULLABLE_INTS = {("symbols", "parent_id"), ("comments", "symbol_id"), ("files", "last_commit_time")}


def conform(frame: pd.DataFrame, table: str, arrow_nulls: bool = False) -> pd.DataFrame:
    """Exactly the schema's columns in order, ints as int32/int64 (nullable ones as Int32/Int64), index reset.
    arrow_nulls: arrow-backed string columns with nulls stay as they are too (else objects, None where null)."""
    index = pd.RangeIndex(len(frame))
    columns = {}
    for column, typ in TABLES[table].items():
        values = frame[column].reset_index(drop=True) if column in frame else pd.Series([None] * len(frame))
        name = str(typ)
        if name in ("int32", "int64"):
            nullable = (table, column) in NULLABLE_INTS
            target = name.capitalize() if nullable else name
            view = isinstance(values.dtype, pd.ArrowDtype) and str(values.dtype.pyarrow_dtype) == name and not nullable
            if nullable and isinstance(values.dtype, pd.ArrowDtype) and pa.types.is_integer(values.dtype.pyarrow_dtype):
                values = _masked_ints(values, target)
            elif values.dtype != target and not view:  # (a view's ints: shared)
                values = values.astype(target)
        elif name == "bool":
            values = values if values.dtype == bool else values.astype(bool)
        elif (
            name == "string"
            and not isinstance(values.dtype, pd.CategoricalDtype)
            and not (_arrow_strings(values.dtype) and (arrow_nulls or not values.hasnans))
        ):  # arrow-backed strings without nulls (reused rows) and dictionary-encoded terms (written as strings) stay
            values = _python_strings(values)
        columns[column] = values
    return pd.DataFrame(columns, index=index, copy=False)  # (built at once: a column set at a time cost 0.4 ms each)


def _masked_ints(values: pd.Series, target: str) -> pd.Series:
    """An Arrow-backed integer column as pandas' nullable ints (`target`: Int32 or Int64), from its values and its null
    mask (pandas' astype of a view's 3M comment symbol ids took 0.1 s)."""
    array = pa.chunked_array(values.array._pa_array)
    data = pc.fill_null(array, 0).to_numpy().astype(target.lower())
    mask = array.is_null().to_numpy()
    return pd.Series(pd.arrays.IntegerArray(data, mask), index=values.index, copy=False)


def positions_in(values: pd.Series, among: pd.Series) -> np.ndarray:
    """pd.Index(among).get_indexer(values) for distinct strings (paths), by Arrow's hash lookup: -1 where absent.
    pandas' took 1.1 s over OpenJDK's 59,581 paths once a re-index had renumbered its files (their column stacked
    from slices), Arrow's 10 ms whatever the columns are made of."""
    strings = [pa.array(side, type=pa.large_string(), from_pandas=True) for side in (values, among)]
    found = pc.index_in(strings[0], value_set=strings[1])
    return found.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)


def numpy_ints(frame: pd.DataFrame) -> pd.DataFrame:
    """frame with its Arrow-backed integer columns without nulls as numpy arrays, as a table is read whole (a view of
    a mapped table, `cra.drivers.kb.store.PreviousTables.views`, before a pass that masks or sorts its rows)."""
    ints = {
        c: t.pyarrow_dtype.to_pandas_dtype()
        for c, t in frame.dtypes.items()
        if isinstance(t, pd.ArrowDtype) and pa.types.is_integer(t.pyarrow_dtype) and not frame[c].hasnans
    }
    return frame.astype(ints) if ints else frame


def _python_strings(values: pd.Series) -> pd.Series:
    """A string column as Python objects, None where null (not NaN): Arrow-held strings converted by Arrow, which
    gives None for its nulls (half the time of astype(object) and a where)."""
    array = values.array
    if _arrow_strings(values.dtype) and hasattr(array, "_pa_array"):
        return pd.Series(array._pa_array.to_numpy(), dtype=object, copy=False)
    values = values.astype(object)
    return values.where(values.notna(), None) if values.hasnans else values


def _arrow_strings(dtype) -> bool:
    """Whether a column's strings are held by Arrow: pandas' own string type, or the Arrow type of a table read
    memory-mapped (a previous KB's comments, whose text then is not made a Python string a row)."""
    if isinstance(dtype, pd.StringDtype):
        return True
    return isinstance(dtype, pd.ArrowDtype) and (
        pa.types.is_string(dtype.pyarrow_dtype) or pa.types.is_large_string(dtype.pyarrow_dtype)
    )


def ids_in(values: pd.Series, ids) -> np.ndarray:
    """values.isin(ids) as a bool array, for a column of non-negative integer ids (file ids): looked up in a table over
    their range, not hashed (a KB's ids are nearly dense: a file takes 1-4 ids; 444,000 term rows: 0.5 ms instead of
    2-3). Other values: isin."""
    column, ids = values.to_numpy(), np.asarray(ids)
    if not len(column) or not len(ids):
        return np.zeros(len(column), dtype=bool)
    if column.dtype.kind not in "iu" or ids.dtype.kind not in "iu" or min(column.min(), ids.min()) < 0:
        return values.isin(ids).to_numpy(dtype=bool)
    top = int(max(column.max(), ids.max()))
    if top > 4 * (len(column) + len(ids)) + 1024:  # sparse ids: a table would be mostly empty
        return values.isin(ids).to_numpy(dtype=bool)
    table = np.zeros(top + 1, dtype=bool)
    table[ids] = True
    return table[column]


def doc_count(docs: pd.Series) -> int:
    """values.nunique() of a doc id column, by run boundaries when it is in order (a KB's term tables are)."""
    chunks = int_chunks(docs)
    if chunks is not None and ascending(chunks):
        starts = sum(int(np.count_nonzero(c[1:] != c[:-1])) for c in chunks)
        joins = sum(int(a[-1] != b[0]) for a, b in zip(chunks, chunks[1:]))
        return starts + joins + 1 if len(docs) else 0
    return int(docs.nunique())


def in_set(values: pd.Series, among) -> np.ndarray:
    """values.isin(among) as a bool array. Arrow-backed strings (a KB's columns as read back) are looked up by Arrow
    itself: pandas' own isin makes a Python scalar of every value of `among` first (20 ms for Django's 4,000 paths)."""
    if not (isinstance(values.dtype, pd.StringDtype) and values.dtype.storage == "pyarrow"):
        return values.isin(among).to_numpy(dtype=bool)
    array = pa.array(values, from_pandas=True)
    candidates = pa.array(
        list(among) if isinstance(among, (set, frozenset)) else among, type=array.type, from_pandas=True
    )
    candidates = candidates.combine_chunks() if isinstance(candidates, pa.ChunkedArray) else candidates
    return pc.is_in(array, value_set=candidates).fill_null(False).to_numpy(zero_copy_only=False)


def coded_strings(codes: np.ndarray, names) -> pd.Series:
    """pd.Series(names[codes]) for a few distinct strings (edge kinds), its strings made by Arrow from the codes: given
    a Python object a row, pandas infers each one's type (OpenJDK's 2.2M file edges: 0.3 s, this 0.03)."""
    names = np.asarray(names, dtype=object)
    inferred = pd.Series(names).dtype
    if not len(codes) or not isinstance(inferred, pd.StringDtype) or inferred.storage != "pyarrow":
        return pd.Series(names[codes])
    coded = pa.DictionaryArray.from_arrays(pa.array(codes, type=pa.int32()), pa.array(list(names), type=pa.string()))
    return pd.Series(pd.array(coded.cast(pa.string()), dtype=inferred))


def previous_table(previous_kb: dict[str, pd.DataFrame] | None, table: str) -> pd.DataFrame:
    """One table of the last index, or an empty frame with the schema's columns."""
    if previous_kb and table in previous_kb:
        return previous_kb[table]
    return conform(pd.DataFrame(columns=list(TABLES[table])), table)


def stacked(frames: list[pd.DataFrame], columns: list[str]) -> pd.DataFrame:
    """Frames stacked (empty ones dropped), or an empty frame with these columns."""
    frames = [f for f in frames if len(f)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)


def stacked_terms(frames: list[pd.DataFrame], columns: list[str]) -> pd.DataFrame:
    """Term frames stacked as `stacked` does, their categorical terms (as the parse makes them) re-coded over one
    dictionary: the frames' own dictionaries, concatenated and encoded by Arrow (each distinct term once, in order of
    first appearance, as Arrow's unify_dictionaries makes it; a plain concat of categoricals with other categories
    decodes every row to a string). The stack is filled a frame at a time and the list emptied as it goes, each frame let go of once copied:
    OpenJDK's 20M symbol-term rows were otherwise held twice, with two more copies of their codes."""
    if not any(len(frame) for frame in frames):
        frames.clear()
        return pd.DataFrame(columns=columns)
    own = [pa.array(f["term"].cat.categories, type=pa.large_string()) for f in frames]
    starts = np.cumsum([0, *(len(d) for d in own)])
    encoded = pc.dictionary_encode(pa.chunked_array(own, type=pa.large_string())).combine_chunks()
    del own
    categories = pd.Index(pd.array(encoded.dictionary, dtype="str"))
    mapping = encoded.indices.to_numpy(zero_copy_only=False)  # frame i's code c -> mapping[starts[i] + c]
    rest = [c for c in columns if c != "term"]
    n = sum(len(f) for f in frames)
    out = {c: np.empty(n, dtype=next(f[c].dtype for f in frames if len(f))) for c in rest}
    codes, at = np.empty(n, dtype=np.int32), 0
    for i in range(len(frames)):
        frame, frames[i] = frames[i], None
        end = at + len(frame)
        codes[at:end] = mapping[starts[i] + frame["term"].cat.codes.to_numpy()]
        for c in rest:
            out[c][at:end] = frame[c].to_numpy()
        at = end
    frames.clear()
    out["term"] = pd.Categorical.from_codes(codes, categories=categories)
    return pd.DataFrame({c: out[c] for c in columns}, copy=False)  # (a dict is copied by default)


def new_symbol_ids(old_ids: pd.Series, symbol_keys: pd.DataFrame) -> pd.Series:
    """This run's symbol_id of each previous symbol_id (NaN where its file was not reused or the value is null), as
    `old_ids.map(...)` would give, through an array lookup: re-keying a million term rows takes milliseconds."""
    found = new_symbol_id_array(old_ids, symbol_keys)
    if (found >= 0).all():
        return pd.Series(found, index=old_ids.index)
    return pd.Series(np.where(found >= 0, found, np.nan), index=old_ids.index)


def symbol_ids_kept(symbol_keys: pd.DataFrame) -> bool:
    """Whether every reused symbol keeps its id (a file keeps its block of ids while its symbols fit): re-keying the
    rows of reused files is then the identity, and a table's column of them can be taken as it is."""
    old, new = symbol_keys["old_id"].to_numpy(np.int64), symbol_keys["symbol_id"].to_numpy(np.int64)
    return bool(np.array_equal(old[old >= 0], new[old >= 0]))


def new_symbol_id_array(old_ids: pd.Series, symbol_keys: pd.DataFrame) -> np.ndarray:
    """`new_symbol_ids` as int64, -1 where there is none: for a caller that drops those rows anyway (no float copy of
    Django's 940,000 symbol term rows)."""
    reused = symbol_keys[symbol_keys["old_id"] >= 0]
    old, new = reused["old_id"].to_numpy(dtype=np.int64), reused["symbol_id"].to_numpy(dtype=np.int64)
    if isinstance(old_ids.dtype, np.dtype) and old_ids.dtype.kind in "iu":  # no nulls: no float copy, no mask
        values = old_ids.to_numpy()
        known = None
    else:
        values = old_ids.to_numpy(dtype=np.float64, na_value=np.nan)
        known = ~np.isnan(values)
    top = int(values.max(initial=-1)) if known is None else int(values[known].max()) if known.any() else -1
    lookup = np.full(max(top, int(old.max()) if len(old) else -1) + 1, -1, dtype=np.int64)
    lookup[old] = new
    if known is None:
        return lookup[values]
    found = np.full(len(values), -1, dtype=np.int64)
    found[known] = lookup[values[known].astype(np.int64)]
    return found


MIN_SYMBOL_BLOCK = 8  # ids every indexed file holds at least
FILE_CHUNK_EVERY = 16  # a path starts a chunk of files when its hash is 0 modulo this (and the first path)
FILE_WINDOW = 64  # file ids come in windows of this many; a chunk of files takes whole windows
MIN_SYMBOL_REGION = 256  # symbol ids a window holding files takes at least


def path_block_ids(paths) -> np.ndarray:
    """The file_id of each path (given in path order): paths fall into chunks, a chunk starting at every path whose
    CRC-32 is 0 modulo FILE_CHUNK_EVERY, and each chunk takes whole windows of FILE_WINDOW ids, its files the first ids
    in order. A function of the paths alone (a fresh index and an incremental one number alike) that a file added or
    deleted changes only within its chunk (16 files on average), unless it starts a chunk or the chunk outgrows its
    windows: the other files keep their ids, so the tables keep their rows."""
    paths = list(paths)
    if not paths:
        return np.zeros(0, dtype=np.int64)
    starts = np.fromiter(
        (i == 0 or zlib.crc32(p.encode("utf-8", "surrogatepass")) % FILE_CHUNK_EVERY == 0 for i, p in enumerate(paths)),
        dtype=bool,
        count=len(paths),
    )
    chunk = np.cumsum(starts) - 1
    sizes = np.bincount(chunk)
    windows = -(-sizes // FILE_WINDOW)
    bases = np.r_[0, np.cumsum(windows)[:-1]] * FILE_WINDOW
    first = np.flatnonzero(starts)
    return bases[chunk] + np.arange(len(paths)) - first[chunk]


def symbol_block_sizes(counts: np.ndarray) -> np.ndarray:
    """Ids reserved for each file's symbols given how many it has: the next power of two, at least MIN_SYMBOL_BLOCK,
    a file without symbols included. A file keeps its block while it grows within it, so a function added to one file
    (its first one too: an empty `__init__.py`, a Java file of comments) moves no other file's symbol ids (only a
    file outgrowing its block, or its window's region, moves the later ones)."""
    counts = np.asarray(counts, dtype=np.int64)
    powers = np.left_shift(1, np.ceil(np.log2(np.maximum(counts, 1))).astype(np.int64))
    return np.maximum(powers, MIN_SYMBOL_BLOCK)


def _region_sizes(blocks: np.ndarray) -> np.ndarray:
    """Symbol ids a window takes given the sum of its files' blocks: none when it holds no file, else the next power
    of two, at least MIN_SYMBOL_REGION (room for a file added to its chunk)."""
    blocks = np.asarray(blocks, dtype=np.int64)
    powers = np.left_shift(1, np.ceil(np.log2(np.maximum(blocks, 1))).astype(np.int64))
    return np.where(blocks > 0, np.maximum(powers, MIN_SYMBOL_REGION), 0)


def block_symbol_ids(files: np.ndarray, among: np.ndarray) -> np.ndarray:
    """The symbol_id of each symbol, given the file of each in (file, position) order: the files of `among` (every
    indexed file's id, ascending: the files' order) take blocks (`symbol_block_sizes`) one after another within the
    region of their window of file ids (`path_block_ids`, `_region_sizes`), the windows' regions one after another; a
    file's symbols take the first ids of its block in order. A function of the file ids and symbol counts only, so
    a fresh index and an incremental one number alike, and a file added or deleted moves the symbol ids of its
    window only."""
    files, among = np.asarray(files, dtype=np.int64), np.asarray(among, dtype=np.int64)
    if not len(files):
        return np.zeros(0, dtype=np.int64)
    counts = np.searchsorted(files, among, side="right") - np.searchsorted(files, among)
    blocks = symbol_block_sizes(counts)
    window = among // FILE_WINDOW
    regions = _region_sizes(np.bincount(window, weights=blocks).astype(np.int64))
    region_start = np.r_[0, np.cumsum(regions)[:-1]]
    in_window = np.cumsum(blocks) - blocks  # (then less the blocks of the windows before)
    window_first = np.searchsorted(window, window)  # (window is ascending with among)
    starts = region_start[window] + in_window - in_window[window_first]
    return starts[np.searchsorted(among, files)] + np.arange(len(files)) - np.searchsorted(files, files)


# the id columns of each KB table, and the columns whose order a table is kept in (as a fresh index writes it)
_FILE_ID_COLUMNS = {
    "files": ["file_id"],
    "contents": ["file_id"],
    "symbols": ["file_id"],
    "comments": ["file_id"],
    "imports": ["file_id"],
    "references": ["file_id"],
    "edges": ["src_file_id", "dst_file_id"],
    "cochange": ["file_a", "file_b"],
    "file_terms": ["file_id"],
    "concept_terms": ["file_id"],
    "import_bindings": ["file_id", "dst_file_id"],
}
_SYMBOL_ID_COLUMNS = {
    "symbols": ["symbol_id", "parent_id"],
    "comments": ["symbol_id"],
    "references": ["symbol_id"],
    "symbol_edges": ["src_symbol_id", "dst_symbol_id"],
    "symbol_terms": ["symbol_id"],
}
_ROW_ORDER = {
    "files": ["file_id"],
    "contents": ["file_id"],
    "symbols": ["symbol_id"],
    "comments": ["file_id", "line"],
    "imports": ["file_id", "line"],
    "references": ["symbol_id"],
    "edges": ["src_file_id", "dst_file_id"],
    "symbol_edges": ["src_symbol_id", "dst_symbol_id", "kind"],
    "cochange": ["file_a", "file_b"],
    "file_terms": ["file_id"],
    "symbol_terms": ["symbol_id"],
    "concept_terms": ["file_id"],
    "import_bindings": ["file_id"],
}


MAX_MOVED_SPANS = 4096  # ids renumbered by the spans of their rows in a sorted column; beyond, by a lookup per row


def _renumbered(values: pd.Series, lookup: np.ndarray, moved: np.ndarray | None = None) -> pd.Series:
    """Ids mapped through lookup (old id -> new id), nulls kept (a column without any: no mask, 0.9 s of the
    renumbering after a file is added to OpenJDK). moved: the ids lookup changes (ascending), given for the column a
    table is ordered by: their rows are found by binary search and only they are set (a file added or deleted moves
    one chunk: OpenJDK's 20M symbol-term rows are not looked up one by one)."""
    arrow = isinstance(values.dtype, pd.ArrowDtype)
    typ = values.dtype.numpy_dtype if arrow else values.dtype
    if moved is not None and len(moved) <= MAX_MOVED_SPANS and typ.kind in "iu" and not values.hasnans:
        ids = values.to_numpy(dtype=typ, copy=True)  # (its own type: no cast of every row back to it)
        if (ids[1:] >= ids[:-1]).all():
            keys = moved[moved <= np.iinfo(ids.dtype).max].astype(ids.dtype)  # (a key of another type casts every row)
            lo, hi = np.searchsorted(ids, keys), np.searchsorted(ids, keys, side="right")
            for old, a, b in zip(keys.tolist(), lo.tolist(), hi.tolist()):
                ids[a:b] = lookup[old]
            column = pd.arrays.ArrowExtensionArray(pa.array(ids)) if arrow else ids
            return pd.Series(column, index=values.index, copy=False)
    if not values.hasnans:
        return pd.Series(lookup[values.to_numpy(dtype=np.int64)], index=values.index, dtype=values.dtype)
    present = values.notna().to_numpy()
    out = np.zeros(len(values), dtype=np.int64)
    out[present] = lookup[values[present].to_numpy(dtype=np.int64)]
    if present.all():
        return pd.Series(out, index=values.index, dtype=values.dtype)
    return pd.Series(pd.array(out, dtype="Int64"), index=values.index).where(present, pd.NA).astype(values.dtype)


def canonical_ids(tables: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """The KB tables with the ids a fresh index of the same files gives: file ids in chunks in path order
    (`path_block_ids`), symbol ids in per-file blocks in (file, position) order (`block_symbol_ids`), rows in each
    table's order. An incremental run keeps the ids of known paths and numbers new files above them; this makes its
    KB equal to a fresh one (unchanged when ids already are canonical)."""
    files = tables["files"]
    ids = files["file_id"].to_numpy(dtype=np.int64)
    paths = files["path"].to_numpy(dtype=object)
    by_path = np.argsort(paths, kind="stable")
    canonical = path_block_ids(paths[by_path])
    if np.array_equal(ids[by_path], canonical):
        return tables
    file_lookup = np.full(int(ids.max()) + 1, -1, dtype=np.int64)
    file_lookup[ids[by_path]] = canonical
    symbols = tables["symbols"]
    symbol_ids = symbols["symbol_id"].to_numpy(dtype=np.int64)
    order = np.lexsort((symbol_ids, file_lookup[symbols["file_id"].to_numpy(dtype=np.int64)]))
    symbol_lookup = np.full(int(symbol_ids.max()) + 1 if len(symbol_ids) else 0, -1, dtype=np.int64)
    symbol_lookup[symbol_ids[order]] = block_symbol_ids(
        file_lookup[symbols["file_id"].to_numpy(dtype=np.int64)][order], canonical
    )
    file_ids, symbol_ids = (file_lookup, _moved(file_lookup)), (symbol_lookup, _moved(symbol_lookup))
    out = dict(tables)
    for name, frame in tables.items():
        columns = {c: file_ids for c in _FILE_ID_COLUMNS.get(name, [])} | {
            c: symbol_ids for c in _SYMBOL_ID_COLUMNS.get(name, [])
        }
        if not columns or frame is None or frame.empty:
            continue
        key = _ROW_ORDER[name][0]
        frame = frame.assign(
            **{c: _renumbered(frame[c], lookup, moved if c == key else None) for c, (lookup, moved) in columns.items()}
        )
        if name == "cochange":  # file_a < file_b, as counted
            a, b = frame["file_a"].to_numpy(), frame["file_b"].to_numpy()
            frame = frame.assign(
                file_a=np.minimum(a, b).astype(frame["file_a"].dtype),
                file_b=np.maximum(a, b).astype(frame["file_b"].dtype),
            )
        out[name] = sorted_rows(frame, _ROW_ORDER[name])
    return out


def _moved(lookup: np.ndarray) -> np.ndarray:
    """The ids a lookup (old id -> new id, -1 for none) changes, ascending."""
    return np.flatnonzero((lookup >= 0) & (lookup != np.arange(len(lookup))))


def sorted_rows(frame: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """frame.sort_values(columns, kind="stable", ignore_index=True), keys as integers (strings as their ranks) and the
    rows moved as slices (`take_rows`): after a file is added or deleted, a renumbered table is its previous order
    with one file's rows moved, a few runs; pandas' sort and Arrow's take of every text row took 5.5 s of adding a
    file to OpenJDK. Keys with nulls: sort_values itself."""
    keys = [_sort_key(frame[c]) for c in columns]
    if any(k is None for k in keys):
        return frame.sort_values(columns, kind="stable", ignore_index=True)
    ok = np.ones(max(len(frame) - 1, 0), dtype=bool)
    for key in reversed(keys):
        ok = (key[1:] > key[:-1]) | ((key[1:] == key[:-1]) & ok)
    if ok.all():
        return frame.reset_index(drop=True)
    merged = _tail_merged(frame, keys[0], ok)
    if merged is not None:
        return merged
    return take_rows(frame, np.lexsort(keys[::-1]) if len(keys) > 1 else np.argsort(keys[0], kind="stable"))


def _tail_merged(frame: pd.DataFrame, first: np.ndarray, ok: np.ndarray) -> pd.DataFrame | None:
    """The frame in order when it is two ordered runs, the second (a new file's rows, numbered above every other
    before `canonical_ids` put it in place) holding none of the first run's values of the first key: its rows put
    between the first run's by binary search (no sort of 20M keys). None for any other disorder."""
    cut = int(np.argmin(ok)) + 1  # (the first row out of order)
    if not ok[cut:].all():
        return None
    head, tail = first[:cut], first[cut:]
    at = np.searchsorted(head, tail)
    if (at < cut).any() and (head[np.minimum(at, cut - 1)] == tail).any():
        return None
    runs, last = [], 0
    bounds = np.r_[0, np.flatnonzero(np.diff(at)) + 1, len(tail)]
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        runs += [(last, int(at[lo])), (cut + int(lo), cut + int(hi))]
        last = int(at[lo])
    runs.append((last, cut))
    return stacked_pieces([frame.iloc[a:b] for a, b in runs if b > a])


def _sort_key(values: pd.Series) -> np.ndarray | None:
    """The column as numbers that order its rows as sort_values does: integers as they are, strings as the rank of
    their value among the distinct ones; None where it holds nulls or other types."""
    if values.hasnans:
        return None
    if values.dtype.kind in "iu":  # (in their own width: an Arrow column of one chunk is not copied)
        return values.to_numpy(dtype=values.dtype.numpy_dtype if isinstance(values.dtype, pd.ArrowDtype) else None)
    if _arrow_strings(values.dtype) or values.dtype == object:
        codes, uniques = pd.factorize(values, sort=True)
        return codes.astype(np.int64) if all(isinstance(u, str) for u in uniques) else None
    return None


MAX_SLICES = 256  # beyond this many runs of consecutive rows, one take is cheaper than stitching slices


def true_runs(mask) -> tuple[np.ndarray, np.ndarray]:
    """(starts, ends) of the runs of True in a bool array: the slices a kept set of rows is made of, found by one
    compare of neighbours (no int64 position of every kept row: OpenJDK's 20M symbol term rows, 160 MB each)."""
    mask = np.asarray(mask, dtype=bool)
    bounds = np.r_[0, np.flatnonzero(mask[1:] != mask[:-1]) + 1, len(mask)] if len(mask) else np.zeros(1, np.int64)
    starts, ends = bounds[:-1], bounds[1:]
    on = mask[starts] if len(starts) else np.zeros(0, dtype=bool)
    return starts[on], ends[on]


def stacked_pieces(pieces: list[pd.DataFrame]) -> pd.DataFrame:
    """pd.concat(pieces, ignore_index=True), a column at a time where all have the same columns: the frame-wise
    concat copies a previous KB's 2-D block of int columns half as fast (OpenJDK's file terms: 30 ms, this 14)."""
    columns = list(pieces[0].columns)
    if any(list(p.columns) != columns for p in pieces[1:]):
        return pd.concat(pieces, ignore_index=True)
    return pd.DataFrame({c: _stacked_column([p[c] for p in pieces]) for c in columns}, copy=False)


def _stacked_column(parts: list[pd.Series]) -> pd.Series:
    """pd.concat(parts, ignore_index=True) of one column: where every part has the same dtype, its arrays joined
    directly (np.concatenate, or the extension array's own concatenation, which is what pd.concat calls then), without
    pd.concat's index and dtype bookkeeping (0.5 ms a column: most of stacking a one-file re-index's tables)."""
    dtype = parts[0].dtype
    if any(p.dtype != dtype for p in parts[1:]):
        return pd.concat(parts, ignore_index=True)
    arrays = [p.array for p in parts]
    if isinstance(dtype, np.dtype):
        return pd.Series(np.concatenate([p.to_numpy() for p in parts]), dtype=dtype, copy=False)
    return pd.Series(type(arrays[0])._concat_same_type(arrays), copy=False)


def _sliced(frame: pd.DataFrame, starts: np.ndarray, ends: np.ndarray) -> pd.DataFrame:
    """The rows of frame in these runs (index reset): the whole frame itself, or its slices stacked."""
    if len(starts) == 1 and starts[0] == 0 and ends[0] == len(frame):
        return frame.reset_index(drop=True)
    if not len(starts):
        return frame.iloc[:0].reset_index(drop=True)
    return stacked_pieces([frame.iloc[a:b] for a, b in zip(starts, ends)])


def take_rows(frame: pd.DataFrame, rows: np.ndarray) -> pd.DataFrame:
    """frame.iloc[rows] (index reset), stitched from slices where rows run consecutively: the arrow-backed text
    columns of the previous KB (file texts, a million terms) are then shared, not copied, when a re-index keeps
    almost all of them."""
    rows = np.asarray(rows, dtype=np.int64)
    if not len(rows):
        return frame.iloc[rows].reset_index(drop=True)
    breaks = np.flatnonzero(rows[1:] - rows[:-1] != 1) + 1
    if len(breaks) >= MAX_SLICES:
        return frame.iloc[rows].reset_index(drop=True)
    starts, ends = np.r_[0, breaks], np.r_[breaks, len(rows)]
    return _sliced(frame, rows[starts], rows[ends - 1] + 1)


def in_order(frame: pd.DataFrame, columns: list[str]) -> bool:
    """Whether the rows are sorted by these numeric columns (lexicographically): then a stable sort moves none."""
    values = [frame[c].to_numpy() for c in columns]
    if any(v.dtype.kind not in "iuf" for v in values):
        return False
    ok = values[-1][1:] >= values[-1][:-1]
    for v in reversed(values[:-1]):
        ok = (v[1:] > v[:-1]) | ((v[1:] == v[:-1]) & ok)
    return bool(ok.all())


def ordered_by(frame: pd.DataFrame, column: str, *then: str) -> pd.DataFrame:
    """frame stably ordered by one numeric column, then by the `then` ones (index reset); when it is in order already,
    the frame itself (index reset), found without an argsort: on OpenJDK's 13M file terms, 0.3 GB of int64 positions
    to learn nothing moves. Rows move as slices (`take_rows`): a re-index's table of the previous rows and one
    changed file's is three of them (sort_values took 10 ms on Django's symbols, this 2)."""
    values = frame[column].to_numpy()
    if not then:
        if (values[1:] >= values[:-1]).all():
            return frame.reset_index(drop=True)
        return take_rows(frame, np.argsort(values, kind="stable"))
    if in_order(frame, [column, *then]):
        return frame.reset_index(drop=True)
    return take_rows(frame, np.lexsort([frame[c].to_numpy() for c in reversed(then)] + [values]))


def kept_rows(frame: pd.DataFrame, mask) -> pd.DataFrame:
    """frame[mask] (index reset), as slices of its runs of kept rows (`true_runs`)."""
    mask = np.asarray(mask, dtype=bool)
    starts, ends = true_runs(mask)
    if len(starts) >= MAX_SLICES:
        return frame.iloc[np.flatnonzero(mask)].reset_index(drop=True)
    return _sliced(frame, starts, ends)


def spliced(
    previous: pd.DataFrame,
    starts: np.ndarray,
    ends: np.ndarray,
    new: pd.DataFrame,
    doc: str,
    shifts: np.ndarray | None = None,
    typed_as_previous: tuple[str, ...] = (),
) -> pd.DataFrame | None:
    """The kept runs of previous (run i: rows starts[i]:ends[i], its `doc` ids plus shifts[i]) and the new rows
    in `doc` order, as a stable sort by doc of the kept rows then the new ones orders them: each new row goes in
    after the kept rows of its doc or lower, found by binary search; the kept rows move as slices (arrow-backed
    text shared, not copied), a run's ids as they were when its shift is 0. A re-index that changes one file of
    OpenJDK stitches its 20M symbol term rows from three pieces. None where that does not hold or does not pay:
    previous or new rows out of doc order, shifted runs that would overlap, MAX_SLICES pieces or more (then sort).
    typed_as_previous: columns of the new rows given the previous rows' type when both sides have rows."""
    starts, ends = np.asarray(starts, dtype=np.int64), np.asarray(ends, dtype=np.int64)
    shifts = np.zeros(len(starts), dtype=np.int64) if shifts is None else np.asarray(shifts, dtype=np.int64)
    column, added = int_chunks(previous[doc]), new[doc].to_numpy()
    if column is None or added.dtype.kind not in "iu" or len(starts) >= MAX_SLICES:
        return None
    if not ascending(column) or (added[1:] < added[:-1]).any():
        return None
    first = ints_at(column, starts).astype(np.int64) + shifts
    last = ints_at(column, ends - 1).astype(np.int64) + shifts
    if (first[1:] < last[:-1]).any():
        return None
    if not (ends - starts).sum():  # (as a sort of the new rows alone: they are in order)
        return new.reset_index(drop=True)
    if len(new):
        new = new.astype({c: previous[c].dtype for c in typed_as_previous})
    # each new row's place: the run it follows (-1: before every run) and how many of that run's rows precede it
    run = np.searchsorted(first, added, side="right") - 1
    within = np.zeros(len(added), dtype=np.int64)
    groups = np.r_[0, np.flatnonzero(np.diff(run)) + 1] if len(added) else np.zeros(0, np.int64)
    for a, b in zip(groups, np.r_[groups[1:], len(added)]):
        r = run[a]
        if r >= 0:  # (in an ascending column: the position among all rows, within the run's bounds)
            found = sorted_search(column, added[a:b] - shifts[r], side="right")
            within[a:b] = np.clip(found, starts[r], ends[r]) - starts[r]
    breaks = np.r_[0, np.flatnonzero((np.diff(run) != 0) | (np.diff(within) != 0)) + 1] if len(added) else []
    if len(breaks) + len(starts) >= MAX_SLICES:
        return None
    pieces, taken = [], 0
    ends_of_new = np.r_[breaks[1:], len(added)] if len(added) else []

    def kept(r: int, a: int, b: int) -> None:
        if b > a:
            piece = previous.iloc[a:b]
            if shifts[r]:
                moved = (piece[doc].to_numpy() + shifts[r]).astype(column[0].dtype)
                typed = previous[doc].dtype  # (a view's Arrow type kept: the pieces then stack as Arrow chunks)
                piece = piece.assign(
                    **{doc: pd.array(moved, dtype=typed) if isinstance(typed, pd.ArrowDtype) else moved}
                )
            pieces.append(piece)

    group = 0
    while group < len(breaks) and run[breaks[group]] < 0:  # new rows before every kept one
        pieces.append(new.iloc[breaks[group] : ends_of_new[group]])
        group += 1
    for r in range(len(starts)):
        taken = starts[r]
        while group < len(breaks) and run[breaks[group]] == r:
            at = starts[r] + within[breaks[group]]
            kept(r, taken, at)
            pieces.append(new.iloc[breaks[group] : ends_of_new[group]])
            taken, group = at, group + 1
        kept(r, taken, ends[r])
    return pieces[0].reset_index(drop=True) if len(pieces) == 1 else stacked_pieces(pieces)


def rekeyed_runs(ids: pd.Series, symbol_keys: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(starts, ends, shifts) of the rows of a table in symbol_id order whose symbol is reused, in runs whose ids all
    move by the same shift (`new_symbol_ids` of a row: its id plus its run's shift), for `spliced`: the ids are
    mapped once per symbol, not per row (OpenJDK: 745,000 symbols, 20M term rows), and a run whose ids do not move
    is shared as it is. None where the ids are not integers in order."""
    column = ids.to_numpy()
    if column.dtype.kind not in "iu" or (column[1:] < column[:-1]).any():
        return None
    firsts = np.r_[0, np.flatnonzero(column[1:] != column[:-1]) + 1] if len(column) else np.zeros(0, np.int64)
    distinct = column[firsts].astype(np.int64)
    mapped = new_symbol_id_array(pd.Series(distinct), symbol_keys)
    kept, shift = mapped >= 0, mapped - distinct
    cut = np.r_[True, (kept[1:] != kept[:-1]) | (shift[1:] != shift[:-1])] if len(distinct) else np.zeros(0, bool)
    heads = np.flatnonzero(cut)  # the first symbol of each run of kept (or dropped) symbols with one shift
    rows = np.r_[firsts, len(column)]
    tails = np.r_[heads[1:], len(distinct)]
    on = kept[heads]
    return rows[heads[on]], rows[tails[on]], shift[heads[on]]
