"""The per-KB word tables (cra.dataflows.retrieval.vocabulary) give the signals exactly what per-request work gave."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cra.dataflows.lexical import stable_order
from cra.dataflows.retrieval import vocabulary
from cra.dataflows.retrieval.models import TaskQuery
from cra.drivers.kb.word_cache import word_tables
from tests.retrieval_dag import EMPTY_LEXICON, run_node
from tests.test_signals import kb_files, kb_symbols

PATHS = (
    "src/auth/LoginHandler.py",
    "src/auth/__init__.py",
    "src/cache_store/backends.py",
    "docs/Caching.md",
    "tests/test_login_handler.py",
)
NAMES = (
    "validate_login",
    "LoginHandler",
    "HTTPServerError2",
    "get_URL_v2",
    "_cache_key",
    "CacheStore",
    "touch",
    "parse_url",
    "test_login_tests",
    "Rule_L031",
    "__init__",
)


def files() -> pd.DataFrame:
    """A files table with domains, modules and concepts worth matching."""
    return kb_files(
        *PATHS,
        domain=["auth", "auth", "cache_store", "", ""],
        concepts=[["login", "Auth"], ["auth"], ["caching", "backend"], ["caching"], ["login"]],
    )


def symbols() -> pd.DataFrame:
    """Symbols spread over the files (the same name twice, in two files)."""
    rows = [(i % len(PATHS), name) for i, name in enumerate(NAMES)] + [(3, "touch")]
    return kb_symbols(*rows)


def query() -> TaskQuery:
    """A task touching path words, prefixes, stems, symbol hints and concepts."""
    return TaskQuery(
        raw_description="Caching login handler: touch() ignores the URL timeout",
        task_type="bug_fix",
        keywords=("cach", "login", "handler", "touch", "url", "timeout", "backend", "auth"),
        symbol_hints=("LoginHandler", "touch", "get_URL"),
        concepts=("caching", "login"),
    )


def tables(kb_files_: pd.DataFrame, kb_symbols_: pd.DataFrame) -> dict:
    """The word tables a loaded KB passes to the DAG (`cra.drivers.kb.word_cache.word_tables`, named as DAG inputs)."""
    return {f"kb_{name}": table for name, table in word_tables(kb_files_, kb_symbols_).items()}


@pytest.mark.parametrize("signal", ["path_match", "symbol_match", "domain_match", "concept_overlap"])
def test_signals_from_word_tables_given_as_overrides_equal_those_the_dag_builds(signal):
    f, s, q = files(), symbols(), query()
    given = {f"kb_{name}": table for name, table in word_tables(f, s).items()}
    with_tables = run_node(signal, kb_files=f, kb_symbols=s, task_query=q, **given)
    assert with_tables.max() > 0
    pd.testing.assert_series_equal(with_tables, run_node(signal, kb_files=f, kb_symbols=s, task_query=q))


def test_task_concepts_from_the_kb_concept_vocabulary_equal_those_the_dag_builds():
    f = files()
    text = "Caching breaks the login of auth backends"
    inputs = {"task_text": text, "kb_files": f, "issue_template_lines": frozenset(), "file_lexicon": EMPTY_LEXICON}
    vocabulary = word_tables(f, symbols())["concept_vocabulary"]
    grounded = run_node("heuristic_task_query", **inputs, kb_concept_vocabulary=vocabulary)
    assert set(grounded.concepts) == {"auth", "backend", "caching", "login"}
    assert grounded == run_node("heuristic_task_query", **inputs)


def terms_of(codes: np.ndarray, labels: np.ndarray, name_terms: pd.DataFrame) -> pd.Series:
    """The terms of each label's name code (`symbol_name_terms` rows gathered), indexed by label, in label order."""
    term_codes, terms = name_terms["code"].to_numpy(), name_terms["term"].to_numpy()
    low, high = np.searchsorted(term_codes, codes, "left"), np.searchsorted(term_codes, codes, "right")
    counts = high - low
    gather = np.repeat(low - (np.cumsum(counts) - counts), counts) + np.arange(counts.sum())
    return pd.Series(terms[gather], index=np.repeat(labels, counts), dtype=object)


def test_symbol_name_terms_equal_name_words_of_every_name():
    tricky = [
        "3Dfoo",
        "x-3Dfoo",
        "9ABc",
        "a9B",
        "caféBar",
        "HTTPServerError2",
        "get_URL_v2",
        "a.b-c/d:e",
        "İstanbul",
        "test_tests",
        "",
        "_",
        "123",
        "abc123def",
        *NAMES,
    ]
    frame = pd.DataFrame({"symbol_id": range(len(tricky)), "file_id": 0, "name": tricky})
    names = vocabulary.symbol_names(frame)
    codes = vocabulary.symbol_name_codes(frame, names)["name_code"].to_numpy()
    got = terms_of(codes, frame["symbol_id"].to_numpy(), vocabulary.symbol_name_terms(names))
    want = frame.set_index("symbol_id")["name"].map(lambda n: sorted(set(vocabulary.name_words(n)) - {"test"}))
    want = want.explode().dropna()
    assert list(got.index) == list(want.index) and list(got) == list(want)
    assert list(got[frame.index[frame["name"] == "HTTPServerError2"][0]]) == ["error2", "http", "server"]


def test_norms_match_norm_of_each_name():
    values = pd.Series(["RuleL031", "Rule_L031", "get-URL.v2", "İx", "Kelvin\u212a"])
    assert list(vocabulary.norms(values)) == [vocabulary.norm(v) for v in values]
    assert list(vocabulary.norms(pd.Series(["a_b", None], dtype=object))) == [
        "ab",
        pd.NA,
    ]  # (a qualified name may be null)


def test_word_index_groups_rows_by_sorted_word():
    index = vocabulary.word_index(pd.DataFrame({"row": [0, 1, 2, 3]}), pd.Series(["b", "a", "b", None]))
    assert list(index.vocabulary["entry"]) == ["a", "b"]
    rows, counts = vocabulary.rows_of(index, np.array([1]))
    assert sorted(index.rows["row"].to_numpy()[rows]) == [0, 2] and list(counts) == [2]


def test_stable_order_is_a_stable_argsort_beyond_16_bits():
    codes = np.random.default_rng(0).integers(0, 200_000, 50_000)
    assert np.array_equal(stable_order(codes), np.argsort(codes, kind="stable"))


def name_index_of(kb_symbols_: pd.DataFrame) -> vocabulary.NameIndex:
    """The name index a loaded KB passes to symbol_match."""
    names = vocabulary.symbol_names(kb_symbols_)
    return vocabulary.name_index(names, vocabulary.symbol_name_codes(kb_symbols_, names))


def test_names_containing_finds_what_a_substring_scan_finds():
    s = symbols()
    names = vocabulary.symbol_names(s)
    index = name_index_of(s)
    for part in ("login", "url_v", "cache", "touch", "_", "l031", "nowhere", "validate_login"):
        expected = np.flatnonzero(names["lower"].str.contains(part, regex=False).to_numpy(dtype=bool))
        assert list(vocabulary.names_containing(index, part)) == list(expected), part
    assert len(vocabulary.names_containing(index, "login")) == 3  # validate_login, LoginHandler, test_login_tests


def test_name_index_carries_each_name_to_the_files_defining_it():
    s = symbols()
    names = vocabulary.symbol_names(s)
    index = name_index_of(s)
    touch = int(np.flatnonzero(names["name"] == "touch")[0])
    files, counts = vocabulary.carriers_of(index, np.array([touch]))
    assert sorted(files) == sorted(set(s.loc[s["name"] == "touch", "file_id"])) and list(counts) == [2]


def _plain_name_index(names: pd.DataFrame, codes: pd.DataFrame) -> vocabulary.NameIndex:
    """`name_index` by its definition: every lower-cased name followed by the separator, and the distinct (name
    code, file) pairs in order."""
    lower = names["lower"].astype(object).tolist()
    lengths = np.array([len(n) + 1 for n in lower], dtype=np.int64)
    pairs = codes.loc[codes["name_code"] >= 0, ["name_code", "file_id"]].drop_duplicates()
    pairs = pairs.sort_values(["name_code", "file_id"], kind="stable")
    return vocabulary.NameIndex(
        text="".join(f"{n}\0" for n in lower),
        starts=np.cumsum(lengths) - lengths,
        files=pairs["file_id"].to_numpy(),
        offsets=np.searchsorted(pairs["name_code"].to_numpy(), np.arange(len(names) + 1)),
    )


@pytest.mark.parametrize("seed", range(6))
def test_name_index_equals_its_plain_definition_on_random_names(seed):
    """The name index (its text joined by Arrow, its pairs as one sorted integer key each) equals the index made name
    by name: non-ASCII names whose lower case grows (İ), names in several files and twice in one, no symbols."""
    rng = np.random.default_rng(seed)
    pool = ["get", "İstanbul", "straße", "ÄrgerLich", "x", "run_Now", "名前", "a_b", "Get"]
    n = int(rng.integers(0, 60)) if seed else 0
    frame = pd.DataFrame(
        {
            "symbol_id": np.arange(n, dtype=np.int32),
            "file_id": np.sort(rng.integers(0, 9, n)).astype(np.int32),
            "name": [None if rng.random() < 0.05 else f"{rng.choice(pool)}{rng.integers(4)}" for _ in range(n)],
        }
    ).astype({"name": "str"})
    names = vocabulary.symbol_names(frame)
    codes = vocabulary.symbol_name_codes(frame, names)
    got, want = vocabulary.name_index(names, codes), _plain_name_index(names, codes)
    assert got.text == want.text
    for field in ("starts", "files", "offsets"):
        assert np.array_equal(getattr(got, field), getattr(want, field)), field
        assert getattr(got, field).dtype == getattr(want, field).dtype, field


@pytest.mark.parametrize("wanted", [[], ["b"], ["zz", "a", "c"], [f"n{i}" for i in range(12)] + ["a", "q"]])
def test_a_few_names_are_found_by_a_scan_where_a_hash_would_find_them(wanted):
    from cra.dataflows.retrieval.carried_words import _positions

    names = np.array(["a", "b", "c", *(f"n{i}" for i in range(0, 20, 2))], dtype=object)
    wanted = np.array(wanted, dtype=object)
    assert list(_positions(names, wanted)) == list(pd.Index(names).get_indexer(wanted))


def test_best_per_pair_is_a_sorted_groupby_max():
    keys, items, scores = np.array([3, 1, 3, 1, 3]), np.array([0, 1, 0, 1, 1]), np.array([0.3, 0.5, 1.0, 0.2, 0.4])
    got = vocabulary.best_per_pair(keys, items, scores, 2)
    want = pd.DataFrame({"k": keys, "i": items, "s": scores}).groupby(["k", "i"], as_index=False)["s"].max()
    assert [list(a) for a in got] == [list(want["k"]), list(want["i"]), list(want["s"])]


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("as_arrow", [False, True])
def test_file_concepts_and_their_vocabulary_are_the_exploded_lower_cased_lists(seed, as_arrow):
    """The concepts tables are those exploding, dropping nulls and lower-casing give (the pandas definition), whether
    the files' concepts are Python lists or Arrow lists (a re-index's), ASCII (read by Arrow) or not, empty or null."""
    import pyarrow as pa

    rng = np.random.default_rng(seed)
    words = ["Ledger", "SLUG", "cache", "Überweisung", "x", "Tax_Rate", "HTTPServer"][: 6 if seed % 2 else 7]
    lists = [
        None if rng.random() < 0.1 else [str(w) for w in rng.choice(words, size=rng.integers(0, 5))] for _ in range(40)
    ]
    files = pd.DataFrame({"file_id": np.arange(40, dtype=np.int32) * 3, "concepts": pd.Series(lists, dtype=object)})
    if as_arrow:
        typed = pa.array(lists, type=pa.list_(pa.string()))
        files["concepts"] = pd.Series(pd.arrays.ArrowExtensionArray(typed))
    exploded = files.set_index("file_id")["concepts"].explode().dropna().astype(str).str.lower()
    expected = pd.DataFrame({"file_id": exploded.index, "concept": exploded.to_numpy()}).drop_duplicates()
    got = vocabulary.file_concepts(files)
    assert got["file_id"].tolist() == expected["file_id"].tolist() and got.index.tolist() == expected.index.tolist()
    assert got["concept"].tolist() == expected["concept"].tolist() and got.dtypes.equals(expected.dtypes)
    assert vocabulary.concept_vocabulary(files)["concept"].tolist() == list(exploded.unique())


def test_a_concept_vocabulary_built_on_a_previous_one_stems_only_the_new_concepts(monkeypatch):
    """Given the vocabulary a re-index had before, the concepts it holds keep its stems and only the others are
    stemmed: the vocabulary equals the one built from scratch."""
    files = pd.DataFrame(
        {"file_id": [1, 2, 3], "concepts": [["Ledgers", "taxes", "http2"], ["Invoices", "taxes"], ["routing"]]}
    )
    before = vocabulary.concept_vocabulary(files.iloc[:2])
    scratch = vocabulary.concept_vocabulary(files)
    stemmed = []
    real = vocabulary.stem_words
    monkeypatch.setattr(vocabulary, "stem_words", lambda words: stemmed.extend(words) or real(words))
    again = vocabulary.concept_vocabulary(files, before)
    pd.testing.assert_frame_equal(again, scratch)
    assert stemmed == ["routing"]
