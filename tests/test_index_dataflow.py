"""The indexer: a fixture git repository in tmp_path -> KB frames (files, symbols, edges, history, terms)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from cra.dataflows.index import edges as edges_module
from cra.dataflows.index import parsing
from cra.dataflows.index.code_terms import code_term_counts
from cra.dataflows.index.schema import TABLES, arrow_schema
from cra.dataflows.text import terms
from cra.drivers.common.tokens import count_line_tokens, count_tokens
from cra.drivers.index.git_history import git_log
from cra.drivers.index.indexer import index_frames
from cra.drivers.index.sources import scan_sources
from cra.drivers.kb.store import pandas_readable

HAS_TREESITTER = importlib.util.find_spec("cra.dataflows.index.parsers.treesitter") is not None
needs_treesitter = pytest.mark.skipif(not HAS_TREESITTER, reason="tree-sitter parsers not in the checkout yet")

T0 = 1_700_000_000
DAY = 86_400

FILES = {
    ".gitignore": "ignored.py\nbuild/\n",
    "ignored.py": "def hidden():\n    return 1\n",
    "build/out.py": "def built():\n    return 1\n",
    "package-lock.json": '{"lockfileVersion": 3}\n',
    "src/shop/__init__.py": "",
    "src/shop/models.py": '''"""Shop models."""


class Base:
    def describe(self):
        return "base"


class Cart(Base):
    def total(self):
        # because prices are stored in cents, convert at the edge
        return self.subtotal() / 100

    def subtotal(self):
        return 0
''',
    "src/shop/pricing.py": """from shop.models import Cart
from . import util
from shop import models


def price(cart: Cart) -> float:
    return util.round_money(cart.total())
""",
    "src/shop/util.py": "def round_money(value):\n    return round(value, 2)\n",
    "src/shop/broken.py": "def oops(:\n    pass\n",
    "tests/test_pricing.py": "from shop.pricing import price\n\n\ndef test_price():\n    assert price is not None\n",
    "web/api.ts": "export function fetchSession(user: string): string {\n  return user;\n}\n",
    "web/login.ts": 'import { fetchSession } from "./api";\n\nexport class LoginForm {\n  submit(u: string) {\n    return fetchSession(u);\n  }\n}\n',
    "web/forms/index.ts": 'export { LoginForm } from "../login";\n',
    "web/app.ts": 'import { LoginForm } from "./forms";\n\nexport const form = new LoginForm();\n',
    "go.mod": "module example.com/shop\n\ngo 1.21\n",
    "server/serve.go": 'package server\n\nimport "example.com/shop/store"\n\nfunc Serve() string {\n\treturn store.Name()\n}\n',
    "store/store.go": 'package store\n\nfunc Name() string {\n\treturn "shop"\n}\n',
    "store/store_test.go": 'package store\n\nimport "testing"\n\nfunc TestName(t *testing.T) {}\n',
}
# (message, files appended to); models + pricing change together in the initial commit and twice more
HISTORY = [
    ("Cart totals in cents", ["src/shop/models.py", "src/shop/pricing.py"]),
    ("Round prices", ["src/shop/models.py", "src/shop/pricing.py"]),
    ("Money rounding helper", ["src/shop/util.py"]),
]


def _git(repo: Path, *args: str, day: int = 0) -> None:
    date = f"{T0 + day * DAY} +0000"
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Dev",
        "GIT_AUTHOR_EMAIL": "dev@example.com",
        "GIT_COMMITTER_NAME": "Dev",
        "GIT_COMMITTER_EMAIL": "dev@example.com",
        "GIT_AUTHOR_DATE": date,
        "GIT_COMMITTER_DATE": date,
    }
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def make_repo(root: Path, git: bool = True) -> Path:
    """Write the fixture files; with git, commit them and then HISTORY (one commit per day)."""
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00binary")
    if git:
        _git(root, "init", "-q")
        _git(root, "add", "-A")
        _git(root, "commit", "-q", "-m", "Initial import")
        for day, (message, paths) in enumerate(HISTORY, start=1):
            for rel in paths:
                with open(root / rel, "a") as handle:
                    handle.write("\n")
            _git(root, "commit", "-q", "-am", message, day=day)
    return root


@pytest.fixture(scope="module")
def indexed(tmp_path_factory) -> tuple[dict[str, pd.DataFrame], dict]:
    repo = make_repo(tmp_path_factory.mktemp("repo"))
    return index_frames(repo, count_tokens=count_tokens)


def file_ids(tables) -> dict[str, int]:
    return dict(zip(tables["files"]["path"], tables["files"]["file_id"]))


def edge_paths(tables, kind: str = "import") -> set[tuple[str, str]]:
    path = dict(zip(tables["files"]["file_id"], tables["files"]["path"]))
    edges = tables["edges"][tables["edges"]["kind"] == kind]
    return {(path[s], path[d]) for s, d in zip(edges["src_file_id"], edges["dst_file_id"])}


def symbol_edge_names(tables) -> set[tuple[str, str, str]]:
    name = dict(zip(tables["symbols"]["symbol_id"], tables["symbols"]["qualified_name"]))
    edges = tables["symbol_edges"]
    return {(name[s], name[d], k) for s, d, k in zip(edges["src_symbol_id"], edges["dst_symbol_id"], edges["kind"])}


def symbol_row(tables, qualified_name: str) -> pd.Series:
    symbols = tables["symbols"]
    return symbols[symbols["qualified_name"] == qualified_name].iloc[0]


def test_every_table_has_the_schema_columns_and_arrow_types(indexed):
    tables, _ = indexed
    assert set(tables) == set(TABLES)
    for name, frame in tables.items():
        assert list(frame.columns) == list(TABLES[name]), name
        pa.Table.from_pandas(frame, schema=arrow_schema(name), preserve_index=False)  # raises on a type mismatch


def test_ignored_binary_and_generated_files_are_left_out(indexed):
    tables, stats = indexed
    paths = set(tables["files"]["path"])
    assert {"ignored.py", "build/out.py", "logo.png", "package-lock.json", "go.mod"}.isdisjoint(paths)
    assert stats["skipped"]["binary"] == ["logo.png"]
    assert stats["skipped"]["generated"] == ["package-lock.json"]
    assert stats["n_ignored"] == 2  # ignored.py and the build/ directory


def test_files_have_language_test_flag_module_and_domain(indexed):
    files = indexed[0]["files"].set_index("path")
    assert files.loc["src/shop/models.py", "language"] == "python"
    assert files.loc["web/forms/index.ts", "language"] == "typescript"
    assert files.loc["store/store.go", "language"] == "go"
    assert set(files.index[files["is_test"]]) == {"tests/test_pricing.py", "store/store_test.go"}
    assert files.loc["src/shop/models.py", "module"] == "shop.models"
    assert files.loc["src/shop/__init__.py", "module"] == "shop"
    assert files.loc["src/shop/models.py", "domain"] == "shop"
    assert files.loc["web/forms/index.ts", "domain"] == "forms"
    assert files.loc["src/shop/util.py", "n_lines"] == 3  # 2 lines + the newline appended by HISTORY


def test_parse_errors_are_recorded_and_indexing_goes_on(indexed):
    tables, stats = indexed
    files = tables["files"].set_index("path")
    assert "SyntaxError" in files.loc["src/shop/broken.py", "parse_error"]
    assert files.loc["src/shop/models.py", "parse_error"] is None
    errors = [p for p, _ in stats["parse_errors"] if HAS_TREESITTER or p.endswith(".py")]
    assert errors == ["src/shop/broken.py"]


def test_symbols_have_kinds_lines_parents_and_token_counts(indexed):
    tables, _ = indexed
    cart, total = symbol_row(tables, "Cart"), symbol_row(tables, "Cart.total")
    assert (cart["kind"], cart["start_line"], cart["end_line"]) == ("class", 9, 15)
    assert (total["kind"], total["start_line"], total["end_line"], total["parent_id"]) == (
        "method",
        10,
        12,
        cart["symbol_id"],
    )
    body = "".join(FILES["src/shop/models.py"].splitlines(keepends=True)[9:12])
    assert total["body_tokens"] == count_tokens(body)
    files = tables["files"].set_index("path")
    assert files.loc["src/shop/util.py", "tokens"] == count_tokens(FILES["src/shop/util.py"] + "\n")


def test_rationale_comment_is_attached_to_its_method(indexed):
    tables, _ = indexed
    comments = tables["comments"]
    row = comments[comments["text"].str.contains("cents")].iloc[0]
    assert row["is_rationale"]
    assert row["symbol_id"] == symbol_row(tables, "Cart.total")["symbol_id"]


def test_python_import_edges_resolve_absolute_relative_and_submodule_imports(indexed):
    python_edges = {e for e in edge_paths(indexed[0]) if e[0].endswith(".py")}
    assert python_edges == {
        ("src/shop/pricing.py", "src/shop/models.py"),
        ("src/shop/pricing.py", "src/shop/util.py"),
        ("tests/test_pricing.py", "src/shop/pricing.py"),
    }


@needs_treesitter
def test_typescript_and_go_import_edges(indexed):
    other = {e for e in edge_paths(indexed[0]) if not e[0].endswith(".py")}
    assert other == {
        ("web/login.ts", "web/api.ts"),
        ("web/forms/index.ts", "web/login.ts"),
        ("web/app.ts", "web/forms/index.ts"),
        ("server/serve.go", "store/store.go"),
    }


def test_symbol_edges_resolve_calls_bases_and_annotations(indexed):
    found = symbol_edge_names(indexed[0])
    assert ("Cart", "Base", "base") in found
    assert ("Cart.total", "Cart.subtotal", "call") in found  # self.subtotal()
    assert ("price", "round_money", "call") in found  # util.round_money via `from . import util`
    assert ("price", "Cart", "annotation") in found  # `from shop.models import Cart`
    assert not any(src == dst for src, dst, _ in found)


def test_symbol_edges_resolved_a_few_files_at_a_time_are_the_same(indexed, tmp_path, monkeypatch):
    """References resolve one by one: resolving them in runs of files (bounded memory on large trees) changes nothing."""
    monkeypatch.setattr(edges_module, "REFERENCE_RUN", 2)
    runs = edges_module._reference_runs(indexed[0]["references"], pd.Index(indexed[0]["files"]["file_id"]))
    assert len(runs) > 2 and sum(len(r) for r in runs) == indexed[0]["references"]["file_id"].nunique()
    tables, _ = index_frames(make_repo(tmp_path), count_tokens=count_tokens)
    assert tables["symbol_edges"].equals(indexed[0]["symbol_edges"])


def test_concept_terms_count_each_files_symbol_names_docstrings_and_comments(indexed):
    """The parse workers count concept terms per file: the counts of its symbols' qualified names and docstrings and
    of its comments, as the KB's own symbol and comment rows give them."""
    tables = indexed[0]
    texts: dict[int, list[str]] = {}
    for file_id, name, doc in zip(
        tables["symbols"]["file_id"], tables["symbols"]["qualified_name"], tables["symbols"]["docstring"]
    ):
        texts.setdefault(int(file_id), []).append(f"{name} {doc if isinstance(doc, str) else ''}")
    for file_id, text in zip(tables["comments"]["file_id"], tables["comments"]["text"]):
        texts.setdefault(int(file_id), []).append(text)
    expected = sorted(
        (f, term, tf) for f, parts in texts.items() for term, tf in Counter(terms("\n".join(parts))).items()
    )
    got = tables["concept_terms"]
    assert len(expected) > 20
    assert sorted(zip(got["file_id"].astype(int), got["term"], got["tf"].astype(int))) == expected


def test_history_gives_commits_recency_churn_and_cochange(indexed):
    tables, stats = indexed
    assert stats["history_available"] and list(tables["commits"]["message"]) == [
        "Money rounding helper",
        "Round prices",
        "Cart totals in cents",
        "Initial import",
    ]
    files = tables["files"].set_index("path")
    assert files.loc["src/shop/util.py", "last_commit_time"] == T0 + 3 * DAY
    assert files.loc["src/shop/models.py", "last_commit_time"] == T0 + 2 * DAY
    assert files.loc["src/shop/models.py", "commit_count"] == 3
    ids = file_ids(tables)
    cochange = tables["cochange"].set_index(["file_a", "file_b"])["count"]
    models, pricing, util = ids["src/shop/models.py"], ids["src/shop/pricing.py"], ids["src/shop/util.py"]
    assert cochange[(min(models, pricing), max(models, pricing))] == 3
    assert cochange[(min(models, util), max(models, util))] == 1
    assert (tables["cochange"]["file_a"] < tables["cochange"]["file_b"]).all()


def test_sweeping_commits_are_left_out_of_cochange(tmp_path):
    tables, _ = index_frames(make_repo(tmp_path), count_tokens=count_tokens, max_commit_files=2)
    ids = file_ids(tables)
    pair = tuple(sorted((ids["src/shop/models.py"], ids["src/shop/pricing.py"])))
    cochange = tables["cochange"].set_index(["file_a", "file_b"])["count"]
    assert cochange[pair] == 2  # the initial import touched every file and no longer counts


def test_concepts_and_terms_describe_each_file(indexed):
    tables, _ = indexed
    files = tables["files"].set_index("path")
    concepts = files.loc["src/shop/models.py", "concepts"]
    assert 0 < len(concepts) <= 10 and "cart" in concepts
    ids = file_ids(tables)
    file_terms = tables["file_terms"]
    util_terms = set(file_terms.loc[file_terms["file_id"] == ids["src/shop/util.py"], "term"])
    assert {"round_money", "round", "money", "util"} <= util_terms
    symbol_terms = tables["symbol_terms"]
    total_terms = set(
        symbol_terms.loc[symbol_terms["symbol_id"] == symbol_row(tables, "Cart.total")["symbol_id"], "term"]
    )
    assert {"cent", "subtot"} & total_terms and "price" in total_terms  # body + attached comment


def test_code_term_counts_match_the_shared_tokenizer():
    for text in FILES.values():
        assert list(code_term_counts(text).items()) == list(Counter(terms(text)).items())  # counts and order


def _through_parquet_types(tables: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """The tables as a KB load returns them (arrow round trip: lists become arrays, ints nullable-aware)."""
    return {
        n: pandas_readable(pa.Table.from_pandas(f, schema=arrow_schema(n), preserve_index=False)).to_pandas()
        for n, f in tables.items()
    }


def test_incremental_run_parses_only_the_changed_file(tmp_path):
    repo = make_repo(tmp_path)
    first, _ = index_frames(repo, count_tokens=count_tokens)
    (repo / "src/shop/util.py").write_text(
        "def round_money(value):\n    return round(value, 2)\n\n\ndef to_cents(value):\n    return value * 100\n"
    )
    second, stats = index_frames(repo, previous_kb=_through_parquet_types(first), count_tokens=count_tokens)
    assert stats["n_parsed"] == 1 and stats["n_reused"] == len(first["files"]) - 1
    assert file_ids(second) == file_ids(first)
    assert "to_cents" in set(second["symbols"]["name"])
    assert set(first["symbols"]["qualified_name"]) < set(second["symbols"]["qualified_name"])
    assert symbol_edge_names(second) == symbol_edge_names(first)
    assert edge_paths(second) == edge_paths(first)
    ids = second["symbols"]["symbol_id"].to_numpy()
    assert (ids[1:] > ids[:-1]).all()  # unique, in (file, position) order (per-file blocks: holes allowed)
    kept = second["symbols"]["file_id"] != second["files"].set_index("path").loc["src/shop/util.py", "file_id"]
    assert (second["symbols"]["symbol_id"][kept].tolist()) == first["symbols"].set_index("file_id").loc[
        second["symbols"]["file_id"][kept].unique(), "symbol_id"
    ].tolist()  # the other files' symbols keep their ids


def test_incremental_run_drops_deleted_files_everywhere(tmp_path):
    repo = make_repo(tmp_path)
    first, _ = index_frames(repo, count_tokens=count_tokens)
    (repo / "src/shop/pricing.py").unlink()
    second, stats = index_frames(repo, previous_kb=_through_parquet_types(first), count_tokens=count_tokens)
    assert stats["n_parsed"] == 0
    assert "src/shop/pricing.py" not in set(second["files"]["path"])
    assert "price" not in set(second["symbols"]["name"])
    ids = set(second["files"]["file_id"])  # ids are renumbered densely (as a fresh index numbers them): none dangles
    assert set(second["edges"]["src_file_id"]) | set(second["edges"]["dst_file_id"]) <= ids
    assert set(second["file_terms"]["file_id"]) <= ids and set(second["imports"]["file_id"]) <= ids
    assert ("Cart.total", "Cart.subtotal", "call") in symbol_edge_names(second)


def test_directory_without_git_indexes_without_history(tmp_path):
    tables, stats = index_frames(make_repo(tmp_path, git=False), count_tokens=count_tokens)
    assert git_log(tmp_path, 10) is None
    assert stats["history_available"] is False and stats["head"] is None
    assert tables["commits"].empty and tables["cochange"].empty
    assert list(tables["commits"].columns) == list(TABLES["commits"])
    assert tables["files"]["last_commit_time"].isna().all() and (tables["files"]["commit_count"] == 0).all()
    assert "src/shop/models.py" in set(tables["files"]["path"])


def test_scan_honours_nested_gitignore_negation_and_size_limit(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / ".gitignore").write_text("*.log\n")
    (tmp_path / "pkg" / ".gitignore").write_text("!keep.log\n")
    (tmp_path / "pkg" / "keep.log").write_text("kept\n")
    (tmp_path / "pkg" / "drop.log").write_text("dropped\n")
    (tmp_path / "pkg" / "big.py").write_text("x = 1\n" * 100)
    (tmp_path / "node_modules").mkdir()
    (tmp_path / "node_modules" / "dep.js").write_text("module.exports = 1;\n")
    (tmp_path / "link.py").symlink_to(tmp_path / "pkg" / "big.py")
    scan = scan_sources(tmp_path, max_file_bytes=100)
    assert list(scan.frame["path"]) == [".gitignore", "pkg/.gitignore", "pkg/keep.log"]
    assert scan.oversized == ["pkg/big.py"]


def _resolved(files: list[tuple[str, str, str]], imports: list[tuple[str, str, list[str]]]) -> set[tuple[str, str]]:
    """Edges (src path, dst path) that the resolver finds for hand-written files and import rows."""
    frame = pd.DataFrame(files, columns=["path", "language", "module"]).assign(
        file_id=lambda f: range(len(f)), package=lambda f: f["path"].str.rpartition("/")[0], text=""
    )
    ids = dict(zip(frame["path"], frame["file_id"]))
    kb_imports = pd.DataFrame(
        [(ids[src], target, names, 0, 1) for src, target, names in imports],
        columns=["file_id", "target", "names", "level", "line"],
    )
    bindings = edges_module.import_bindings(frame, kb_imports, {})
    path = dict(zip(frame["file_id"], frame["path"]))
    return {(path[s], path[d]) for s, d in zip(bindings["file_id"], bindings["dst_file_id"])}


def test_java_imports_resolve_classes_and_wildcards():
    files = [
        ("src/main/java/com/acme/App.java", "java", "com.acme.App"),
        ("src/main/java/com/acme/util/Strings.java", "java", "com.acme.util.Strings"),
        ("src/main/java/com/acme/util/Numbers.java", "java", "com.acme.util.Numbers"),
    ]
    app = files[0][0]
    assert _resolved(files, [(app, "com.acme.util.Strings", [])]) == {(app, files[1][0])}
    assert _resolved(files, [(app, "com.acme.util.*", [])]) == {(app, files[1][0]), (app, files[2][0])}
    assert _resolved(files, [(app, "java.util.List", [])]) == set()


def test_rust_mod_and_crate_paths_resolve_to_files():
    files = [
        ("src/lib.rs", "rust", "src/lib"),
        ("src/net/mod.rs", "rust", "src/net/mod"),
        ("src/net/tcp.rs", "rust", "src/net/tcp"),
    ]
    assert _resolved(files, [("src/lib.rs", "net", [])]) == {("src/lib.rs", "src/net/mod.rs")}
    assert _resolved(files, [("src/lib.rs", "crate::net::tcp::Stream", [])]) == {("src/lib.rs", "src/net/tcp.rs")}
    assert _resolved(files, [("src/net/mod.rs", "tcp", [])]) == {("src/net/mod.rs", "src/net/tcp.rs")}


def test_smoke_index_the_installed_pandas_package():
    root = Path(pd.__file__).parent
    started = time.perf_counter()
    tables, stats = index_frames(root, history=0, count_tokens=count_tokens)
    print(
        f"\nindexed pandas: {stats['n_files']} files, {stats['n_symbols']} symbols, {stats['n_edges']} edges, "
        f"{stats['n_symbol_edges']} symbol edges in {time.perf_counter() - started:.1f}s"
    )
    assert stats["n_files"] > 500 and stats["n_symbols"] > 10_000


def terms_of(tables, qualified_name: str) -> set[str]:
    symbol_terms = tables["symbol_terms"]
    return set(symbol_terms.loc[symbol_terms["symbol_id"] == symbol_row(tables, qualified_name)["symbol_id"], "term"])


def test_class_terms_are_its_own_lines_and_member_names_not_member_bodies(indexed):
    tables, _ = indexed
    cart = terms_of(tables, "Cart")
    assert {"cart", "base", "total", "subtot"} <= cart  # header + member names
    assert not {"cent", "price", "convert"} & cart  # only inside Cart.total's body and comment
    assert {"cent", "price", "convert"} <= terms_of(tables, "Cart.total")


def test_line_token_counts_add_up_to_file_and_body_tokens(indexed):
    tables, _ = indexed
    text = FILES["src/shop/models.py"] + "\n\n"  # HISTORY appended two newlines
    per_line = count_line_tokens(text)
    assert len(per_line) == text.count("\n") and per_line.sum() == count_tokens(text)
    files = tables["files"].set_index("path")
    assert files.loc["src/shop/models.py", "tokens"] == per_line.sum()
    cart = symbol_row(tables, "Cart")
    assert cart["body_tokens"] == per_line[cart["start_line"] - 1 : cart["end_line"]].sum()


def test_process_pool_workers_produce_the_same_tables(tmp_path, indexed):
    tables, stats = index_frames(make_repo(tmp_path), count_tokens=count_tokens, workers=2)
    assert stats["workers"] == 2
    for name, frame in indexed[0].items():
        if name not in ("commits", "commit_files", "commit_terms"):  # commit hashes differ between fixture repos
            pd.testing.assert_frame_equal(frame, tables[name], obj=name)


ALIASED = {
    "pkg/__init__.py": "",
    "pkg/util.py": "def helper():\n    return 1\n\n\ndef other():\n    return 2\n",
    "pkg/module_alias.py": "import pkg.util as u\nimport numpy as np\n\n\ndef via_module():\n    return u.helper() + np.zeros(1)\n",
    "pkg/name_alias.py": "from pkg.util import other as renamed\n\n\ndef via_name():\n    return renamed()\n",
}


def test_python_import_aliases_resolve_to_file_and_symbol_edges(tmp_path):
    for rel, text in ALIASED.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    tables, _ = index_frames(tmp_path, count_tokens=count_tokens, history=0)
    imports = tables["imports"]
    assert [list(n) for n in imports["names"]] == [["pkg.util as u"], ["numpy as np"], ["other as renamed"]]
    assert {("pkg/module_alias.py", "pkg/util.py"), ("pkg/name_alias.py", "pkg/util.py")} <= edge_paths(tables)
    assert {("via_module", "helper", "call"), ("via_name", "other", "call")} <= symbol_edge_names(tables)


def test_progress_is_reported_per_parsed_batch(tmp_path):
    for n in range(2 * parsing.BATCH_FILES + 10):
        (tmp_path / f"m{n}.py").write_text(f"def f{n}():\n    return {n}\n")
    calls = []
    index_frames(
        tmp_path, count_tokens=count_tokens, history=0, workers=1, on_progress=lambda d, t: calls.append((d, t))
    )
    total = 2 * parsing.BATCH_FILES + 10
    assert calls[0] == (0, total) and calls[-1] == (total, total)
    assert [d for d, _ in calls] == sorted(d for d, _ in calls) and len(calls) == 4  # start + one per batch of 300


def _edit_and_reindex(
    repo: Path, first: dict[str, pd.DataFrame]
) -> tuple[dict[str, pd.DataFrame], dict[str, pd.DataFrame]]:
    """(incremental tables after editing util.py and adding a caller, tables of a full index of the same tree)."""
    (repo / "src/shop/util.py").write_text(
        "def round_money(value):\n    return round(value, 2)\n\n\ndef to_cents(value):\n    return value * 100\n"
    )
    (repo / "src/shop/refund.py").write_text(
        "from shop.util import to_cents as cents\n\n\ndef refund(value):\n    return cents(value)\n"
    )
    incremental, _ = index_frames(repo, previous_kb=_through_parquet_types(first), count_tokens=count_tokens)
    full, _ = index_frames(repo, count_tokens=count_tokens)
    return incremental, full


def _path_terms(tables) -> set[tuple[str, str, int]]:
    path = tables["files"].set_index("file_id")["path"]
    terms_ = tables["file_terms"]
    return set(zip(path.reindex(terms_["file_id"]), terms_["term"], terms_["tf"]))


def test_incremental_run_matches_a_full_index_of_the_same_tree(tmp_path):
    repo = make_repo(tmp_path)
    first, _ = index_frames(repo, count_tokens=count_tokens)
    incremental, full = _edit_and_reindex(repo, first)
    assert symbol_edge_names(incremental) == symbol_edge_names(full)
    assert ("refund", "to_cents", "call") in symbol_edge_names(incremental)
    assert edge_paths(incremental) == edge_paths(full)
    assert len(incremental["symbol_terms"]) == len(full["symbol_terms"])
    assert _path_terms(incremental) == _path_terms(full)
    concepts = lambda t: dict(zip(t["files"]["path"], map(list, t["files"]["concepts"])))  # noqa: E731
    assert concepts(incremental)["src/shop/refund.py"] == concepts(full)["src/shop/refund.py"]
    assert concepts(incremental) == concepts(full)  # unchanged files too: their idf moved with the new file
    contents = incremental["contents"].set_index("file_id")["text"]
    assert contents[file_ids(incremental)["src/shop/refund.py"]].startswith("from shop.util import to_cents")
    assert list(incremental["contents"]["file_id"]) == sorted(incremental["contents"]["file_id"])


def test_discovery_names_the_language_of_every_scanned_path():
    from cra.dataflows.index import discovery

    languages = {
        "a/b.py": "python",
        "Dockerfile": "dockerfile",
        "x/Dockerfile.dev": "dockerfile",
        "README": "text",
        ".gitignore": "text",
        "lib/x.d.ts": "typescript",
        "a/.env": None,
        "app.env": "dotenv",
        "m.TSX": "tsx",
        "noext": None,
        "a.b/c": None,
        "win\\dir\\main.go": "go",
    }
    source_files = pd.DataFrame({"path": list(languages), "data": [b"x = 1\n"] * len(languages)}).assign(size=6)
    previous = discovery.previous_files(None)
    decoded = discovery.decoded_files(source_files, previous, discovery.previous_content_ids(None))
    assert {
        p: lang if isinstance(lang, str) else None for p, lang in zip(decoded["path"], decoded["language"])
    } == languages


def test_a_fresh_index_holds_its_terms_as_codes_over_one_vocabulary(indexed):
    """Term tables come out of the index dictionary-encoded (the workers' codes re-coded over one dictionary), the
    contents as a view of the file written before the parse; their values are the terms the files hold."""
    tables, _ = indexed
    for name in ("file_terms", "symbol_terms", "concept_terms"):
        terms = tables[name]["term"]
        assert isinstance(terms.dtype, pd.CategoricalDtype), name
        assert terms.notna().all() and terms.cat.categories.is_unique, name
    shop = file_ids(tables)["src/shop/models.py"]
    words = set(tables["file_terms"].loc[tables["file_terms"]["file_id"] == shop, "term"].astype(str))
    text = tables["contents"].set_index("file_id")["text"][shop]
    assert "cart" in words and "class Cart" in text


def test_each_kind_of_parsed_rows_is_taken_out_of_the_batches_by_its_one_node():
    """The per-kind nodes stack their rows and empty the batches of them (each kind's one reader), so the batches do not
    hold a second copy of every kind until the last node ran; references made outside any symbol are left out."""
    files = pd.DataFrame(
        {
            "file_id": [0, 1],
            "path": ["a.py", "b.py"],
            "language": ["python", "python"],
            "text": [
                "import os\nos.getcwd()\n\ndef fetch_rows(limit):\n    return gather(limit)\n",
                "def gather(count):\n    return count\n",
            ],
        }
    )
    batches = [
        parsing._parse_batch(files.iloc[[i]], count_tokens, lambda text: [1] * len(text.split("\n"))) for i in (0, 1)
    ]
    terms = parsing.parsed_symbol_terms(batches)
    assert all(b.symbol_terms is None for b in batches) and batches[0].file_terms is not None
    assert set(terms["file_id"]) == {0, 1} and "gather" in set(terms["term"].astype(str))
    references = parsing.parsed_references(batches)
    assert list(references["name"]) == ["gather"] and all(
        b.references is None for b in batches
    )  # os.getcwd(): module level


def test_in_set_answers_as_isin_whatever_holds_the_strings():
    """`frames.in_set` looks Arrow-backed strings up through Arrow (pandas' isin makes a Python scalar per candidate):
    the same answer as isin for Arrow, NA and object strings, nulls on either side, and sets, lists or Series."""
    import numpy as np

    from cra.dataflows.index.frames import in_set

    for dtype in ("str", "string[pyarrow]", object):
        values = pd.Series(["a.py", "b.py", None, "c.py"], dtype=dtype)
        for among in (
            {"a.py", "c.py"},
            ["c.py", "x"],
            pd.Series(["c.py", None], dtype=object),
            pd.Series(["b.py"], dtype="str"),
            set(),
        ):
            assert np.array_equal(in_set(values, among), values.isin(among).to_numpy(dtype=bool)), (dtype, among)


def test_id_lookups_give_what_pandas_gives():
    """`ids_in` (a table over dense ids) and `doc_count` (runs of an ordered column) equal isin and nunique, also for
    the ids they hand back to pandas: unordered, sparse, negative, nullable, none."""
    from cra.dataflows.index.frames import doc_count, ids_in

    rng = np.random.default_rng(7)
    dense = pd.Series(np.sort(rng.integers(0, 500, 5000)).astype(np.int32))
    cases = [
        (dense, rng.integers(0, 600, 40)),
        (dense.sample(frac=1, random_state=1).reset_index(drop=True), [3, 499, 10_000]),
        (pd.Series([1, 10**9, 5]), [5, 10**9]),
        (pd.Series([-1, 2, 3]), [-1, 3]),
        (pd.Series([1, None, 3], dtype="Int64"), [3]),
        (dense, []),
        (pd.Series([], dtype="int64"), [1]),
    ]
    for values, ids in cases:
        assert (ids_in(values, np.asarray(ids, dtype=np.int64)) == values.isin(ids).to_numpy(dtype=bool)).all()
        assert doc_count(values) == values.nunique()


def test_file_edges_are_unique_pairs_without_self_edges_and_a_test_edge_only_where_no_import_says_it():
    bindings = pd.DataFrame(
        {
            "file_id": [0, 0, 0, 2, 2, 5, 7],
            "dst_file_id": [3, 1, 3, 2, 0, 1, 1],  # (0, 3) twice, (2, 2) a self-import
            "local": ["a", "b", "c", "d", "e", "f", "g"],
            "member": [None] * 7,
        }
    )
    tests = pd.DataFrame({"src_file_id": [5, 6], "dst_file_id": [1, 1]}, dtype="int64")  # 5 -> 1 is also an import
    edges = edges_module.kb_edges(bindings, tests)
    assert list(edges.itertuples(index=False, name=None)) == [
        (0, 1, "import"),
        (0, 3, "import"),
        (2, 0, "import"),
        (5, 1, "import"),
        (6, 1, "tests"),
        (7, 1, "import"),
    ]
    assert [str(t) for t in edges.dtypes.iloc[:2]] == ["int32", "int32"]
    assert edges_module.kb_edges(bindings.iloc[:0], tests.iloc[:0]).empty
    only_tests = edges_module.kb_edges(bindings.iloc[:0], tests)
    assert list(only_tests.itertuples(index=False, name=None)) == [(5, 1, "tests"), (6, 1, "tests")]


@pytest.mark.parametrize("n_kinds", [3, 6])
def test_symbol_edges_are_sorted_and_unique_as_pandas_would_make_them(n_kinds):
    """One packed key per edge (up to 4 kinds) and the lexsort beyond give what drop_duplicates + sort_values give."""
    rng = np.random.default_rng(n_kinds)
    edges = pd.DataFrame(
        {
            "src_symbol_id": rng.integers(0, 40, 500),
            "dst_symbol_id": rng.integers(0, 40, 500),
            "kind": rng.choice([f"kind{k}" for k in range(n_kinds)], 500).astype(object),
        }
    )
    want = edges.drop_duplicates().sort_values(["src_symbol_id", "dst_symbol_id", "kind"], ignore_index=True)
    got = edges_module._sorted_unique_edges(edges)
    assert list(got.itertuples(index=False, name=None)) == list(want.itertuples(index=False, name=None))


def test_carried_bindings_take_the_resolved_ones_in_at_their_files_places():
    """As a stable sort by file_id of the two would: a file's rows keep their order; missing texts are None."""
    carried = pd.DataFrame(
        {
            "file_id": [4, 0, 0, 2],  # (unsorted, as a full run may leave them)
            "dst_file_id": [1, 5, 6, 0],
            "local": pd.array(["d", "a", "b", None], dtype="str"),
            "member": pd.array([None, "x", None, "y"], dtype="str"),
        }
    )
    resolved = pd.DataFrame(
        {"file_id": [3, 1, 3], "dst_file_id": [9, 8, 7], "local": ["e", "f", "g"], "member": [None] * 3}
    )
    got = edges_module._spliced_bindings(carried, resolved)
    want = pd.concat([carried.astype({"local": object, "member": object}), resolved], ignore_index=True)
    want = want.sort_values("file_id", kind="stable", ignore_index=True)
    assert list(got.itertuples(index=False, name=None)) == [
        tuple(None if pd.isna(v) else v for v in row) for row in want.itertuples(index=False, name=None)
    ]
    assert got["local"].dtype == object and got.loc[got["file_id"] == 2, "local"].item() is None
