"""Incremental re-indexing answers as a fresh index does: after every step of a seeded random sequence of edits,
additions, deletions and renames, `cra retrieve --format json` over the incrementally kept KB prints what it prints
over a KB indexed from scratch, and the two KBs hold the same tables."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cra.dataflows import lexical
from cra.dataflows.index import discovery, frames
from cra.dataflows.index.frames import MIN_SYMBOL_BLOCK
from cra.dataflows.lexical import ARRAYS, Bm25Index
from cra.drivers.cli.main import main
from cra.drivers.index.indexer import index_repository
from cra.drivers.kb.mapped import mapped_table, table_pieces, version_table
from cra.drivers.kb.store import live_version, read_tables
from tests.fixture_repo import make_repo
from tests.kb_compare import compare_kbs

RUN_STATS = {"n_parsed", "n_reused", "workers", "notes", "carried"}  # what a run did, not what its KB holds
TASKS = (
    "validate_ldap rejects an empty username: LoginRequest needs a check",
    "invoice ledger totals round the payment the wrong way",
    "add a retry limit to the session token cache",
)
BUILD = Bm25Index.from_terms  # (the build itself, before a test counts its calls)
WORDS = "invoice ledger payment session token cache retry limit login request account report".split()


def _module(rng: random.Random, others: list[str]) -> str:
    """A Python module of a few functions and a class, named from WORDS, importing one of the other modules."""
    lines = []
    if others:
        target = rng.choice(others).removesuffix(".py").replace("/", ".")
        lines += [f"import {target}", ""]
    for k in range(rng.randint(1, 4)):
        a, b = rng.sample(WORDS, 2)
        lines += [
            f"def {a}_{b}_{k}(value):",
            f'    """{a} {b} of the {rng.choice(WORDS)}."""',
            f"    return value + {k}",
            "",
        ]
    a, b = rng.sample(WORDS, 2)
    lines += [f"class {a.title()}{b.title()}:", f"    def {b}(self, {a}):", f"        return {a}", ""]
    return "\n".join(lines)


def _edit(repo: Path, rng: random.Random) -> str:
    """One random change to the tree; what it did (for the assertion message)."""
    modules = sorted(p.relative_to(repo).as_posix() for p in (repo / "app").rglob("*.py") if p.name != "__init__.py")
    kinds = ["add", "edit", "append", "comment", "shift", "body", "delete", "rename"]
    kind = rng.choice(kinds if modules else ["add"])
    if kind == "add":
        name = f"app/{rng.choice(['billing', 'auth', 'extra'])}/{rng.choice(WORDS)}_{rng.randrange(100)}.py"
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(_module(rng, modules))
        return f"add {name}"
    path = repo / rng.choice(modules)
    if kind == "edit":  # the whole module rewritten: symbols come, go and move
        path.write_text(_module(rng, modules))
    elif kind == "append":  # a new function at the end
        a, b = rng.sample(WORDS, 2)
        path.write_text(path.read_text() + f"\n\ndef {a}_{b}_new(x):\n    return {a!r}\n")
    elif kind == "comment":  # text only: no symbol changes
        path.write_text(path.read_text() + f"\n# {rng.choice(WORDS)} {rng.choice(WORDS)}\n")
    elif kind == "shift":  # a line on top: every symbol moves, none changes (the edges are carried over)
        path.write_text(f"# {rng.choice(WORDS)}\n" + path.read_text())
    elif kind == "body":  # an expression changed: a symbol's terms change, its lines and references do not
        text = path.read_text()
        path.write_text(
            text.replace("return ", f"return {rng.randrange(9)} or ", 1) if "return " in text else text + "\n"
        )
    elif kind == "delete":
        path.unlink()
    else:
        target = path.with_name(f"{rng.choice(WORDS)}_{rng.randrange(100)}_moved.py")
        path.rename(target)
        return f"rename {path.relative_to(repo)} -> {target.relative_to(repo)}"
    return f"{kind} {path.relative_to(repo)}"


def _answers(repo: Path, kb: Path, capsys) -> list[dict]:
    """`cra retrieve --format json` of each task over kb, without the fields that name the KB or time the run."""
    out = []
    for task in TASKS:
        assert main(["retrieve", task, "--repo", str(repo), "--kb", str(kb), "--format", "json"]) == 0
        answer = json.loads(capsys.readouterr().out)
        answer.get("provenance", {}).pop("timings", None)
        out.append(json.loads(json.dumps(answer).replace(str(kb), "<kb>")))
    return out


@pytest.mark.parametrize("seed", [7, 58])
def test_a_random_sequence_of_edits_re_indexed_answers_as_a_fresh_index(tmp_path, capsys, seed):
    rng = random.Random(seed)
    repo = make_repo(tmp_path / "repo", git=False)
    kb = tmp_path / "kb"
    index_repository(repo, kb, history=0)
    for step in range(6):
        did = _edit(repo, rng)
        stats = index_repository(repo, kb, history=0)
        assert not stats.get("unchanged"), f"step {step} ({did}) was missed"
        fresh = tmp_path / f"fresh{step}"
        index_repository(repo, fresh, history=0)
        assert _answers(repo, kb, capsys) == _answers(repo, fresh, capsys), f"step {step}: {did}"
        compared, differences = compare_kbs(kb, fresh, ignore=RUN_STATS)
        assert "symbols.arrow" in compared and differences == [], f"step {step}: {did}"


def _terms(docs: dict[int, dict[str, int]]) -> pd.DataFrame:
    rows = [(d, t, tf) for d, terms in sorted(docs.items()) for t, tf in sorted(terms.items())]
    return pd.DataFrame(rows, columns=["doc", "term", "tf"]).astype({"doc": "int32", "tf": "int32"})


def _same_index(a: Bm25Index, b: Bm25Index) -> None:
    assert a.vocab.array.to_pylist() == b.vocab.array.to_pylist()
    for name in ARRAYS[1:]:
        x, y = np.asarray(getattr(a, name)), np.asarray(getattr(b, name))
        assert x.dtype == y.dtype and np.array_equal(x, y), name
    terms = a.vocab.array.to_pylist()  # and the weights a query computes from them, every term's
    assert all(np.array_equal(a.scores([t]).to_numpy(), b.scores([t]).to_numpy()) for t in terms)


@pytest.mark.parametrize("seed", range(40))
def test_a_patched_lexicon_is_bit_for_bit_the_one_built_from_the_new_rows(seed):
    """Docs dropped, changed, added in between and renumbered: the patch equals a fresh build, weights included."""
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(40)]
    docs = {i: {t: rng.randint(1, 5) for t in rng.sample(words, rng.randint(1, 8))} for i in range(rng.randint(1, 25))}
    before = Bm25Index.from_terms(_terms(docs), "doc")
    events = sorted([(k, "old") for k in docs] + [(k + 0.5, "new") for k in docs if rng.random() < 0.3])
    dropped = {k for k in docs if rng.random() < 0.2}
    changed = {k for k in docs if rng.random() < 0.2} - dropped
    after, new_id, added = {}, {}, set()
    for key, kind in events:
        if kind == "old" and key in dropped:
            continue
        new_id[key] = len(after)
        if kind == "new" or key in changed:
            added.add(len(after))  # new words too, of which the vocabulary knows nothing yet
            after[len(after)] = {t: rng.randint(1, 5) for t in rng.sample([*words, f"new{key}"], rng.randint(1, 8))}
        else:
            after[len(after)] = docs[key]
    ids = np.array([new_id[k] if k in new_id and k not in changed else -1 for k in sorted(docs)])
    rows = _terms({d: after[d] for d in added}).sample(frac=1, random_state=seed)  # in any order
    _same_index(before.patched(ids, rows, "doc"), Bm25Index.from_terms(_terms(after), "doc"))


@pytest.mark.parametrize("splice_events", [lexical.SPLICE_EVENTS, 0])  # runs copied one by one / vectorised passes
@pytest.mark.parametrize("change", ["edited", "added", "deleted", "renumbered"])
def test_a_lexicon_patched_for_a_few_docs_of_many_is_the_fresh_one(monkeypatch, change, splice_events):
    """A few docs of 400 changed in place (their postings copied around, the others' positions kept), or docs added
    or deleted in between (the kept postings' doc positions shift), or all ids renumbered: bit for bit a fresh build."""
    monkeypatch.setattr(lexical, "SPLICE_EVENTS", splice_events)
    rng = random.Random(f"{change}-{splice_events}")
    words = [f"w{i:03d}" for i in range(300)]
    doc = lambda: {t: rng.randint(1, 9) for t in rng.sample(words, rng.randint(1, 30))}  # noqa: E731
    docs = {i * 3: {**doc(), f"only{i * 3}": 1} for i in range(400)}  # (a word of its own: gone with it)
    before = Bm25Index.from_terms(_terms(docs), "doc")
    picked = sorted(rng.sample(sorted(docs), 5))
    after, ids, added = dict(docs), np.array(sorted(docs)), set()
    if change == "edited":  # new words too, of which the vocabulary knows nothing yet
        after.update({d: {**doc(), f"new{d}": 2} for d in picked})
        added = set(picked)
    elif change == "added":
        after.update({d + 1: {**doc(), f"new{d}": 1} for d in picked})
        added = {d + 1 for d in picked}
    elif change == "deleted":  # (each doc's last postings of some terms go: the terms leave the vocabulary)
        after = {d: terms for d, terms in docs.items() if d not in picked}
    else:
        after = {d + 1: terms for d, terms in docs.items()}
        ids = ids + 1
    new_ids = np.array([d if d in after and d not in added else -1 for d in ids])
    if change == "renumbered":
        new_ids = ids
    rows = _terms({d: after[d] for d in added}).sample(frac=1, random_state=1)
    _same_index(before.patched(new_ids, rows, "doc"), Bm25Index.from_terms(_terms(after), "doc"))


def test_a_reindex_after_an_edit_patches_the_lexicons_instead_of_building_them(tmp_path, monkeypatch):
    repo = make_repo(tmp_path / "repo", git=False)
    kb = tmp_path / "kb"
    index_repository(repo, kb, history=0)
    built = []
    monkeypatch.setattr(
        Bm25Index, "from_terms", classmethod(lambda cls, frame, doc, *a: built.append(doc) or BUILD(frame, doc, *a))
    )
    ldap = repo / "app/auth/ldap.py"
    ldap.write_text(ldap.read_text() + "\n\ndef invoice_ledger(total):\n    return round(total, 2)\n")
    index_repository(repo, kb, history=0)
    assert built == []  # file and symbol terms both changed, both patched
    fresh = tmp_path / "fresh"
    index_repository(repo, fresh, history=0)
    assert {"file_id", "symbol_id"} <= set(built)  # (the counting sees builds)
    compared, differences = compare_kbs(kb, fresh, ignore=RUN_STATS)
    assert "symbol_terms.bm25.arrow" in compared and differences == []


def test_a_lexicon_that_cannot_be_patched_is_built_and_the_index_run_goes_on(tmp_path, monkeypatch):
    repo = make_repo(tmp_path / "repo", git=False)
    kb = tmp_path / "kb"
    index_repository(repo, kb, history=0)

    def refused(self, *args, **kwargs):
        raise ValueError("kept docs must keep their order")

    monkeypatch.setattr(Bm25Index, "patched", refused)
    ldap = repo / "app/auth/ldap.py"
    ldap.write_text(ldap.read_text() + "\n\ndef invoice_ledger(total):\n    return round(total, 2)\n")
    index_repository(repo, kb, history=0)
    fresh = tmp_path / "fresh"
    index_repository(repo, fresh, history=0)
    compared, differences = compare_kbs(kb, fresh, ignore=RUN_STATS)
    assert "file_terms.bm25.arrow" in compared and differences == []


def _symbol_ids(kb: Path) -> dict[tuple, int]:
    """symbol_id of every symbol of a KB by (path, qualified name, kind, start line)."""
    tables = read_tables(kb, ["files", "symbols"])
    symbols = tables["symbols"].merge(tables["files"][["file_id", "path"]], on="file_id")
    keys = zip(symbols["path"], symbols["qualified_name"], symbols["kind"], symbols["start_line"])
    return dict(zip(keys, symbols["symbol_id"].tolist()))


def test_a_function_added_to_one_file_moves_no_other_files_symbol_ids(tmp_path):
    """Ids that do not shift (issue 58): a function appended to the first file in path order that has symbols leaves
    every other symbol's id as it was, so the tables keyed by later ids keep their rows; a fresh index agrees."""
    repo = make_repo(tmp_path / "repo", git=False)
    kb = tmp_path / "kb"
    index_repository(repo, kb, history=0)
    before = _symbol_ids(kb)
    inodes = {f.name: f.stat().st_ino for f in live_version(kb).iterdir()}
    target = min(path for path, *_ in before)
    ldap = repo / target
    ldap.write_text(ldap.read_text() + "\n\ndef invoice_ledger(total):\n    return total * 2\n")  # (no call)
    index_repository(repo, kb, history=0)
    after = _symbol_ids(kb)
    linked = {f.name for f in live_version(kb).iterdir() if inodes.get(f.name) == f.stat().st_ino}
    assert {"comments.arrow", "references.arrow", "symbol_edges.parquet"} <= linked  # keyed by symbol ids
    assert "symbols.arrow" not in linked
    # the symbol terms in pieces: the live segment linked, a new one with the edited file's symbols' rows only
    pieces = table_pieces(live_version(kb), "symbol_terms")
    assert pieces is not None
    segments = {name: (live_version(kb) / name).stat().st_ino for name, *_ in pieces}
    new_segments = [name for name, inode in segments.items() if inode not in inodes.values()]
    assert inodes["symbol_terms.arrow"] in segments.values() and len(new_segments) == 1
    target_ids = {i for key, i in _symbol_ids(kb).items() if key[0] == target}
    terms = version_table(live_version(kb), "symbol_terms").to_pandas()
    rows = mapped_table(live_version(kb) / new_segments[0]).num_rows
    assert rows == int(terms["symbol_id"].isin(target_ids).sum()) < len(terms) / 2
    assert len(after) == len(before) + 1 and [k for k in after if k not in before][0][0] == target
    others = {key: i for key, i in before.items() if key[0] != target}
    assert len(others) >= 5 and {key: after[key] for key in others} == others
    fresh = tmp_path / "fresh"
    index_repository(repo, fresh, history=0)
    compared, differences = compare_kbs(kb, fresh, ignore=RUN_STATS)
    assert "symbols.arrow" in compared and differences == []


def test_a_first_function_in_a_file_without_symbols_moves_no_other_files_symbol_ids(tmp_path):
    """Every indexed file holds a block of ids, one without symbols too: its first function (an empty
    `__init__.py` given a helper) leaves every other symbol's id as it was, so the symbol-keyed tables are written
    in pieces; a fresh index agrees."""
    repo = make_repo(tmp_path / "repo", git=False)
    init = repo / "app/auth/__init__.py"
    init.write_text("")
    kb = tmp_path / "kb"
    index_repository(repo, kb, history=0)
    before = _symbol_ids(kb)
    assert not [key for key in before if key[0] == "app/auth/__init__.py"]
    init.write_text("def ledger_key(name):\n    return name.lower()\n")
    index_repository(repo, kb, history=0)
    after = _symbol_ids(kb)
    assert [key for key in after if key not in before] == [("app/auth/__init__.py", "ledger_key", "function", 1)]
    assert {key: after[key] for key in before} == before
    for name in ("symbols", "symbol_terms"):
        assert table_pieces(live_version(kb), name) is not None, name
    fresh = tmp_path / "fresh"
    index_repository(repo, fresh, history=0)
    compared, differences = compare_kbs(kb, fresh, ignore=RUN_STATS)
    assert "symbols.arrow" in compared and differences == []


def test_a_function_with_calls_added_writes_the_files_references_and_symbols_as_new_pieces(tmp_path, capsys):
    """Issue 58: a function that calls others, added to one file, writes that file's references, symbols and symbol
    terms as one new segment each; the live segments are linked. The KB and its answers are a fresh index's."""
    repo = make_repo(tmp_path / "repo", git=False)
    kb = tmp_path / "kb"
    index_repository(repo, kb, history=0)
    target = min(path for path, *_ in _symbol_ids(kb))
    inodes = {f.name: f.stat().st_ino for f in live_version(kb).iterdir()}
    source = repo / target
    source.write_text(source.read_text() + "\n\ndef ledger_total(rows):\n    return sum(sorted(rows)) + len(rows)\n")
    index_repository(repo, kb, history=0)
    version = live_version(kb)
    files = read_tables(kb, ["files"])["files"]
    target_id = int(files.loc[files["path"] == target, "file_id"].iloc[0])
    symbols = version_table(version, "symbols").to_pandas()
    target_symbols = set(symbols.loc[symbols["file_id"] == target_id, "symbol_id"])
    expected = {
        "references": int((version_table(version, "references").to_pandas()["file_id"] == target_id).sum()),
        "symbols": len(target_symbols),
        "symbol_terms": int(version_table(version, "symbol_terms").to_pandas()["symbol_id"].isin(target_symbols).sum()),
    }
    for name, rows in expected.items():
        pieces = table_pieces(version, name)
        assert pieces is not None, name
        new = {segment for segment, *_ in pieces if (version / segment).stat().st_ino not in inodes.values()}
        assert len(new) == 1 and mapped_table(version / new.pop()).num_rows == rows > 0, name
    fresh = tmp_path / "fresh"
    index_repository(repo, fresh, history=0)
    assert _answers(repo, kb, capsys) == _answers(repo, fresh, capsys)
    compared, differences = compare_kbs(kb, fresh, ignore=RUN_STATS)
    assert {"references.arrow", "symbols.arrow", "symbol_terms.arrow"} <= set(compared) and differences == []


def test_a_file_outgrowing_its_block_of_ids_re_indexes_as_a_fresh_index(tmp_path, capsys, monkeypatch):
    """Functions appended to one file one at a time: once it holds more symbols than its block of ids (the windows'
    regions made exactly their blocks, without spare room), it takes a larger block and every later file's symbols
    move up; after each step the KB and its answers are a fresh index's."""
    monkeypatch.setattr(frames, "_region_sizes", lambda blocks: np.asarray(blocks, dtype=np.int64))
    repo = make_repo(tmp_path / "repo", git=False)
    kb = tmp_path / "kb"
    index_repository(repo, kb, history=0)
    target = min(path for path, *_ in _symbol_ids(kb))
    grown = repo / target
    moved = False
    for step in range(MIN_SYMBOL_BLOCK + 1):
        before = _symbol_ids(kb)
        grown.write_text(grown.read_text() + f"\n\ndef ledger_total_{step}(value):\n    return value + {step}\n")
        index_repository(repo, kb, history=0)
        after = _symbol_ids(kb)
        shifted = any(after[key] != i for key, i in before.items() if key[0] != target)
        moved = moved or shifted
        if shifted or step == MIN_SYMBOL_BLOCK:
            fresh = tmp_path / f"fresh{step}"
            index_repository(repo, fresh, history=0)
            assert _answers(repo, kb, capsys) == _answers(repo, fresh, capsys), f"step {step}"
            compared, differences = compare_kbs(kb, fresh, ignore=RUN_STATS)
            assert "symbols.arrow" in compared and differences == [], f"step {step}"
    assert moved  # (the file did outgrow its block)


def test_ids_with_holes_answer_as_dense_ones(tmp_path, capsys, monkeypatch):
    """Retrieval does not depend on how far apart file and symbol ids lie: a KB numbered densely (files one after
    another, blocks of exactly a file's symbols) answers every task as the KB of chunks and blocks does."""
    repo = make_repo(tmp_path / "repo", git=False)
    index_repository(repo, tmp_path / "blocks", history=0)
    monkeypatch.setattr(frames, "symbol_block_sizes", lambda counts: np.asarray(counts, dtype=np.int64))
    monkeypatch.setattr(frames, "_region_sizes", lambda blocks: np.asarray(blocks, dtype=np.int64))
    for module in (frames, discovery):
        monkeypatch.setattr(module, "path_block_ids", lambda paths: np.arange(len(paths), dtype=np.int64))
    index_repository(repo, tmp_path / "dense", history=0)
    dense, blocks = _symbol_ids(tmp_path / "dense"), _symbol_ids(tmp_path / "blocks")
    assert sorted(dense.values()) == list(range(len(dense))) and max(blocks.values()) >= len(blocks)
    dense_files, files = (read_tables(tmp_path / k, ["files"])["files"]["file_id"] for k in ("dense", "blocks"))
    assert dense_files.tolist() == list(range(len(dense_files))) and files.max() >= len(files)
    assert _answers(repo, tmp_path / "dense", capsys) != _answers(repo, tmp_path / "blocks", capsys)  # (ids printed)
    named = [_named(a, tmp_path / "dense") for a in _answers(repo, tmp_path / "dense", capsys)]
    assert named == [_named(a, tmp_path / "blocks") for a in _answers(repo, tmp_path / "blocks", capsys)]


def _named(value, kb: Path, names: dict | None = None):
    """An answer with every printed symbol_id and file_id replaced by what it names (path, qualified name, kind,
    start line; a path)."""
    if names is None:
        files = read_tables(kb, ["files"])["files"]
        names = {
            "symbol_id": {i: key for key, i in _symbol_ids(kb).items()},
            "file_id": dict(zip(files["file_id"].tolist(), files["path"].tolist())),
        }
    if isinstance(value, dict):
        return {k: names[k][v] if k in names and v is not None else _named(v, kb, names) for k, v in value.items()}
    if isinstance(value, list):
        return [_named(v, kb, names) for v in value]
    return value


def test_one_file_edits_write_the_file_keyed_tables_in_pieces_that_read_as_a_fresh_index(tmp_path, capsys, monkeypatch):
    """Issue 58: while every file keeps its id, an edit writes only the changed files' rows of the comments, file
    terms and concept terms (a new segment; the live segments linked); past MAX_PIECES a table is written whole
    again. After every step the KB's tables and answers are a fresh index's."""
    monkeypatch.setattr("cra.drivers.kb.store.MAX_PIECES", 6)
    repo = make_repo(tmp_path / "repo", git=False)
    kb = tmp_path / "kb"
    index_repository(repo, kb, history=0)
    modules = sorted(p for p in (repo / "app").rglob("*.py") if p.name != "__init__.py")
    seen_pieces, seen_whole_again = False, False
    for step in range(6):
        edited = modules[step % len(modules)]
        edited.write_text(edited.read_text() + f"\n# ledger note {step}: the payment rounds down\n")
        index_repository(repo, kb, history=0)
        version = live_version(kb)
        pieced = {p.name.split(".")[0] for p in version.glob("*.pieces.json")}
        seen_pieces = seen_pieces or {"comments", "file_terms"} <= pieced
        seen_whole_again = seen_whole_again or (seen_pieces and "file_terms" not in pieced)
        segments = list(version.glob("file_terms.seg-*.arrow"))
        assert len(segments) <= 6, f"step {step}: {len(segments)} segments"
        fresh = tmp_path / f"fresh{step}"
        index_repository(repo, fresh, history=0)
        assert _answers(repo, kb, capsys) == _answers(repo, fresh, capsys), f"step {step}"
        compared, differences = compare_kbs(kb, fresh, ignore=RUN_STATS)
        assert {"comments.arrow", "file_terms.arrow"} <= set(compared) and differences == [], f"step {step}"
    assert seen_pieces and seen_whole_again


ALL_CARRIED = {
    "symbols",
    "imports",
    "references",
    "symbol_terms",
    "import_bindings",
    "edges",
    "symbol_edges",
    "symbol_ids",
}


VIEWS = {"symbols", "imports", "references", "symbol_terms", "import_bindings", "edges", "symbol_edges"}
SPLICED = {"file_terms", "concept_terms", "symbol_terms"}  # (spliced from views whatever the edit)


@pytest.mark.parametrize(
    "edit, carried, views",
    [
        (lambda text: text + "\n# a comment\n", ALL_CARRIED, VIEWS),
        (
            lambda text: "# on top\n" + text,
            ALL_CARRIED - {"symbols", "imports"},  # (lines move, names do not)
            VIEWS - {"symbols", "imports"},
        ),
        (
            lambda text: text.replace('token="ldap"', 'token="ldap directory"'),
            ALL_CARRIED - {"symbols", "symbol_terms"},
            VIEWS - {"symbols", "symbol_terms"},
        ),
        (
            lambda text: text.replace('!= ""', '!= str("")'),
            ALL_CARRIED - {"symbols", "symbol_terms", "references", "symbol_edges"},
            {"import_bindings"},  # (the imports and edges are read by the symbol edges' nodes, which run)
        ),
        (
            lambda text: "import app.utils\n" + text,
            {"references", "symbol_terms", "symbol_ids"},  # (imports resolve again)
            {"symbol_terms"},
        ),
        (
            lambda text: text + "\ndef added():\n    return 1\n",
            {"imports", "import_bindings", "edges"},
            {"import_bindings"},
        ),
    ],
    ids=["comment", "line-on-top", "expression", "call", "import", "function"],
)
def test_an_edit_carries_over_the_tables_it_leaves_as_they_were_and_indexes_as_a_fresh_index(
    tmp_path, monkeypatch, edit, carried, views
):
    """What an edit leaves as it was is carried over, the tables that nothing built anew reads as views of the live
    version's files (Arrow-backed columns, never copied into pandas'), and the KB is the one a fresh index builds."""
    from cra.drivers.kb import store

    repo = make_repo(tmp_path / "repo", git=False)
    kb = tmp_path / "kb"
    index_repository(repo, kb, history=0)
    path = repo / "app/auth/ldap.py"
    path.write_text(edit(path.read_text()))
    written, write_kb = {}, store.write_kb

    def spied(kb_dir, tables, *args, **kwargs):
        written.update({name: frame.dtypes.tolist() for name, frame in tables.items()})
        return write_kb(kb_dir, tables, *args, **kwargs)

    monkeypatch.setattr(store, "write_kb", spied)
    stats = index_repository(repo, kb, history=0)
    assert set(stats["carried"]) == carried and stats["n_parsed"] == 1
    viewed = {
        name for name in written if name in VIEWS | SPLICED if all(isinstance(t, pd.ArrowDtype) for t in written[name])
    }
    assert viewed == views | SPLICED
    fresh = tmp_path / "fresh"
    index_repository(repo, fresh, history=0)
    compared, differences = compare_kbs(kb, fresh, ignore=RUN_STATS)
    assert "symbol_edges.parquet" in compared and differences == []


def test_an_edit_of_more_files_than_are_spliced_reads_the_term_views_whole_and_indexes_as_a_fresh_index(tmp_path):
    """Past SPLICE_MAX_FILES changed files, every other one, the file-keyed term tables are not spliced from the
    previous rows' views (too many runs) but masked and concatenated (`frames.numpy_ints` first): the KB is still the
    one a fresh index builds."""
    from cra.dataflows.index.file_rows import SPLICE_MAX_FILES

    repo = tmp_path / "repo"
    n = 2 * (SPLICE_MAX_FILES + 20)
    for i in range(n):
        path = repo / f"pkg{i % 7}" / f"mod{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f'"""Module {i}: ledger part {i}."""\n\n\ndef part_{i}(value):\n    return value + {i}\n')
    kb = tmp_path / "kb"
    index_repository(repo, kb, history=0)
    for i in range(0, n, 2):
        path = repo / f"pkg{i % 7}" / f"mod{i}.py"
        path.write_text(path.read_text() + f"# reviewed ledger entry {i * 7}\n")
    stats = index_repository(repo, kb, history=0, workers=1)
    assert stats["n_parsed"] == n // 2
    fresh = tmp_path / "fresh"
    index_repository(repo, fresh, history=0)
    compared, differences = compare_kbs(kb, fresh, ignore=RUN_STATS)
    assert "file_terms.arrow" in compared or any(name.startswith("file_terms") for name in compared)
    assert differences == []


def test_the_symbol_keys_of_a_run_that_keeps_every_symbol_id_are_those_the_dataflow_computes(tmp_path, monkeypatch):
    from hamilton.lifecycle import api as lifecycle

    from cra.dataflows.index import unchanged
    from cra.drivers.index.dag import index_frames
    from cra.drivers.index.indexer import READ_ORDER
    from cra.drivers.kb.store import PreviousTables

    class Kept(lifecycle.NodeExecutionHook):
        def run_before_node_execution(self, **kwargs) -> None:
            """Nothing to do before a node (the hook interface requires the method)."""

        def run_after_node_execution(self, *, node_name: str, result, **kwargs) -> None:
            kept[node_name] = result

    repo = make_repo(tmp_path / "repo", git=False)
    kb = tmp_path / "kb"
    index_repository(repo, kb, history=0)
    path = repo / "app/auth/ldap.py"
    path.write_text("# on top\n" + path.read_text())
    previous = dict(PreviousTables(kb, READ_ORDER).items())
    kept: dict = {}
    monkeypatch.setattr(unchanged, "carried_nodes", lambda *args: {})  # (computed, not carried)
    index_frames(repo, previous_kb=previous, history=0, adapters=(Kept(),))
    assert "symbol_ids" in kept["unchanged_tables"]
    expected = kept["symbol_keys"].reset_index(drop=True)
    pd.testing.assert_frame_equal(unchanged.kept_symbol_keys(previous["symbols"], kept["indexed_files"]), expected)


def test_a_class_added_in_csharp_resolves_the_imports_again_that_name_it(tmp_path):
    """C# `using` names namespaced classes: a class added to a file changes what another, unchanged, file's import
    binds, so no import binding is carried over (in Python the same edit carries them, see above)."""
    repo = tmp_path / "repo"
    (repo / "Models").mkdir(parents=True)
    user = repo / "Models" / "User.cs"
    user.write_text("namespace App.Models\n{\n    public class User { public string Name; }\n}\n")
    (repo / "Program.cs").write_text(
        "using App.Models.Admin;\n\nnamespace App\n{\n    public class Program { Admin admin; }\n}\n"
    )
    kb = tmp_path / "kb"
    index_repository(repo, kb, history=0)
    user.write_text(user.read_text().replace("}\n}", "}\n    public class Admin { }\n}"))
    stats = index_repository(repo, kb, history=0)
    assert not {"import_bindings", "edges", "symbol_edges"} & set(stats["carried"])
    fresh = tmp_path / "fresh"
    index_repository(repo, fresh, history=0)
    compared, differences = compare_kbs(kb, fresh, ignore=RUN_STATS)
    assert "edges.parquet" in compared and differences == []
    edges = read_tables(kb, ["edges"])["edges"]
    assert len(edges) == 1  # Program.cs -> Models/User.cs, through the class added


def test_cra_index_names_the_tables_an_edit_left_as_they_were(tmp_path, capsys):
    repo = make_repo(tmp_path / "repo", git=False)
    kb = tmp_path / "kb"
    assert main(["index", str(repo), "--kb", str(kb), "--history", "0"]) == 0
    assert "not rebuilt" not in capsys.readouterr().out  # (a first index builds everything)
    path = repo / "app/auth/ldap.py"
    path.write_text(path.read_text() + "\n# a comment\n")
    assert main(["index", str(repo), "--kb", str(kb), "--history", "0"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if "not rebuilt" in x)
    assert line.strip().startswith("not rebuilt, the edit left them as they were: ") and "symbol edges" in line
    assert main(["index", str(repo), "--kb", str(kb), "--history", "0"]) == 0  # nothing changed: nothing to name
    out = capsys.readouterr().out
    assert "nothing changed since the last index" in out and "not rebuilt" not in out
