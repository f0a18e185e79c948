"""Issue 58's whole-table work of a one-file re-index done in proportion to the change: references spliced by runs of
the previous table, file and symbol edges sorted as merged runs with their kinds made by Arrow. Each fast path must
give the very table the plain pandas computation gives (values and dtypes), on random tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cra.dataflows.index import edges, parsing
from cra.dataflows.index.frames import coded_strings, conform, new_symbol_ids


def _references(rng: np.random.Generator, files: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A previous references table as a KB holds it (symbol_id order, int32 ids, arrow-backed names) and its symbols'
    (file_id, symbol_id) in per-file blocks of 8 ids."""
    per_file = rng.integers(0, 4, size=files)
    symbol_files = np.repeat(np.arange(files), per_file)
    first = np.r_[0, np.cumsum(per_file)[:-1]]
    symbol_ids = 8 * symbol_files + (np.arange(len(symbol_files)) - np.repeat(first, per_file))
    refs = rng.integers(0, 3, size=len(symbol_ids))
    previous = pd.DataFrame(
        {
            "file_id": np.repeat(symbol_files, refs).astype(np.int32),
            "symbol_id": np.repeat(symbol_ids, refs).astype(np.int32),
            "name": pd.array([f"n{i}" for i in rng.integers(0, 30, size=int(refs.sum()))], dtype="str"),
            "kind": pd.array(rng.choice(["call", "base", "annotation"], size=int(refs.sum())), dtype="str"),
        }
    )
    return previous, pd.DataFrame({"file_id": symbol_files, "symbol_id": symbol_ids})


@pytest.mark.parametrize("seed", range(30))
def test_spliced_references_are_the_rekeyed_sort_of_the_kept_and_parsed_ones(seed):
    rng = np.random.default_rng(seed)
    files = int(rng.integers(1, 30))
    previous, symbols = _references(rng, files)
    changed = set(rng.choice(files, size=int(rng.integers(0, 4)), replace=True).tolist())
    gone = set(rng.choice(files, size=int(rng.integers(0, 2)), replace=True).tolist()) - changed
    kept = symbols[~symbols["file_id"].isin(changed | gone)]
    parsed_locals = {f: int(rng.integers(0, 5)) for f in sorted(changed)}
    keys = pd.concat(  # symbol_keys as `parsing.symbol_keys` makes them: reused by old id, parsed by local
        [
            pd.DataFrame(
                {"file_id": kept["file_id"], "order": kept["symbol_id"], "old_id": kept["symbol_id"], "local": -1}
            ),
            pd.DataFrame(
                {
                    "file_id": [f for f, n in parsed_locals.items() for _ in range(n)],
                    "order": [i for n in parsed_locals.values() for i in range(n)],
                    "old_id": -1,
                    "local": [i for n in parsed_locals.values() for i in range(n)],
                }
            ),
        ],
        ignore_index=True,
    ).astype("int64")
    keys = parsing.symbol_keys(
        pd.DataFrame(
            {"file_id": keys.loc[keys["old_id"] >= 0, "file_id"], "symbol_id": keys.loc[keys["old_id"] >= 0, "old_id"]}
        ),
        pd.DataFrame(
            {"file_id": keys.loc[keys["local"] >= 0, "file_id"], "local": keys.loc[keys["local"] >= 0, "local"]}
        ),
        pd.DataFrame({"file_id": np.arange(files)}),
    )
    n_new = int(rng.integers(0, 12))
    parsed_files = list(parsed_locals)
    parsed = pd.DataFrame(
        {
            "file_id": rng.choice(parsed_files, size=n_new) if parsed_files else np.zeros(0, np.int64),
            "local": pd.array(rng.integers(-1, 5, size=n_new if parsed_files else 0), dtype="Int64"),
            "name": [f"m{i}" for i in range(n_new if parsed_files else 0)],
            "kind": "call",
        }
    ).astype({"file_id": "int64"})
    parsed = parsed.assign(local=parsed["local"].where(parsed["local"] >= 0, pd.NA)).sort_values(
        ["file_id", "local"], kind="stable", ignore_index=True
    )

    got = parsing.kb_references(parsed, keys, {"references": previous})

    reused = previous.assign(symbol_id=new_symbol_ids(previous["symbol_id"], keys)).dropna(subset=["symbol_id"])
    locals_ = keys[keys["local"] >= 0].set_index(["file_id", "local"])["symbol_id"]
    pairs = list(zip(parsed["file_id"].tolist(), parsed["local"].fillna(-1).astype(int).tolist()))
    new = parsed.assign(symbol_id=[locals_.get(p, np.nan) for p in pairs]).dropna(subset=["symbol_id"])
    both = pd.concat([reused.astype({"symbol_id": "int64"}), new.drop(columns="local").astype({"symbol_id": "int64"})])
    expected = conform(both.sort_values("symbol_id", kind="stable", ignore_index=True).astype(object), "references")
    assert got["symbol_id"].tolist() == expected["symbol_id"].tolist()
    pd.testing.assert_frame_equal(got.astype(object), expected.astype(object))
    assert got["symbol_id"].dtype == np.int32 and got["file_id"].dtype == np.int32


def _plain_file_edges(bindings: pd.DataFrame, tests: pd.DataFrame) -> pd.DataFrame:
    """kb_edges the plain pandas way: unique (src, dst) imports without self-edges, test edges not already imports."""
    imports = bindings.rename(columns={"file_id": "src_file_id"})[["src_file_id", "dst_file_id"]]
    imports = imports[imports["src_file_id"] != imports["dst_file_id"]].drop_duplicates().assign(kind="import")
    tested = tests.merge(imports[["src_file_id", "dst_file_id"]], how="left", indicator=True)
    tested = tested[tested["_merge"] == "left_only"].drop(columns="_merge").assign(kind="tests")
    both = pd.concat([imports, tested], ignore_index=True).astype({"src_file_id": "int64", "dst_file_id": "int64"})
    return both.sort_values(["src_file_id", "dst_file_id"], kind="stable", ignore_index=True)


@pytest.mark.parametrize("seed", range(20))
def test_file_edges_are_the_sorted_unique_imports_and_tests(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    file_ids = rng.integers(0, 40, size=n)
    if seed % 2:  # bindings in file order, as a re-index splices them
        file_ids = np.sort(file_ids)
    bindings = pd.DataFrame({"file_id": file_ids, "dst_file_id": rng.integers(0, 40, size=n)})
    pairs = pd.DataFrame({"src_file_id": rng.integers(0, 40, 15), "dst_file_id": rng.integers(0, 40, 15)})
    tests = pairs[pairs["src_file_id"] != pairs["dst_file_id"]].drop_duplicates().astype("int64")
    got = edges.kb_edges(bindings, tests)
    expected = conform(_plain_file_edges(bindings, tests), "edges")
    pd.testing.assert_frame_equal(got, expected)
    assert got["kind"].dtype == pd.Series(["import"]).dtype  # (as pandas infers strings: what a KB reads back)


@pytest.mark.parametrize("seed", range(20))
def test_symbol_edges_are_sorted_unique_with_their_kinds(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    kinds = rng.choice(["call", "base", "annotation"], size=n)
    frame = pd.DataFrame(
        {
            "src_symbol_id": rng.integers(0, 50, size=n),
            "dst_symbol_id": rng.integers(0, 50, size=n),
            "kind": pd.array(kinds, dtype="str") if seed % 2 else kinds.astype(object),
        }
    )
    got = edges._sorted_unique_edges(frame)
    expected = (
        frame.astype({"kind": object})
        .drop_duplicates()
        .sort_values(["src_symbol_id", "dst_symbol_id", "kind"], kind="stable", ignore_index=True)
    )
    pd.testing.assert_frame_equal(got.astype({"kind": object}), expected)
    assert got["kind"].dtype == pd.Series(["call"]).dtype


def test_coded_strings_are_the_strings_pandas_makes_of_the_objects():
    names = ["import", "tests"]
    codes = np.array([1, 0, 0, 1, 1])
    plain = pd.Series(np.asarray(names, dtype=object)[codes])
    pd.testing.assert_series_equal(coded_strings(codes, names), plain)
    pd.testing.assert_series_equal(
        coded_strings(codes[:0], names), pd.Series(np.asarray(names, dtype=object)[codes[:0]])
    )


def _written(frame: pd.DataFrame, table: str):
    """A table as the KB writes it (Arrow, the schema's types): what two ways of making it must agree on."""
    import pyarrow as pa

    from cra.dataflows.index.schema import arrow_schema

    return pa.Table.from_pandas(conform(frame, table)[list(arrow_schema(table).names)], schema=arrow_schema(table))


@pytest.mark.parametrize("changed", [[1], [2], [0, 3], [1, 2, 3], []])
def test_carried_import_bindings_with_the_changed_files_resolved_are_a_full_resolution(changed):
    """The previous bindings of unchanged files are kept as slices (names as read back, nulls included) and the
    changed files' resolved ones go in at their places: the table is the one resolving every import gives."""
    files = pd.DataFrame(
        {
            "file_id": [0, 1, 2, 3],
            "path": ["app/a.py", "app/b.py", "app/c.py", "app/d.py"],
            "language": "python",
            "module": ["app.a", "app.b", "app.c", "app.d"],
            "package": "app",
            "reused": True,
        }
    )
    imports = pd.DataFrame(
        {
            "file_id": [0, 1, 1, 2, 2, 3],
            "target": ["app.d", "app.a", "app", "app.a", "app.b", "app.c"],
            "names": [["x"], [], ["a"], ["f"], [], ["g", "h"]],
            "level": 0,
            "line": [1, 1, 2, 1, 2, 1],
        }
    )
    full = edges.import_bindings(files, imports, {})
    stored = edges.kb_import_bindings(full)  # (as the previous run wrote it and a re-index reads it back)
    previous = _written(stored, "import_bindings").to_pandas()
    assert previous["member"].isna().any() and previous["local"].dtype == pd.Series(["x"]).dtype
    rerun = files.assign(reused=~files["file_id"].isin(changed))
    got = edges.import_bindings(
        rerun, imports, {}, previous_kb={"import_bindings": previous}, import_context="c", previous_import_context="c"
    )
    assert got["file_id"].tolist() == full["file_id"].tolist()
    assert _written(edges.kb_import_bindings(got), "import_bindings").equals(_written(full, "import_bindings"))
    assert _written(edges.kb_import_bindings(got), "import_bindings").equals(_written(stored, "import_bindings"))


@pytest.mark.parametrize("seed", range(8))
def test_package_keys_built_only_for_package_languages_are_the_plain_keys(seed):
    """`_package_keys` builds "language:directory" strings only for the files of package / project languages (a tree
    of none builds none); it must give the plain computation's keys, None for every other file and NaN for a
    package-language file without a package, whatever the frame's index."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 40))
    pool = ["python", "go", "java", "csharp", "rust", None] if seed % 2 else ["python", "javascript", None]
    files = pd.DataFrame(
        {
            "language": [pool[i] for i in rng.integers(0, len(pool), n)],
            "package": [None if rng.random() < 0.1 else f"pkg/{rng.integers(3)}" for _ in range(n)],
        },
        index=rng.permutation(n) + 7,
    ).astype({"language": "str", "package": "str"})
    language = files["language"].astype(object)
    scoped = edges.PACKAGE_LANGUAGES | edges.PROJECT_LANGUAGES
    plain = language + ":" + files["package"].astype(object).where(~language.isin(edges.PROJECT_LANGUAGES), "")
    plain = plain.where(language.isin(scoped), None).reset_index(drop=True)
    got = edges._package_keys(files)
    pd.testing.assert_series_equal(got, plain)
    assert [repr(v) for v in got] == [repr(v) for v in plain]  # None stays None, NaN stays NaN


@pytest.mark.parametrize("seed", range(40))
def test_same_imports_read_row_by_row_are_the_grouped_statements(seed):
    """`_same_imports` reads the few changed files' import rows one by one; it must find the files whose statements
    (target, level, names: not lines) are the previous KB's exactly as the grouped string columns did."""
    rng = np.random.default_rng(seed)

    def imports(n: int) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "file_id": rng.integers(0, 6, n).astype(np.int32),
                "target": [None if rng.random() < 0.2 else f"m{rng.integers(3)}" for _ in range(n)],
                "names": [
                    None if rng.random() < 0.2 else np.array(rng.choice(["a", "b", "c"], rng.integers(0, 3)), object)
                    for _ in range(n)
                ],
                "level": rng.integers(0, 2, n).astype(np.int32),
            }
        )

    now = imports(int(rng.integers(1, 14)))
    before = now.copy()  # the same statements, or one row's level, target or names changed, or other rows
    row = int(rng.integers(len(now)))
    if seed % 4 == 1:
        before.loc[row, "level"] = 1 - before.loc[row, "level"]
    elif seed % 4 == 2:
        before.loc[row, "target"] = None if before.loc[row, "target"] is not None else "m0"
    elif seed % 4 == 3:
        before = imports(int(rng.integers(1, 14))) if seed % 8 == 3 else before.assign(names=None)
    file_ids = pd.Index(sorted(set(rng.integers(0, 7, 4).tolist())), dtype="int64")

    def statements(rows: pd.DataFrame) -> pd.Series:
        rows = rows[rows["file_id"].isin(file_ids)]
        text = (
            rows["target"].astype(object).fillna("")
            + "|"
            + rows["level"].astype("Int64").astype(str)
            + "|"
            + rows["names"].map(lambda names: ",".join(map(str, names)) if names is not None else "")
        )
        return text.groupby(rows["file_id"].astype("int64").to_numpy()).agg(tuple)

    a, b = statements(now), statements(before)
    plain = pd.Index([f for f in file_ids if a.get(f, ()) == b.get(f, ())], dtype="int64")
    assert edges._same_imports(file_ids, now, before).equals(plain)


@pytest.mark.parametrize("seed", range(20))
def test_stacked_pieces_are_pandas_concat_of_the_pieces(seed):
    """`stacked_pieces` joins each column's arrays directly where the pieces share its dtype (numpy, Arrow strings,
    nullable ints, categoricals, lists as objects); it must give pd.concat's frame, values and dtypes, also where the
    pieces' dtypes differ (then pd.concat decides) or a piece is empty."""
    from cra.dataflows.index.frames import stacked_pieces

    rng = np.random.default_rng(seed)
    kinds = pd.CategoricalDtype(["call", "base"])

    def piece(n: int, wide: bool) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "id": rng.integers(0, 100, n).astype(np.int64 if wide else np.int32),
                "name": pd.array([None if rng.random() < 0.2 else f"n{i}" for i in rng.integers(0, 9, n)], dtype="str"),
                "parent": pd.array([None if rng.random() < 0.3 else int(i) for i in rng.integers(0, 9, n)], "Int32"),
                "kind": pd.Categorical(rng.choice(["call", "base"], n), dtype=kinds),
                "decorators": [list(rng.choice(["a", "b"], rng.integers(0, 3))) for _ in range(n)],
                "flag": rng.random(n) < 0.5,
            },
            index=rng.permutation(n) + 3,
        )

    pieces = [piece(int(rng.integers(0, 6)), wide=seed % 4 == 0 and k == 1) for k in range(int(rng.integers(2, 5)))]
    got, want = stacked_pieces(pieces), pd.concat(pieces, ignore_index=True)
    pd.testing.assert_frame_equal(got, want)
    assert list(got.dtypes) == list(want.dtypes)


def _plain_conform(frame: pd.DataFrame, table: str, arrow_nulls: bool = False) -> pd.DataFrame:
    """`conform` by its definition: the schema's columns set one at a time, strings with nulls as objects and None."""
    from cra.dataflows.index.frames import NULLABLE_INTS, _arrow_strings
    from cra.dataflows.index.schema import TABLES

    out = pd.DataFrame(index=range(len(frame)))
    for column, typ in TABLES[table].items():
        values = frame[column].reset_index(drop=True) if column in frame else pd.Series([None] * len(frame))
        name = str(typ)
        if name in ("int32", "int64"):
            target = name.capitalize() if (table, column) in NULLABLE_INTS else name
            values = values if values.dtype == target else values.astype(target)
        elif name == "bool":
            values = values if values.dtype == bool else values.astype(bool)
        elif (
            name == "string"
            and not isinstance(values.dtype, pd.CategoricalDtype)
            and not (_arrow_strings(values.dtype) and (arrow_nulls or not values.hasnans))
        ):
            values = values.astype(object)
            if values.hasnans:
                values = values.where(values.notna(), None)
        out[column] = values
    return out


@pytest.mark.parametrize("seed", range(16))
def test_conform_built_at_once_is_the_frame_set_column_by_column(seed):
    """`conform` builds its frame at once and turns Arrow-held strings with nulls into Python objects by Arrow; it must
    give the plain column-by-column frame: values (None, not NaN, for a null string), dtypes, index, column order."""
    import pyarrow as pa

    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 30)) if seed else 0
    string_dtypes = ["str", "string[pyarrow]", pd.ArrowDtype(pa.string()), object]
    pick = string_dtypes[seed % 4]

    def strings(null_share: float) -> pd.Series:
        values = [None if rng.random() < null_share else f"v{rng.integers(5)}" for _ in range(n)]
        return pd.Series(values, dtype=pick)

    frame = pd.DataFrame(
        {
            "symbol_id": rng.integers(0, 99, n).astype(np.int64),
            "file_id": rng.integers(0, 9, n).astype(np.int32),
            "name": strings(0.0),
            "qualified_name": strings(0.3),
            "kind": pd.Categorical(rng.choice(["function", "class"], n)) if seed % 3 == 0 else strings(0.0),
            "start_line": rng.integers(0, 50, n),
            "end_line": rng.integers(50, 99, n),
            "docstring": strings(0.5),
            "decorators": [list(rng.choice(["a", "b"], rng.integers(0, 2))) for _ in range(n)],
            "parent_id": pd.array([None if rng.random() < 0.4 else int(i) for i in rng.integers(0, 9, n)], "Int64"),
            **{c: rng.integers(0, 9, n) for c in ("signature_tokens", "body_tokens", "docstring_tokens")},
        },
        index=rng.permutation(n) + 5,
    )  # (signature missing: filled with nulls)
    for arrow_nulls in (False, True):
        got, want = conform(frame, "symbols", arrow_nulls), _plain_conform(frame, "symbols", arrow_nulls)
        pd.testing.assert_frame_equal(got, want)
        assert list(got.dtypes) == list(want.dtypes) and got.index.equals(want.index)
        for column in got.columns:
            if got[column].dtype == object:
                assert [repr(v) for v in got[column]] == [repr(v) for v in want[column]], column


@pytest.mark.parametrize("seed", range(6))
def test_edge_keys_found_by_binary_search_are_those_isin_finds(seed):
    """`_keys_in` (binary search over keys in order, as a KB's edges are) is np.isin, in order or not, with
    repeated keys, and empty on either side."""
    from cra.dataflows.index.edges import _keys_in

    rng = np.random.default_rng(seed)
    for n, m in ((0, 4), (4, 0), (50, 40), (3000, 2500)):
        keys = np.sort(rng.integers(0, 3 * n + 2, n)).astype(np.int64)
        among = np.sort(rng.integers(0, 3 * m + 2, m)).astype(np.int64)
        for candidates in (among, rng.permutation(among)):
            assert np.array_equal(_keys_in(keys, candidates), np.isin(keys, candidates))
            assert np.array_equal(_keys_in(candidates, keys), np.isin(candidates, keys))


@pytest.mark.parametrize("seed", range(6))
def test_files_naming_filtered_by_text_are_those_the_split_names_give(seed, monkeypatch):
    """`edges.files_naming` (symbol_edge_files: which files refer to a name added or removed) filters the references
    by text before splitting them: the same files, in the same order, as splitting every name."""
    rng = np.random.default_rng(seed)
    words = ["get", "getValue", "size", "Map", "HashMap", "entry", "x", "std", "io"]

    def name():
        if rng.random() < 0.05:
            return None
        separator = "::" if rng.random() < 0.3 else "."
        return separator.join(rng.choice(words, size=int(rng.integers(1, 4))))

    n = int(rng.integers(0, 400))
    refs = pd.DataFrame({"file_id": rng.integers(0, 30, n).astype("int32"), "name": [name() for _ in range(n)]})
    refs.index = rng.permutation(n) + 1000  # (labels of a slice of the whole table)
    if seed % 2:
        refs["name"] = refs["name"].astype("string[pyarrow]")
    names = set(rng.choice(words + ["Value", "ge", "absent"], size=int(rng.integers(1, 5))))
    parts = refs["name"].astype(object).str.replace("::", ".", regex=False).str.split(".").explode()
    expected = refs.loc[parts.index[parts.isin(names).to_numpy()].unique(), "file_id"].astype("int64")
    pd.testing.assert_series_equal(edges.files_naming(refs, names), expected)
    monkeypatch.setattr(edges, "NAMES_FILTERED", 0)  # (the plain path, every name split)
    pd.testing.assert_series_equal(edges.files_naming(refs, names), expected)
