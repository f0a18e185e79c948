"""Resolve raw imports into file -> file edges and raw references into symbol -> symbol edges.

Import edges are recomputed over the whole KB on every run (a changed, added or deleted file can make
another file's import resolve differently): dict lookups per import row (index time). Symbol edges are
resolved (merges over frames) only for the references of `symbol_edge_files`; the rest are carried over.
How one language's import row resolves, and what its manifests say, is that language's module in
`cra.dataflows.index.languages`; this module builds the graph from their answers.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from cra.dataflows.distinct import distinct, isin
from cra.dataflows.index import languages
from cra.dataflows.index.conventions import manifest_names, subject_rules, test_subjects
from cra.dataflows.index.frames import coded_strings, conform, ids_in, in_set, new_symbol_ids, spliced, true_runs
from cra.dataflows.index.languages import BINDING_COLUMNS, GLOB, PACKAGE_LANGUAGES, PROJECT_LANGUAGES, go, rust
from cra.dataflows.index.mapped import values_at

SELF_NAMES = ("self", "this", "cls", "Self")
CLASS_KINDS = ("class", "interface", "enum")
_MAX_NESTING = 8


def manifest_texts(
    decoded_files: pd.DataFrame,
    previous_files: pd.DataFrame,
    previous_kb: dict[str, pd.DataFrame] | None,
    language_conventions: dict | None = None,
) -> pd.DataFrame:
    """(path, text) of every manifest the convention tables name (go.mod, package.json, tsconfig.json, Cargo.toml):
    decoded now, or, for an unchanged indexed one (not decoded again), its text in the previous KB."""
    names = sorted(manifest_names(language_conventions) | set(go.MANIFESTS))
    named = f"(^|/)({'|'.join(re.escape(name) for name in names)})$"  # (one pass of Arrow's regex over the paths)
    paths = pa.array(decoded_files["path"], type=pa.large_string(), from_pandas=True)
    manifests = decoded_files[pc.match_substring_regex(paths, named).to_numpy(zero_copy_only=False)]
    fresh = manifests.loc[manifests["text"].notna(), ["path", "text"]].astype({"text": object})
    reused = manifests.loc[manifests["reused"].astype(bool), "path"]
    if reused.empty or not previous_kb or "contents" not in previous_kb:
        return fresh.reset_index(drop=True)
    ids = previous_files.set_index("path")["file_id"].reindex(reused.to_numpy())
    contents = previous_kb["contents"]
    rows = pd.Index(contents["file_id"]).get_indexer(ids.to_numpy())  # a few rows of the (large) text column
    carried = pd.DataFrame(
        {
            "path": reused.to_numpy(dtype=object)[rows >= 0],
            "text": pd.Series(values_at(contents["text"], rows[rows >= 0]), dtype=object),
        }
    )
    return pd.concat([fresh, carried], ignore_index=True).sort_values("path", ignore_index=True)


def go_modules(manifest_texts: pd.DataFrame) -> dict[str, str]:
    """Go module path -> directory of its go.mod, so import paths map onto repository directories."""
    return go.module_directories(manifest_texts)


def package_roots(
    manifest_texts: pd.DataFrame, language_conventions: dict | None = None
) -> dict[str, dict[str, list[str]]]:
    """Bare import names -> repository paths, read from the manifests the convention tables name: JS/TS package.json
    `name` -> its entry files (source/module/main/exports) and `name/` -> its directory, tsconfig.json `paths`
    aliases; Rust Cargo.toml package names -> their src/ directory (so `use other_crate::x` resolves in a workspace)."""
    return languages.manifest_roots(manifest_texts, manifest_names(language_conventions))


def import_context(
    indexed_files: pd.DataFrame,
    go_modules: dict[str, str],
    package_roots: dict[str, dict[str, list[str]]],
    kb_symbols: pd.DataFrame | None = None,
) -> str:
    """A digest of everything an import resolves against (every file's path, language, module and package, the Go
    modules, the JS/TS and Rust package roots, the C# / PHP namespaced names by file path): while it stays the same,
    an unchanged file's imports resolve as they did, to the same files (kept in index_stats, so the next run can tell)."""
    files = indexed_files if indexed_files["path"].is_monotonic_increasing else indexed_files.sort_values("path")
    namespaces = languages.namespaced_names(indexed_files, kb_symbols)
    if any(namespaces):
        paths = dict(zip(indexed_files["file_id"].tolist(), indexed_files["path"].tolist()))
        namespaces = [
            {name: sorted(paths[f] for f in ids) for name, ids in table.items()}  # (file ids: in no one order)
            for table in namespaces
        ]
    digest = hashlib.sha1()
    for column in ("path", "language", "module", "package"):  # a column's values joined (missing: a control byte)
        values = files[column].tolist()
        digest.update("\0".join(v if isinstance(v, str) else "\1" for v in values).encode("utf-8", "surrogatepass"))
        digest.update(b"\2")
    digest.update(json.dumps([go_modules, package_roots, namespaces], sort_keys=True, default=str).encode())
    return digest.hexdigest()


def import_bindings(
    indexed_files: pd.DataFrame,
    kb_imports: pd.DataFrame,
    go_modules: dict[str, str],
    kb_symbols: pd.DataFrame | None = None,
    package_roots: dict[str, dict[str, list[str]]] | None = None,
    import_context: str | None = None,
    previous_kb: dict[str, pd.DataFrame] | None = None,
    previous_import_context: str | None = None,
) -> pd.DataFrame:
    """Every import resolved inside the repository: (file_id, dst_file_id, local, member), member None for modules
    (kb_symbols: the namespaced names C# `using` / PHP `use` resolve through; package_roots: bare JS/TS and Rust
    crate names from the manifests). When the import context is the previous run's, unchanged files keep their
    previous bindings and only new/changed files' imports are resolved."""
    carried = None
    if (
        import_context is not None
        and previous_import_context == import_context
        and previous_kb
        and "import_bindings" in previous_kb
    ):
        reused = indexed_files.loc[indexed_files["reused"].astype(bool), "file_id"]
        previous = previous_kb["import_bindings"]
        carried = ids_in(previous["file_id"], reused)  # (the rows kept: spliced below, or taken)
        kb_imports = kb_imports[~ids_in(kb_imports["file_id"], reused)]
    resolver = languages.ImportResolver(indexed_files, {**(package_roots or {}), "go_modules": go_modules}, kb_symbols)
    info = indexed_files.set_index("file_id")[["language", "path", "module", "package"]]
    resolved = _resolved_imports(resolver, kb_imports.join(info, on="file_id", how="inner"))
    if carried is None or not carried.any():
        return resolved
    resolved = resolved.iloc[np.argsort(resolved["file_id"].to_numpy(np.int64), kind="stable")]
    resolved = resolved.astype({"file_id": "int64", "dst_file_id": "int64"})  # (typed even when empty)
    if list(previous.columns) == BINDING_COLUMNS:  # the kept rows as slices (names as read), resolved ones in between
        typed = ("local", "member") if len(resolved) else ()
        merged = spliced(previous, *true_runs(carried), resolved, "file_id", typed_as_previous=typed)
        if merged is not None:
            return merged
    return _spliced_bindings(previous[carried], resolved)


def _resolved_imports(resolver: languages.ImportResolver, imports: pd.DataFrame) -> pd.DataFrame:
    """The bindings of these import rows (with their files' language, path, module and package), row by row in
    order: each distinct question (`ImportResolver.question`) resolved once and its answer given to every row that
    asks it, the rows' bindings laid out by numpy (OpenJDK: 285,000 imports, 2.2M bindings made a tuple each, 3 s)."""
    columns = ["language", "path", "module", "package", "target", "names", "level"]
    asked: dict[tuple, int] = {}
    answers: list[list] = []
    row_answer = np.empty(len(imports), dtype=np.int64)
    for i, (lang, path, module, package, target, names, level) in enumerate(
        zip(*(imports[c].to_numpy(dtype=object) for c in columns))  # plain objects: iterating arrow strings is slow
    ):
        names = () if names is None or not len(names) else tuple(map(str, names))
        target, level = target or "", int(level or 0)
        key = resolver.question(lang, path, module, package, target, names, level)
        at = asked.get(key)
        if at is None:
            at = asked[key] = len(answers)
            answers.append(resolver.resolve(lang, path, module, package, target, list(names), level))
        row_answer[i] = at
    sizes = np.array([len(a) for a in answers], dtype=np.int64)
    counts = sizes[row_answer] if len(answers) else np.zeros(len(imports), dtype=np.int64)
    if not counts.sum():
        return pd.DataFrame([], columns=BINDING_COLUMNS)
    flat = [binding for answer in answers for binding in answer]
    dst = np.fromiter((b[0] for b in flat), dtype=np.int64, count=len(flat))
    local, member = (np.array([b[k] for b in flat], dtype=object) for k in (1, 2))
    starts = np.repeat((np.cumsum(sizes) - sizes)[row_answer], counts)
    at = starts + np.arange(len(starts)) - np.repeat(np.cumsum(counts) - counts, counts)
    file_ids = np.repeat(imports["file_id"].to_numpy(np.int64), counts)
    return pd.DataFrame({"file_id": file_ids, "dst_file_id": dst[at], "local": local[at], "member": member[at]})


def _spliced_bindings(carried: pd.DataFrame, resolved: pd.DataFrame) -> pd.DataFrame:
    """The carried bindings (ordered by file_id) with the resolved ones (of other files) put in at their files'
    places, as a stable sort of the two by file_id would (OpenJDK's 2.2M carried rows: sorting them, and pandas'
    astype and where over every row, took 0.4-0.9 s of a one-file re-index); texts as objects, None where missing."""
    resolved = resolved.iloc[np.argsort(resolved["file_id"].to_numpy(np.int64), kind="stable")]
    kept_ids = carried["file_id"].to_numpy(np.int64)
    if (np.diff(kept_ids) < 0).any():  # (a full run's bindings come in its imports' order): sorted first
        carried = carried.iloc[np.argsort(kept_ids, kind="stable")]
        kept_ids = carried["file_id"].to_numpy(np.int64)
    added_ids = resolved["file_id"].to_numpy(np.int64)
    at = np.searchsorted(kept_ids, added_ids, side="right")
    out = {
        "file_id": np.insert(kept_ids, at, added_ids),
        "dst_file_id": np.insert(
            carried["dst_file_id"].to_numpy(np.int64), at, resolved["dst_file_id"].to_numpy(np.int64)
        ),
    }
    for column in ("local", "member"):
        kept = carried[column].to_numpy(dtype=object, na_value=None)
        out[column] = pd.Series(
            np.insert(kept, at, resolved[column].to_numpy(dtype=object, na_value=None)), dtype=object
        )
    return pd.DataFrame(out, columns=BINDING_COLUMNS)


def reexport_bindings(
    import_bindings: pd.DataFrame, kb_symbols: pd.DataFrame, indexed_files: pd.DataFrame
) -> pd.DataFrame:
    """Bindings a Rust file gets through another module (same columns as import_bindings, not stored): its glob
    imports and the re-exports they reach (see `languages.rust.reexported_bindings`); resolved after the file's own
    imports (see `_resolved_symbol_edges`)."""
    return rust.reexported_bindings(import_bindings, kb_symbols, indexed_files)


def kb_import_bindings(import_bindings: pd.DataFrame) -> pd.DataFrame:
    """The resolved imports, kept so a re-index resolves only the imports of the files that changed (names held by
    Arrow stay so, nulls included: OpenJDK's 2.2M carried rows are not made a Python string each to be written)."""
    return conform(import_bindings, "import_bindings", arrow_nulls=True)


def test_edges(indexed_files: pd.DataFrame, language_conventions: dict | None = None) -> pd.DataFrame:
    """Test file -> the source file it exercises by its language's convention table (foo_test.go -> foo.go,
    src/test/java/.../FooTest.java -> src/main/java/.../Foo.java, __tests__/foo.test.ts -> foo.ts, ...)."""
    by_path = dict(zip(indexed_files["path"].tolist(), indexed_files["file_id"].tolist()))
    tests = indexed_files[indexed_files["is_test"].astype(bool)]
    rows, rules = [], {}
    for fid, path, language in zip(tests["file_id"].tolist(), tests["path"].tolist(), tests["language"].tolist()):
        if language not in rules:
            rules[language] = subject_rules(language, language_conventions)
        dst = next((by_path[c] for c in test_subjects(path, rules[language]) if c in by_path), None)
        if dst is not None and dst != fid:
            rows.append((int(fid), int(dst)))
    return pd.DataFrame(rows, columns=["src_file_id", "dst_file_id"], dtype="int64")


def kb_edges(import_bindings: pd.DataFrame, test_edges: pd.DataFrame) -> pd.DataFrame:
    """File -> file edges inside the repository: imports (kind "import") and test -> tested source (kind "tests"),
    deduplicated, no self-edges, ordered by (src, dst). Integer work over one (src, dst) key per edge: pandas'
    drop_duplicates, merge and sort over OpenJDK's 2.2M bindings took 0.8 s of a one-file re-index."""
    src, dst = (import_bindings[c].to_numpy(np.int64) for c in ("file_id", "dst_file_id"))
    imports = np.sort(_edge_keys(src[src != dst], dst[src != dst]), kind="stable")  # (np.unique, np.isin hash: 3.5 s)
    imports = imports[np.r_[True, imports[1:] != imports[:-1]]] if len(imports) else imports
    tested = _edge_keys(*(test_edges[c].to_numpy(np.int64) for c in ("src_file_id", "dst_file_id")))
    at = np.minimum(np.searchsorted(imports, tested), max(len(imports) - 1, 0))
    tested = tested[imports[at] != tested] if len(imports) else tested  # an import edge already says it
    keys = np.concatenate([imports, tested])
    order = np.argsort(keys, kind="stable")  # (the bindings come in file order: a merge of sorted runs, not a sort)
    keys, kinds = keys[order], np.repeat(np.array([0, 1]), [len(imports), len(tested)])[order]
    edges = pd.DataFrame(
        {"src_file_id": keys >> 32, "dst_file_id": keys & 0xFFFFFFFF, "kind": coded_strings(kinds, ["import", "tests"])}
    )
    return conform(edges, "edges")


def _keys_in(keys: np.ndarray, among: np.ndarray) -> np.ndarray:
    """np.isin(keys, among) for int64 keys, by binary search when `among` is in order (a KB's edges are: np.isin
    hashes both sides, 4.7 s for OpenJDK's 2.2M file edges, this 0.1), else after sorting it (`distinct.isin`)."""
    if not len(keys) or not len(among) or (among[1:] < among[:-1]).any():
        return isin(keys, among)
    at = np.minimum(np.searchsorted(among, keys), len(among) - 1)
    return among[at] == keys


def _edge_keys(src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """One int64 per (src, dst) file pair, ordered as the pairs are (file ids are int32 and not negative)."""
    return (src.astype(np.int64) << 32) | dst.astype(np.int64)


def _enclosing_class(symbols: pd.DataFrame) -> pd.Series:
    """symbol_id -> nearest enclosing class-like symbol (itself excluded), following parent links; absent when none."""
    ids = symbols["symbol_id"].to_numpy(dtype="int64")
    parent = symbols["parent_id"].astype("Int64").fillna(-1).to_numpy(dtype="int64")
    parent_pos = np.where(parent >= 0, pd.Index(ids).get_indexer(parent), -1)
    classy = symbols["kind"].isin(CLASS_KINDS).to_numpy()
    found = np.full(len(ids), -1)
    current = parent_pos.copy()
    for _ in range(_MAX_NESTING):
        valid = current >= 0
        safe = np.where(valid, current, 0)
        hit = (found < 0) & valid & classy[safe]
        found[hit] = current[hit]
        current = np.where(valid, parent_pos[safe], -1)
    has = found >= 0
    return pd.Series(ids[found[has]], index=ids[has], name="owner")


def _sibling_refs(refs: pd.DataFrame, own: pd.DataFrame) -> pd.DataFrame:
    """`this.x` in a function of no class, assigned as a member of an object (JS `res.redirect = function () {
    this.location() }`): refs with column sibling, the qualified name of that object's member x (`res.location`)."""
    qualified = own.set_index("symbol_id")["qualified_name"].reindex(refs["symbol_id"].to_numpy()).fillna("").tolist()
    holder = [name.rpartition(".")[0] for name in qualified]
    refs = refs.assign(sibling=[f"{h}.{last}" for h, last in zip(holder, refs["last"].tolist())], holder=holder)
    return refs[refs["holder"] != ""].astype({"sibling": object})


def _lookup(
    refs: pd.DataFrame, targets: pd.DataFrame, left_on: list[str], right_on: list[str], priority: float
) -> pd.DataFrame:
    """Candidate (ref row, dst symbol) pairs of one resolution rule, tagged with its priority."""
    if refs.empty or targets.empty:  # an empty side may carry float64 keys that cannot merge with strings
        return pd.DataFrame({"ref": [], "dst": [], "top": [], "priority": []})
    keys = {f"_k{i}": targets[c].to_numpy() for i, c in enumerate(right_on)}
    right = pd.DataFrame(
        {**keys, "dst": targets["symbol_id"].to_numpy(), "top": targets["parent_id"].isna().to_numpy()}
    )
    hits = refs[["ref", *left_on]].merge(right, left_on=left_on, right_on=list(keys), how="inner")
    return pd.DataFrame({"ref": hits["ref"], "dst": hits["dst"], "top": hits["top"], "priority": priority})


def matched_symbols(
    indexed_files: pd.DataFrame, kb_symbols: pd.DataFrame, previous_kb: dict[str, pd.DataFrame] | None
) -> pd.DataFrame:
    """The symbols of the files parsed again that were indexed before, matched with their previous rows: same file,
    qualified name, kind, nesting (top level or not) and occurrence among those. Columns file_id, name, old_id (null:
    new), symbol_id (null: gone). Another file's references resolve as before against a file whose names all matched:
    its edges into that file are carried over (old_id -> symbol_id) instead of resolved again."""
    columns = ["file_id", "name", "old_id", "symbol_id"]
    if not previous_kb or "symbols" not in previous_kb or "files" not in previous_kb:
        return pd.DataFrame(columns=columns)
    parsed = indexed_files.loc[~indexed_files["reused"].to_numpy(dtype=bool), ["file_id", "path"]]
    before_paths = previous_kb["files"].set_index("file_id")["path"]
    known = [f for f, p in zip(parsed["file_id"].tolist(), parsed["path"].tolist()) if before_paths.get(f) == p]

    def keyed(symbols: pd.DataFrame) -> dict[tuple, tuple[str, int]]:  # (a handful of files: plain Python is quicker)
        rows = symbols[symbols["file_id"].isin(known)]
        keys = zip(
            rows["file_id"].tolist(),
            rows["qualified_name"].tolist(),
            rows["kind"].tolist(),
            rows["parent_id"].isna().tolist(),
        )
        seen: dict[tuple, int] = defaultdict(int)
        out = {}
        for key, name, symbol_id in zip(keys, rows["name"].tolist(), rows["symbol_id"].tolist()):
            out[(*key, seen[key])] = (name, symbol_id)
            seen[key] += 1
        return out

    before, now = keyed(previous_kb["symbols"]), keyed(kb_symbols)
    rows = [(key[0], name, old_id, now.get(key, (None, None))[1]) for key, (name, old_id) in before.items()]
    rows += [(key[0], name, None, symbol_id) for key, (name, symbol_id) in now.items() if key not in before]
    return pd.DataFrame(rows, columns=columns).astype({"file_id": "int64", "old_id": "Int64", "symbol_id": "Int64"})


def symbol_edge_files(
    indexed_files: pd.DataFrame,
    import_bindings: pd.DataFrame,
    reexport_bindings: pd.DataFrame,
    kb_edges: pd.DataFrame,
    kb_imports: pd.DataFrame,
    kb_references: pd.DataFrame,
    matched_symbols: pd.DataFrame,
    previous_kb: dict[str, pd.DataFrame] | None,
) -> pd.Index:
    """file_ids whose references are resolved again this run: every file on a full index; incrementally the
    new/changed files, files with an import bound into one of them (directly or through a re-export) or of its Go /
    Java package that name something it no longer or newly defines (all of them when it is new or its imports or
    import edges changed), and unchanged files whose import edges changed (a file they import was added, deleted or renamed).
    The other files' symbol edges are carried over."""
    files = pd.Index(indexed_files["file_id"].astype("int64"))
    if not previous_kb or any(t not in previous_kb for t in ("symbols", "edges", "symbol_edges", "imports")):
        return files
    changed = files[~indexed_files["reused"].to_numpy(dtype=bool)]
    if kb_edges is previous_kb["edges"]:  # (carried over as they were: no edge moved)
        moved = pd.Series([], dtype="int64")
    else:  # the sources of the edges only one side has (an outer merge of the pairs, as integer keys)
        now, before = (
            _edge_keys(*(e[c].to_numpy(np.int64) for c in EDGE_PAIR)) for e in (kb_edges, previous_kb["edges"])
        )
        moved = pd.Series(
            np.concatenate([now[~_keys_in(now, before)], before[~_keys_in(before, now)]]) >> 32, dtype="int64"
        )
    # changed files other files may now resolve differently against: new ones, and those whose imports changed
    reshaped = changed.difference(_same_imports(changed, kb_imports, previous_kb["imports"])).union(
        changed.intersection(moved)
    )
    reshaped = reshaped.union(
        changed.difference(matched_symbols["file_id"].astype("int64"))
    )  # (new files match nothing)
    # a changed file whose symbols all matched and whose references are as before resolves as before: carried over
    changed = changed.difference(
        _same_references(changed.difference(reshaped), matched_symbols, kb_references, previous_kb.get("references"))
    )
    bound = pd.concat([import_bindings[["file_id", "dst_file_id"]], reexport_bindings[["file_id", "dst_file_id"]]])
    bound = bound[bound["dst_file_id"].isin(changed)].astype("int64")
    # a file added, changed or deleted in a Go / Java package (C#: the project) changes what its peers' names resolve to
    previous = previous_kb["files"]
    gone = previous[~in_set(previous["path"], indexed_files["path"])]
    keys = _package_keys(indexed_files)
    reshaped_packages = set(keys[indexed_files["file_id"].isin(reshaped).to_numpy()].dropna()) | set(
        _package_keys(gone).dropna()
    )
    changed_packages = set(keys[indexed_files["file_id"].isin(changed).to_numpy()].dropna()) - reshaped_packages
    dirty = [
        pd.Series(changed, dtype="int64"),
        bound.loc[bound["dst_file_id"].isin(reshaped), "file_id"],
        moved,
        pd.Series(files[keys.isin(reshaped_packages).to_numpy()], dtype="int64"),
    ]
    renamed = set(matched_symbols.loc[matched_symbols[["old_id", "symbol_id"]].isna().any(axis=1), "name"].dropna())
    maybe = pd.Index(bound["file_id"]).union(files[keys.isin(changed_packages).to_numpy()]).difference(changed)
    if renamed and len(maybe):
        dirty.append(
            files_naming(kb_references.loc[kb_references["file_id"].isin(maybe), ["file_id", "name"]], renamed)
        )
    return files.intersection(pd.Index(pd.concat(dirty).unique()))


NAMES_FILTERED = 64  # up to this many names, the references are first filtered by text (one Arrow pass per name)


def files_naming(refs: pd.DataFrame, names: set[str]) -> pd.Series:
    """The file_id of each reference (file_id, name) whose name, split at "." and "::", has one of `names` as a part.
    A part is in its name's text, so only the rows whose text holds one of the names are split: a function added to
    OpenJDK's java.util named in 0.3M references of its package's files, split in Python, took 0.5-1 s."""
    if len(names) <= NAMES_FILTERED and len(refs):
        text = pa.array(refs["name"], type=pa.string(), from_pandas=True)
        holds = np.zeros(len(refs), dtype=bool)
        for name in names:
            holds |= pc.fill_null(pc.match_substring(text, str(name)), False).to_numpy(zero_copy_only=False)
        refs = refs[holds]
    parts = refs["name"].astype(object).str.replace("::", ".", regex=False).str.split(".").explode()
    return refs.loc[parts.index[parts.isin(names).to_numpy()].unique(), "file_id"].astype("int64")


def _same_references(
    file_ids: pd.Index, matched: pd.DataFrame, now: pd.DataFrame, before: pd.DataFrame | None
) -> pd.Index:
    """The file_ids whose symbols all matched their previous selves (`matched_symbols`) and whose references
    (referring symbol, name, kind: not lines) are the previous KB's, the referring symbols taken through the match."""
    mine = matched[matched["file_id"].isin(file_ids)]
    whole = mine[["old_id", "symbol_id"]].notna().all(axis=1).groupby(mine["file_id"].to_numpy()).all()
    file_ids = pd.Index(whole.index[whole.to_numpy()], dtype="int64")
    if before is None or not len(file_ids):
        return pd.Index([], dtype="int64")
    mine = mine[mine["file_id"].isin(file_ids)]
    renumbered = dict(zip(mine["old_id"].astype("int64").tolist(), mine["symbol_id"].astype("int64").tolist()))

    def references(rows: pd.DataFrame, ids) -> dict[int, list]:
        rows = rows[rows["file_id"].isin(file_ids)]
        out = defaultdict(list)
        for file_id, symbol_id, name, kind in zip(
            rows["file_id"].tolist(), map(ids, rows["symbol_id"].tolist()), rows["name"].tolist(), rows["kind"].tolist()
        ):
            out[file_id].append((symbol_id, name, kind))
        return {file_id: sorted(found) for file_id, found in out.items()}

    a, b = references(now, int), references(before, lambda old: renumbered.get(old, -1))
    return pd.Index([f for f in file_ids if a.get(f, []) == b.get(f, [])], dtype="int64")


def _same_imports(file_ids: pd.Index, now: pd.DataFrame, before: pd.DataFrame) -> pd.Index:
    """The file_ids whose import statements (target, names, level: not lines) are the previous KB's."""

    def statements(imports: pd.DataFrame) -> dict[int, tuple[str, ...]]:
        """Per file, its statements as "target|level|names" strings in row order (the few files' rows only)."""
        rows = imports.iloc[np.flatnonzero(ids_in(imports["file_id"], file_ids.to_numpy(np.int64)))]
        out: dict[int, list[str]] = {}
        for file_id, target, level, names in zip(
            rows["file_id"].tolist(), rows["target"].tolist(), rows["level"].tolist(), rows["names"].tolist()
        ):
            text = "" if pd.isna(target) else target
            level = "<NA>" if pd.isna(level) else str(int(level))
            names = ",".join(map(str, names)) if names is not None else ""
            out.setdefault(int(file_id), []).append(f"{text}|{level}|{names}")
        return {file_id: tuple(found) for file_id, found in out.items()}

    a, b = statements(now), statements(before)
    same = [f for f in file_ids if a.get(f, ()) == b.get(f, ())]
    return pd.Index(same, dtype="int64")


EDGE_PAIR = ("src_file_id", "dst_file_id")


def _package_keys(files: pd.DataFrame) -> pd.Series:
    """Per file: "language:directory" for the files of PACKAGE_LANGUAGES (one namespace per directory), "language:"
    for those of PROJECT_LANGUAGES (one for the repository), else None."""
    language = files["language"].astype(object)
    scoped = language.isin(PACKAGE_LANGUAGES | PROJECT_LANGUAGES).to_numpy(dtype=bool)
    keys = np.full(len(files), None, dtype=object)
    if scoped.any():  # (the strings built for those files only: a tree of none builds none, 2-3 ms on Django)
        language, package = language[scoped], files["package"].astype(object)[scoped]
        keys[scoped] = (language + ":" + package.where(~language.isin(PROJECT_LANGUAGES), "")).to_numpy(dtype=object)
    return pd.Series(keys, dtype=object)


def kb_symbol_edges(
    kb_symbols: pd.DataFrame,
    kb_references: pd.DataFrame,
    import_bindings: pd.DataFrame,
    reexport_bindings: pd.DataFrame,
    symbol_edge_files: pd.Index,
    symbol_keys: pd.DataFrame,
    matched_symbols: pd.DataFrame,
    previous_kb: dict[str, pd.DataFrame] | None,
    indexed_files: pd.DataFrame,
) -> pd.DataFrame:
    """Symbol -> symbol edges (call/base/annotation), best candidate per reference, unresolved ones dropped:
    references of symbol_edge_files resolved now, the other files' edges carried over (ids re-keyed).

    Rules in order: same-file module-level name; self/this/cls.x -> member x of the enclosing class (outside a
    class, in a function assigned as `obj.f`, the same file's `obj.x`); a name
    imported into the file (`from m import f`, `from m import f as g`); `alias.f` for an imported module
    (`import m as alias`); `Class.x` for a class defined in or imported into the file; finally a same-file
    nested definition of that name; in Go and Java, after imported names, a top-level name (a class, for `Class.x`)
    of another file of the same package (in C#, of any C# file); in Rust, after its own imports, names bound through
    a glob or re-export.
    """
    packages = pd.Series(_package_keys(indexed_files).to_numpy(), index=indexed_files["file_id"].to_numpy())
    resolved = pd.concat(
        [  # each reference resolves on its own: files a run of references at a time bound the merges
            _resolved_symbol_edges(
                kb_symbols,
                kb_references[kb_references["file_id"].isin(files)],
                import_bindings[import_bindings["file_id"].isin(files)],
                packages,
                reexport_bindings[reexport_bindings["file_id"].isin(files)],
            )
            for files in _reference_runs(kb_references, symbol_edge_files)
        ]
        or [pd.DataFrame(columns=["src_symbol_id", "dst_symbol_id", "kind"])],
        ignore_index=True,
    )
    carried = _carried_symbol_edges(previous_kb, symbol_edge_files, symbol_keys, matched_symbols)
    if len(carried) and len(resolved):  # (the few resolved kinds take the carried ones' type: no object column)
        resolved = resolved.astype({"kind": carried["kind"].dtype})
    edges = pd.concat([f for f in (carried, resolved) if len(f)] or [resolved], ignore_index=True)
    return conform(_sorted_unique_edges(edges), "symbol_edges")


def _sorted_unique_edges(edges: pd.DataFrame) -> pd.DataFrame:
    """Edges without repeats, ordered by (src, dst, kind): sorted as one uint64 key (src, dst, kind code) per edge
    where the ids and kinds fit (a lexsort of the three and pandas' factorize of the kinds took OpenJDK's 1M symbol
    edges 0.9 s), else by a lexsort of integer codes."""
    if edges.empty:
        return edges
    kinds = pa.array(edges["kind"], from_pandas=True)  # (an Arrow-backed column as it is: chunked)
    distinct = pc.unique(kinds).sort()
    kind_codes = pc.index_in(kinds, value_set=distinct).to_numpy().astype(np.int64)
    src, dst = edges["src_symbol_id"].to_numpy(np.int64), edges["dst_symbol_id"].to_numpy(np.int64)
    names = np.asarray(distinct.to_pylist(), dtype=object)
    if len(distinct) <= 4 and len(src) and min(src.min(), dst.min()) >= 0 and max(src.max(), dst.max()) < 1 << 31:
        keys = (src.astype(np.uint64) << 33) | (dst.astype(np.uint64) << 2) | kind_codes.astype(np.uint64)
        keys = np.sort(keys, kind="stable")  # (the carried edges are one sorted run: merged, not sorted again)
        keys = keys[np.r_[True, keys[1:] != keys[:-1]]]
        src, dst, kind_codes = (keys >> 33).astype(np.int64), ((keys >> 2) & 0x7FFFFFFF).astype(np.int64), keys & 3
        return pd.DataFrame({"src_symbol_id": src, "dst_symbol_id": dst, "kind": coded_strings(kind_codes, names)})
    order = np.lexsort((kind_codes, dst, src))
    src, dst, kind_codes = src[order], dst[order], kind_codes[order]
    first = np.r_[True, (src[1:] != src[:-1]) | (dst[1:] != dst[:-1]) | (kind_codes[1:] != kind_codes[:-1])]
    return pd.DataFrame(
        {"src_symbol_id": src[first], "dst_symbol_id": dst[first], "kind": coded_strings(kind_codes[first], names)}
    )


REFERENCE_RUN = 500_000  # references resolved at once (OpenJDK's 3M at once raised the index's peak by 0.4 GB)


def _reference_runs(kb_references: pd.DataFrame, files: pd.Index) -> list[pd.Index]:
    """The files in runs of whole files holding about REFERENCE_RUN references each."""
    counts = kb_references.loc[kb_references["file_id"].isin(files), "file_id"].value_counts().sort_index()
    if counts.empty:
        return []
    run = (counts.cumsum().to_numpy() - 1) // REFERENCE_RUN
    return [counts.index[run == r] for r in distinct(run)]


def _carried_symbol_edges(
    previous_kb: dict[str, pd.DataFrame] | None,
    symbol_edge_files: pd.Index,
    symbol_keys: pd.DataFrame,
    matched_symbols: pd.DataFrame,
) -> pd.DataFrame:
    """The previous run's symbol edges from files not resolved again, with this run's symbol ids (a symbol of a file
    parsed again keeps its edges in when it matched its previous self, see `matched_symbols`)."""
    columns = ["src_symbol_id", "dst_symbol_id", "kind"]
    if not previous_kb or "symbol_edges" not in previous_kb or "symbols" not in previous_kb:
        return pd.DataFrame(columns=columns)
    previous = previous_kb["symbol_edges"]
    symbols = previous_kb["symbols"]
    owner = np.full(
        int(symbols["symbol_id"].to_numpy(np.int64).max(initial=-1)) + 1, -1, dtype=np.int64
    )  # previous id -> file_id
    owner[symbols["symbol_id"].to_numpy(np.int64)] = symbols["file_id"].to_numpy(np.int64)
    keep = ~np.isin(owner[previous["src_symbol_id"].to_numpy(np.int64)], symbol_edge_files.to_numpy(np.int64))
    matched = matched_symbols.dropna(subset=["old_id", "symbol_id"])
    ids = pd.concat(
        [symbol_keys[["old_id", "symbol_id"]], matched[["old_id", "symbol_id"]].astype("int64")], ignore_index=True
    )
    carried = pd.DataFrame(
        {
            "src_symbol_id": new_symbol_ids(previous.loc[keep, "src_symbol_id"], ids),
            "dst_symbol_id": new_symbol_ids(previous.loc[keep, "dst_symbol_id"], ids),
            "kind": previous.loc[keep, "kind"],  # (as read: arrow-backed, coded by Arrow in `_sorted_unique_edges`)
        }
    )
    return carried.dropna(subset=["src_symbol_id", "dst_symbol_id"]).astype(
        {"src_symbol_id": "int64", "dst_symbol_id": "int64"}
    )


def _resolved_symbol_edges(
    kb_symbols: pd.DataFrame,
    references: pd.DataFrame,
    import_bindings: pd.DataFrame,
    packages: pd.Series | None = None,
    reexported: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Edges of these references (import_bindings of their files), resolved against the symbols they can reach:
    their own files' symbols, top-level symbols of the files bound by imports and (packages: file_id -> package key,
    None outside Go / Java / C#) of the other files of their package, members of referenced classes."""
    refs = references[["file_id", "symbol_id", "name", "kind"]].reset_index(drop=True).astype({"name": object})
    refs["name"] = refs["name"].str.replace("::", ".", regex=False)  # Rust / C++ / PHP paths: `Type::new` is `Type.new`
    if refs.empty:
        return pd.DataFrame(columns=["src_symbol_id", "dst_symbol_id", "kind"])
    columns = ["symbol_id", "file_id", "name", "parent_id", "kind", "qualified_name"]
    split = refs["name"].str.rpartition(".")
    packages = packages if packages is not None else pd.Series(dtype=object)
    refs = refs.assign(
        ref=range(len(refs)),
        prefix=split[0],
        last=split[2],
        package=packages.reindex(refs["file_id"].to_numpy()).to_numpy(),
    )
    plain = refs[refs["prefix"] == ""]
    dotted = refs[refs["prefix"] != ""]
    in_package = packages.index[packages.isin(refs["package"].dropna().unique()).to_numpy()]
    reexported = reexported if reexported is not None else pd.DataFrame(columns=BINDING_COLUMNS)
    reachable = (
        kb_symbols["file_id"].isin(refs["file_id"])
        | kb_symbols["file_id"].isin(import_bindings["dst_file_id"])
        | kb_symbols["file_id"].isin(in_package)
        | kb_symbols["file_id"].isin(reexported["dst_file_id"])
    )
    symbols = kb_symbols.loc[reachable, columns].astype({"name": object, "kind": object, "qualified_name": object})
    own = symbols[symbols["file_id"].isin(refs["file_id"])]
    top = symbols[symbols["parent_id"].isna()]
    modules = import_bindings[
        import_bindings["member"].isna() & import_bindings["local"].notna() & (import_bindings["local"] != GLOB)
    ]

    def bound(bindings: pd.DataFrame) -> pd.DataFrame:  # (file_id, local) -> the top-level symbol it names
        members = bindings[bindings["member"].notna()].astype({"member": object})
        found = members.merge(top, left_on=["dst_file_id", "member"], right_on=["file_id", "name"], suffixes=("_b", ""))
        return found[["file_id_b", "local", "symbol_id", "parent_id"]].rename(columns={"file_id_b": "file_id"})

    imported, through = bound(import_bindings), bound(reexported)
    module_members = modules.merge(top, left_on="dst_file_id", right_on="file_id", suffixes=("_b", ""))
    owner = _enclosing_class(own)
    self_refs = dotted[dotted["prefix"].isin(SELF_NAMES)].join(owner, on="symbol_id", how="inner")
    siblings = _sibling_refs(dotted[dotted["prefix"].isin(SELF_NAMES) & ~dotted["symbol_id"].isin(owner.index)], own)
    classes = (
        pd.concat(
            [
                top[top["kind"].isin(CLASS_KINDS) & top["file_id"].isin(refs["file_id"])][
                    ["file_id", "name", "symbol_id"]
                ],
                imported.rename(columns={"local": "name"})[["file_id", "name", "symbol_id"]],
                through.rename(columns={"local": "name"})[["file_id", "name", "symbol_id"]],
            ]
        )
        .rename(columns={"name": "class_name", "symbol_id": "class_id"})
        .astype({"class_name": object})
    )
    peers = top.assign(package=packages.reindex(top["file_id"].to_numpy()).to_numpy()).dropna(subset=["package"])
    peer_classes = peers.loc[peers["kind"].isin(CLASS_KINDS), ["package", "name", "symbol_id"]]
    class_refs = pd.concat(
        [
            dotted.merge(classes, left_on=["file_id", "prefix"], right_on=["file_id", "class_name"]),
            dotted.dropna(subset=["package"]).merge(
                peer_classes.rename(columns={"name": "class_name", "symbol_id": "class_id"}),
                left_on=["package", "prefix"],
                right_on=["package", "class_name"],
            ),
        ],
        ignore_index=True,
    )
    class_members = kb_symbols.loc[kb_symbols["parent_id"].isin(class_refs["class_id"]), columns].astype(
        {"name": object}
    )
    same_file = _lookup(plain, own, ["file_id", "name"], ["file_id", "name"], 0)
    same_file.loc[~same_file["top"].astype(bool), "priority"] = 5
    candidates = pd.concat(
        [
            same_file,
            _lookup(self_refs, own, ["owner", "last"], ["parent_id", "name"], 1),
            _lookup(siblings, own, ["file_id", "sibling"], ["file_id", "qualified_name"], 1.5),
            _lookup(plain, imported, ["file_id", "name"], ["file_id", "local"], 2),
            _lookup(plain, through, ["file_id", "name"], ["file_id", "local"], 2.2),
            _lookup(plain.dropna(subset=["package"]), peers, ["package", "name"], ["package", "name"], 2.5),
            _lookup(dotted, module_members, ["file_id", "prefix", "last"], ["file_id_b", "local", "name"], 3),
            _lookup(class_refs, class_members, ["class_id", "last"], ["parent_id", "name"], 4),
        ],
        ignore_index=True,
    )
    best = candidates.sort_values(["ref", "priority", "dst"]).drop_duplicates("ref")
    edges = refs[["ref", "symbol_id", "kind"]].merge(best[["ref", "dst"]], on="ref")
    edges = edges.rename(columns={"symbol_id": "src_symbol_id", "dst": "dst_symbol_id"})
    return edges.loc[edges["src_symbol_id"] != edges["dst_symbol_id"], ["src_symbol_id", "dst_symbol_id", "kind"]]
