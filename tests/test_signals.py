"""Each scoring signal alone on a tiny KB with known output; seed files; the 0-1-over-every-file contract."""

from __future__ import annotations

import pandas as pd
import pytest

from cra.dataflows.index.schema import TABLES
from cra.dataflows.lexical import Bm25Index
from cra.dataflows.retrieval import signals
from cra.dataflows.retrieval.models import TaskQuery
from cra.dataflows.retrieval.signal_list import SIGNAL_LIST, SIGNALS
from cra.dataflows.text import term_counts
from tests.retrieval_dag import run_node


def kb_files(*paths: str, **columns) -> pd.DataFrame:
    """A files table with every schema column; ids 0..n-1, defaults for columns not given."""
    n = len(paths)
    data = {
        "file_id": list(range(n)),
        "path": list(paths),
        "language": ["python"] * n,
        "size": [100] * n,
        "hash": [""] * n,
        "is_test": [p.split("/")[-1].startswith("test_") for p in paths],
        "module": [p.rsplit(".", 1)[0].replace("/", ".") for p in paths],
        "package": [p.rsplit("/", 1)[0] if "/" in p else "" for p in paths],
        "domain": [""] * n,
        "concepts": [[] for _ in paths],
        "concept_lo": [float("nan")] * n,
        "concept_hi": [float("nan")] * n,
        "parse_error": [None] * n,
        "n_lines": [10] * n,
        "tokens": [50] * n,
        "last_commit_time": [None] * n,
        "commit_count": [0] * n,
    }
    data.update(columns)
    assert list(data) == list(TABLES["files"])
    return pd.DataFrame(data)


def kb_symbols(*rows: tuple[int, str]) -> pd.DataFrame:
    """A symbols table from (file_id, qualified_name) rows."""
    frame = pd.DataFrame(
        {
            "symbol_id": range(len(rows)),
            "file_id": [f for f, _ in rows],
            "name": [q.split(".")[-1] for _, q in rows],
            "qualified_name": [q for _, q in rows],
        }
    )
    for column in TABLES["symbols"]:
        if column not in frame:
            frame[column] = None
    return frame[list(TABLES["symbols"])]


def kb_edges(*pairs: tuple[int, int]) -> pd.DataFrame:
    """An edges table from (src, dst) import pairs."""
    return pd.DataFrame(
        {"src_file_id": [a for a, _ in pairs], "dst_file_id": [b for _, b in pairs], "kind": ["import"] * len(pairs)},
        columns=list(TABLES["edges"]),
    )


def query(**fields) -> TaskQuery:
    """A TaskQuery with defaults for what the test does not care about."""
    return TaskQuery(
        raw_description=fields.pop("raw_description", ""),
        task_type=fields.pop("task_type", "feature"),
        **{k: tuple(v) for k, v in fields.items()},
    )


def seeds(*file_ids: int) -> pd.Series:
    """A seed_files Series for the given ids."""
    return pd.Series("test seed", index=pd.Index(list(file_ids), name="file_id"), dtype=object)


def values(series: pd.Series) -> list[float]:
    """Series values rounded, in file_id order."""
    return [round(v, 4) for v in series.sort_index().tolist()]


def test_path_match_scores_file_name_above_directory_and_nothing_elsewhere():
    files = kb_files("src/auth/handler.py", "src/db/conn_cache.py", "docs/readme.md")
    assert values(run_node("path_match", kb_files=files, task_query=query(keywords=["handler"]))) == [1.0, 0.0, 0.0]
    directory = run_node("path_match", kb_files=files, task_query=query(keywords=["auth"]))
    assert values(directory) == [0.8, 0.0, 0.0]
    words = run_node(
        "path_match", kb_files=kb_files("a/cache_store.py", "b/main.py", "c/x.py"), task_query=query(keywords=["cach"])
    )
    assert values(words) == [0.7, 0.0, 0.0]


def test_path_match_favours_keywords_naming_few_files():
    files = kb_files("src/util/a.py", "src/util/b.py", "src/auth.py")
    scores = run_node("path_match", kb_files=files, task_query=query(keywords=["util", "auth"]))
    assert scores[2] == 1.0  # 'auth' names one file: its full file-name score
    assert scores[0] == scores[1] and 0.0 < scores[0] < 0.8  # 'util' names two: below its directory score of 0.8


def test_symbol_match_exact_substring_constituent():
    files = kb_files("a.py", "b.py", "c.py")
    symbols = kb_symbols((0, "parse_url"), (1, "load_config_file"), (2, "AuthHandler"))
    q = query(symbol_hints=["parse_url", "load_config"], keywords=["auth"])
    assert values(run_node("symbol_match", kb_files=files, kb_symbols=symbols, task_query=q)) == [1.0, 0.5, 0.3]


def test_symbol_match_favours_distinctive_names():
    files = kb_files("a.py", "b.py", "c.py")
    symbols = kb_symbols((0, "get"), (1, "get"), (2, "get_total_irradiance"))
    scores = run_node(
        "symbol_match",
        kb_files=files,
        kb_symbols=symbols,
        task_query=query(symbol_hints=["get", "get_total_irradiance"]),
    )
    assert scores[2] == 1.0
    assert scores[0] == scores[1] < 0.6


def test_dependency_proximity_by_hops_in_either_direction():
    files = kb_files("seed.py", "a.py", "b.py", "c.py", "far.py")
    edges = kb_edges((1, 0), (1, 2), (3, 2), (4, 3))  # a imports seed; hops: a=1, b=2, c=3, far=4
    assert values(signals.dependency_proximity(files, signals.kb_import_graph(edges), seeds(0))) == [
        0.0,
        1.0,
        0.5,
        0.25,
        0.0,
    ]


def test_cochange_affinity_normalised_against_seeds():
    files = kb_files("seed.py", "often.py", "sometimes.py")
    cochange = pd.DataFrame({"file_a": [0, 0], "file_b": [1, 2], "count": [4, 2]})
    assert values(signals.cochange_affinity(files, cochange, seeds(0))) == [0.0, 1.0, 0.5]


def test_recency_placed_in_the_commit_range():
    files = kb_files("old.py", "mid.py", "new.py", last_commit_time=[1000, 1500, None])
    commits = pd.DataFrame({"commit": ["a", "b"], "time": [1000, 2000]})
    assert values(signals.recency(files, commits)) == [0.0, 0.5, 0.0]


def test_domain_match_from_domain_and_module():
    files = kb_files(
        "src/auth/handler.py",
        "src/db/conn.py",
        "README.md",
        domain=["auth", "db", ""],
        module=["auth.handler", "db.conn", "README"],
    )
    assert values(run_node("domain_match", kb_files=files, task_query=query(keywords=["auth", "handler"]))) == [
        1.0,
        0.0,
        0.0,
    ]
    assert values(
        run_node("domain_match", kb_files=files, task_query=query(concepts=["database"], keywords=["db"]))
    ) == [0.0, 0.8, 0.0]


def test_concept_overlap_is_share_of_task_concepts():
    files = kb_files("a.py", "b.py", "c.py", concepts=[["login", "auth", "token"], ["login"], []])
    assert values(run_node("concept_overlap", kb_files=files, task_query=query(concepts=["login", "auth"]))) == [
        1.0,
        0.5,
        0.0,
    ]


def test_structural_centrality_is_normalised_in_degree():
    files = kb_files("types.py", "utils.py", "main.py")
    edges = kb_edges((1, 0), (2, 0), (2, 1), (2, 1))
    assert values(signals.structural_centrality(files, edges)) == [1.0, 0.5, 0.0]
    # the same pairs in any order, repeated apart, with a self-edge: distinct importers are still what counts
    assert values(signals.structural_centrality(files, kb_edges((2, 1), (1, 0), (2, 1), (0, 0), (2, 0)))) == [
        1.0,
        0.5,
        0.0,
    ]


def file_lexicon(texts: list[str]) -> Bm25Index:
    """A BM25 index over texts, doc id = position."""
    rows = [(i, t, c) for i, text in enumerate(texts) for t, c in term_counts(text).items()]
    return Bm25Index.from_terms(pd.DataFrame(rows, columns=["file_id", "term", "tf"]), "file_id")


def test_lexical_match_is_bm25_divided_by_the_best_and_drops_common_terms():
    files = kb_files("a.py", "b.py", "c.py", "d.py")
    lexicon = file_lexicon(["token token common", "token common", "common other", "common"])
    q = query(keywords=["token", "common"])
    terms = signals.lexical_query_terms(q, lexicon)
    assert terms == ["token"]
    scores = signals.lexical_match(files, terms, lexicon)
    assert scores[0] == 1.0 and 0 < scores[1] < 1 and scores[2] == scores[3] == 0.0


def test_title_match_scores_the_first_line_only():
    files = kb_files("render.py", "parse.py", "io.py", "util.py")
    lexicon = file_lexicon(["render widget", "parse config", "read file", "common"])
    task = "## Widget render is blank\n\nSteps: parse config, read file\n```parse(config)```"
    terms = signals.title_query_terms(query(raw_description=task), lexicon)
    assert terms == ["widget", "render", "blank"]  # heading marks dropped, body ignored
    scores = signals.title_match(files, terms, lexicon)
    assert scores[0] == 1.0 and scores[1:].eq(0.0).all()
    assert signals.title_query_terms(query(raw_description="  \n"), lexicon) == []


def test_every_signal_is_zero_over_all_files_when_its_data_is_missing():
    files = kb_files("a.py", "b.py", "c.py")
    empty_edges, empty_symbols = kb_edges(), kb_symbols()
    no_cochange = pd.DataFrame(columns=["file_a", "file_b", "count"])
    no_commits = pd.DataFrame(columns=["commit", "time", "author", "message", "n_files"])
    q = query(keywords=["anything"], symbol_hints=["some_name"])
    results = [
        run_node("symbol_match", kb_files=files, kb_symbols=empty_symbols, task_query=q),
        signals.dependency_proximity(files, signals.kb_import_graph(empty_edges), seeds(0)),
        signals.cochange_affinity(files, no_cochange, seeds(0)),
        signals.recency(files, no_commits),
        run_node("domain_match", kb_files=files, task_query=query()),
        run_node("concept_overlap", kb_files=files, task_query=q),
        signals.structural_centrality(files, empty_edges),
        signals.lexical_match(files, [], file_lexicon(["x"])),
        signals.title_match(files, [], file_lexicon(["x"])),
        run_node("path_match", kb_files=files, task_query=q),
    ]
    for series in results:
        assert list(series.index) == [0, 1, 2] and values(series) == [0.0, 0.0, 0.0]


def test_seed_files_from_file_hints_on_component_boundaries():
    files = kb_files("src/auth/handler.py", "src/auth/myhandler.py", "tests/test_handler.py")
    found = signals.seed_files(files, kb_symbols(), query(file_hints=["handler.py", "tests/test_handler.py"]))
    assert list(found.index) == [0, 2]
    assert found[0] == "file hint 'handler.py'"


def test_seed_files_skip_a_bare_name_naming_many_files():
    paths = [f"pkg{i}/__init__.py" for i in range(6)]
    found = signals.seed_files(kb_files(*paths), kb_symbols(), query(file_hints=["__init__.py"]))
    assert found.empty


def test_seed_files_from_trace_frames():
    files = kb_files("pvlib/irradiance.py", "pvlib/tools.py", "setup.py")
    frame = ("/usr/lib/python3.9/site-packages/pvlib/irradiance.py", "get_total_irradiance")
    found = signals.seed_files(files, kb_symbols(), query(trace_frames=[frame]))
    assert list(found.index) == [0]
    assert found[0].startswith("trace frame")


def test_seed_files_from_specific_symbol_hints_only():
    files = kb_files("pvlib/irradiance.py", "pvlib/tools.py", "a.py", "b.py", "tests/test_irradiance.py")
    symbols = kb_symbols(
        (0, "get_total_irradiance"),
        (4, "get_total_irradiance"),
        (1, "get_total_irradiance"),
        (0, "get"),
        (1, "get"),
        (2, "get"),
        (3, "get"),
        (1, "cosd"),
    )
    dotted = signals.seed_files(files, symbols, query(symbol_hints=["pvlib.irradiance.get_total_irradiance"]))
    assert list(dotted.index) == [0]
    common = signals.seed_files(files, symbols, query(symbol_hints=["get"]))
    assert common.empty
    rare = signals.seed_files(files, symbols, query(symbol_hints=["cosd"]))
    assert rare.empty  # plain names compete through symbol_match, they do not seed
    qualified = signals.seed_files(files, symbols, query(symbol_hints=["tools.cosd"]))
    assert list(qualified.index) == [1] and qualified[1] == "symbol hint 'tools.cosd'"


def test_a_member_the_task_adds_seeds_the_file_defining_its_type():
    files = kb_files("src/error.rs", "src/client.rs", "src/dns.rs", "tests/test_error.rs")
    symbols = kb_symbols((0, "Error"), (0, "Error.is_timeout"), (1, "Error"), (2, "Resolver"), (3, "Error"))
    symbols["kind"] = ["class", "method", "type_alias", "class", "class"]
    added = signals.seed_files(files, symbols, query(symbol_hints=["Error.is_dns"]))
    assert list(added.index) == [0] and added[0] == "type 'Error' of 'Error.is_dns', which nothing defines yet"
    existing = signals.seed_files(files, symbols, query(symbol_hints=["Error.is_timeout"]))
    assert list(existing.index) == [0] and existing[0] == "symbol hint 'Error.is_timeout'"
    symbols.loc[3, ["name", "qualified_name"]] = "Error"  # a second type of that name: no single owner
    assert signals.seed_files(files, symbols, query(symbol_hints=["Error.is_dns"])).empty
    assert signals.seed_files(files, symbols, query(symbol_hints=["Unknown.is_dns"])).empty


def test_symbol_lexical_match_takes_each_files_best_symbol():
    files = kb_files("a.py", "b.py", "c.py")
    symbols = kb_symbols((0, "parse_alias"), (0, "unrelated"), (1, "alias"), (1, "alias_join_parse"))
    texts = ["parse alias", "unrelated thing", "alias", "alias join parse"]
    rows = [(i, t, c) for i, text in enumerate(texts) for t, c in term_counts(text).items()]
    lexicon = Bm25Index.from_terms(pd.DataFrame(rows, columns=["symbol_id", "term", "tf"]), "symbol_id")
    scores = signals.symbol_lexical_match(files, signals.kb_symbol_files(symbols), ["pars", "alia", "join"], lexicon)
    assert scores[1] == 1.0  # "alias join parse" matches all three terms
    assert 0 < scores[0] < 1  # best of its two symbols, not their sum
    assert scores[2] == 0.0  # no symbols


def test_history_match_spreads_similar_past_commits_to_their_files_with_recency_decay():
    files = kb_files("a.py", "b.py", "c.py")
    day = 86_400
    commits = pd.DataFrame(
        {
            "commit": ["old", "new", "other"],
            "time": [0, 365 * day, 365 * day],
            "author": "x",
            "message": ["Fix alias join bug", "Fix alias join crash", "Docs"],
            "n_files": [1, 1, 1],
        }
    )
    commit_files = pd.DataFrame({"commit": ["old", "new", "other"], "path": ["a.py", "b.py", "c.py"]})
    rows = [(c, t, n) for c, m in zip(commits["commit"], commits["message"]) for t, n in term_counts(m).items()]
    lexicon = Bm25Index.from_terms(pd.DataFrame(rows, columns=["commit", "term", "tf"]), "commit")
    scores = signals.history_match(files, commits, commit_files, ["alia", "join"], lexicon)
    assert scores[1] == 1.0  # the recent similar fix
    assert scores[0] == pytest.approx(0.5)  # as similar, a year older: half
    assert scores[2] == 0.0
    empty = signals.history_match(files, commits.iloc[:0], commit_files.iloc[:0], ["alia"], lexicon)
    assert empty.eq(0).all()


def test_a_signal_outside_zero_to_one_stops_the_signal_frame():
    files = kb_files("a.py", "b.py")
    zero = pd.Series(0.0, index=pd.Index([0, 1], name="file_id"))
    given = {name: zero for name in SIGNALS}
    assert run_node("signal_frame", kb_files=files, **given).shape == (2, len(SIGNALS))
    with pytest.raises(Exception, match="signals_in_unit_range|path_match"):
        run_node("signal_frame", kb_files=files, **(given | {"path_match": zero + 1.5}))


def test_every_listed_signal_is_a_node_of_the_retrieval_dag_with_its_helpers_and_index_nodes():
    from cra.drivers.index.indexer import index_driver
    from cra.drivers.retrieval.retriever import retrieval_driver

    retrieval = {v.name for v in retrieval_driver().list_available_variables()}
    index = {v.name for v in index_driver().list_available_variables()}
    for signal in SIGNAL_LIST:
        assert signal.name in retrieval and set(signal.helper_nodes) <= retrieval, signal.name
        assert set(signal.index_nodes) <= index, signal.name
    files = kb_files("a.py")
    zero = pd.Series(0.0, index=pd.Index([0], name="file_id"))
    frame = run_node("signal_frame", kb_files=files, **{name: zero for name in SIGNALS})
    assert tuple(frame.columns) == SIGNALS  # the frame has exactly the listed signals, in list order
