"""Language conventions as data: test <-> source mapping, module resolution through manifests,
non-source paths, each on a small fixture tree indexed through `cra.drivers.index.indexer.index_frames`; the tables'
loader; and the case miner on a fixture git history."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from cra.drivers.common.conventions import load_conventions
from cra.drivers.common.errors import CraError
from cra.drivers.index.indexer import index_frames


def _tree(root: Path, files: dict[str, str]) -> Path:
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return root


def _indexed(root: Path):
    """(the index tables, files by path, the (src, dst, kind) file edges)."""
    tables, stats = index_frames(root, history=0, workers=1)
    files = tables["files"].set_index("file_id")
    edges = tables["edges"].assign(
        src=lambda e: e["src_file_id"].map(files["path"]), dst=lambda e: e["dst_file_id"].map(files["path"])
    )
    return tables, files.set_index("path"), set(zip(edges["src"], edges["dst"], edges["kind"]))


def _index(root: Path):
    return _indexed(root)[1:]


def test_go_test_maps_to_its_source_and_vendor_is_not_indexed(tmp_path):
    files, edges = _index(
        _tree(
            tmp_path,
            {
                "go.mod": "module example.com/m\n",
                "parse.go": "package m\n\nfunc Parse() int { return 1 }\n",
                "parse_test.go": 'package m\n\nimport "testing"\n\nfunc TestParse(t *testing.T) { Parse() }\n',
                "vendor/x/x.go": "package x\n\nfunc X() {}\n",
                "api.pb.go": "package m\n\nfunc Proto() {}\n",
            },
        )
    )
    assert ("parse_test.go", "parse.go", "tests") in edges
    assert files.loc["parse_test.go", "is_test"] and not files.loc["parse.go", "is_test"]
    assert "vendor/x/x.go" not in files.index and "api.pb.go" not in files.index


def test_java_test_maps_across_the_maven_layout(tmp_path):
    files, edges = _index(
        _tree(
            tmp_path,
            {
                "core/src/main/java/org/ex/Parser.java": "package org.ex;\n\npublic class Parser { public int parse() { return 1; } }\n",
                "core/src/test/java/org/ex/ParserTest.java": "package org.ex;\n\nclass ParserTest { void t() { } }\n",
                "core/target/classes/Gen.java": "package org.ex;\n\nclass Gen {}\n",
                "core/src/integrationTest/java/org/ex/Roundtrip.java": "package org.ex;\n\nclass Roundtrip { void t() { } }\n",
                "core/src/main/java/org/ex/latest/Contest.java": "package org.ex.latest;\n\nclass Contest {}\n",
            },
        )
    )
    assert ("core/src/test/java/org/ex/ParserTest.java", "core/src/main/java/org/ex/Parser.java", "tests") in edges
    assert files.loc["core/src/test/java/org/ex/ParserTest.java", "is_test"]
    assert files.loc["core/src/integrationTest/java/org/ex/Roundtrip.java", "is_test"]  # a Gradle test source set
    assert not files.loc["core/src/main/java/org/ex/latest/Contest.java", "is_test"]
    assert "core/target/classes/Gen.java" not in files.index


def test_rust_integration_tests_and_workspace_crates(tmp_path):
    files, edges = _index(
        _tree(
            tmp_path,
            {
                "Cargo.toml": '[workspace]\nmembers = ["core", "cli"]\n',
                "core/Cargo.toml": '[package]\nname = "my-core"\nversion = "0.1.0"\n',
                "core/src/lib.rs": "pub mod lexer;\n",
                "core/src/lexer.rs": "pub fn lex() -> u32 { 1 }\n",
                "core/tests/lexer.rs": "#[test]\nfn lexes() { my_core::lexer::lex(); }\n",
                "cli/Cargo.toml": '[package]\nname = "cli"\nversion = "0.1.0"\n',
                "cli/src/main.rs": "use my_core::lexer;\n\nfn main() { lexer::lex(); }\n",
            },
        )
    )
    assert ("core/tests/lexer.rs", "core/src/lexer.rs", "tests") in edges
    assert ("cli/src/main.rs", "core/src/lexer.rs", "import") in edges
    assert files.loc["core/tests/lexer.rs", "is_test"]


def test_js_tests_packages_aliases_and_build_output(tmp_path):
    files, edges = _index(
        _tree(
            tmp_path,
            {
                "packages/core/package.json": json.dumps(
                    {"name": "@ex/core", "main": "./dist/index.js", "source": "./src/index.ts"}
                ),
                "packages/core/src/index.ts": "export function core(): number { return 1 }\n",
                "packages/core/src/util.ts": "export function util(): number { return 2 }\n",
                "packages/core/src/__tests__/util.test.ts": "import { util } from '../util'\ntest('u', () => util())\n",
                "packages/core/dist/index.js": "export function core() { return 1 }\n",
                "packages/app/tsconfig.json": '{\n  // aliases\n  "compilerOptions": {"baseUrl": ".", "paths": {"@/*": ["src/*"]},},\n}\n',
                "packages/app/src/main.ts": "import { core } from '@ex/core'\nimport { helper } from '@/helper'\ncore(); helper()\n",
                "packages/app/src/helper.ts": "export function helper() { return 3 }\n",
            },
        )
    )
    assert ("packages/core/src/__tests__/util.test.ts", "packages/core/src/util.ts", "import") in edges  # no duplicate
    assert not any(s == "packages/core/src/__tests__/util.test.ts" and k == "tests" for s, _, k in edges)
    assert ("packages/app/src/main.ts", "packages/core/src/index.ts", "import") in edges
    assert ("packages/app/src/main.ts", "packages/app/src/helper.ts", "import") in edges
    assert "packages/core/dist/index.js" not in files.index


def test_js_spec_file_without_import_gets_a_tests_edge(tmp_path):
    files, edges = _index(
        _tree(
            tmp_path,
            {
                "lib/command.js": "exports.Command = class Command {}\n",
                "lib/command.spec.js": "const assert = require('assert')\nassert.ok(true)\n",
            },
        )
    )
    assert ("lib/command.spec.js", "lib/command.js", "tests") in edges
    assert files.loc["lib/command.spec.js", "is_test"]


def test_c_and_cpp_headers_tests_and_vendored_code(tmp_path):
    """A `.h` written in C++ is parsed as C++ (its class and methods are symbols); a C one stays C; tests/test_x.c
    tests x.c; a bundled copy and an amalgamated header that says not to edit it are not indexed."""
    tables, files, edges = _indexed(
        _tree(
            tmp_path,
            {
                "include/lib/binary.h": "#pragma once\n#include <vector>\nnamespace lib {\nclass Binary {\n public:\n  "
                "const unsigned char* data() const { return m_data.data(); }\n private:\n  "
                "std::vector<unsigned char> m_data;\n};\n}\n",
                "cjson.h": '#ifdef __cplusplus\nextern "C" {\n#endif\nint cjson_parse(const char *s);\n#ifdef __cplusplus\n}\n#endif\n',
                "cjson.c": '#include "cjson.h"\nint cjson_parse(const char *s) { return s != 0; }\n',
                "tests/test_cjson.c": '#include "../cjson.h"\nint main(void) { return cjson_parse("1"); }\n',
                "include/lib/fmt/bundled/core.h": "int fmt_core(void);\n",
                "lib.hpp": "// lib v1\n//\n// THIS FILE WAS ASSEMBLED FROM MULTIPLE HEADER FILES BY A SCRIPT - PLEASE DON'T EDIT IT DIRECTLY\n"
                "namespace lib { class Binary {}; }\n",
            },
        )
    )
    assert files.loc["include/lib/binary.h", "language"] == "cpp" and files.loc["cjson.h", "language"] == "c"
    symbols = tables["symbols"].merge(tables["files"][["file_id", "path"]], on="file_id")
    header = symbols[symbols["path"] == "include/lib/binary.h"]
    assert {"lib.Binary", "lib.Binary.data"} <= set(header["qualified_name"])
    assert files.loc["tests/test_cjson.c", "is_test"] and not files.loc["cjson.c", "is_test"]
    assert ("tests/test_cjson.c", "cjson.c", "tests") in edges
    assert "include/lib/fmt/bundled/core.h" not in files.index and "lib.hpp" not in files.index


def test_ruby_php_and_csharp_tests_map_to_their_sources(tmp_path):
    files, edges = _index(
        _tree(
            tmp_path,
            {
                "lib/faraday/response.rb": "module Faraday\n  class Response\n    def to_hash; end\n  end\nend\n",
                "spec/faraday/response_spec.rb": "RSpec.describe Faraday::Response do\nend\n",
                "Gemfile": "source 'https://rubygems.org'\ngem 'rack'\n",
                "src/Handler/StreamHandler.php": "<?php\nnamespace Monolog\\Handler;\nclass StreamHandler { public function write() {} }\n",
                "tests/Handler/StreamHandlerTest.php": "<?php\nclass StreamHandlerTest { public function testWrite() {} }\n",
                "src/Serilog/Core/Logger.cs": "namespace Serilog.Core;\npublic class Logger { public void Write() {} }\n",
                "test/Serilog.Tests/Core/LoggerTests.cs": "namespace Serilog.Tests.Core;\npublic class LoggerTests { public void Writes() {} }\n",
                "src/Serilog.Specs/Helpers.cs": "namespace Serilog.Specs;\npublic class Helpers {}\n",
                "src/Serilog/obj/Debug/Generated.cs": "class Generated {}\n",
                "src/UnitTests/Bug/CollectionBug.cs": "namespace UnitTests.Bug;\npublic class CollectionBug {}\n",
                "Tests/Contests/Entry.cs": "namespace Contests;\npublic class Entry {}\n",
                "src/Contests/Entry.cs": "namespace Contests;\npublic class Entry {}\n",
            },
        )
    )
    assert ("spec/faraday/response_spec.rb", "lib/faraday/response.rb", "tests") in edges
    assert ("tests/Handler/StreamHandlerTest.php", "src/Handler/StreamHandler.php", "tests") in edges
    assert ("test/Serilog.Tests/Core/LoggerTests.cs", "src/Serilog/Core/Logger.cs", "tests") in edges
    assert files.loc["src/Serilog.Specs/Helpers.cs", "is_test"]  # a test project's directory, by its name
    assert (
        files.loc["src/UnitTests/Bug/CollectionBug.cs", "is_test"] and files.loc["Tests/Contests/Entry.cs", "is_test"]
    )
    assert not files.loc["src/Contests/Entry.cs", "is_test"]  # (a name that merely ends in "tests")
    assert "Gemfile" not in files.index and "src/Serilog/obj/Debug/Generated.cs" not in files.index


def test_a_broken_table_is_one_clear_error(tmp_path):
    (tmp_path / "go.toml").write_text("languages = [\n")
    with pytest.raises(CraError, match="go.toml"):
        load_conventions(tmp_path)


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(root), *args],
        check=True,
        capture_output=True,
        env={
            "GIT_AUTHOR_NAME": "a",
            "GIT_AUTHOR_EMAIL": "a@x",
            "GIT_COMMITTER_NAME": "a",
            "GIT_COMMITTER_EMAIL": "a@x",
            "PATH": "/usr/bin:/bin",
        },
    )


def test_miner_keeps_issue_fixes_and_counts_what_each_filter_removed(tmp_path):
    from cra.drivers.research.mine_cases import FILTERS, mine_repository

    repo = _tree(
        tmp_path / "r", {"parse.go": "package m\n\nfunc Parse() int {\n\treturn 1\n}\n", "parse_test.go": "package m\n"}
    )
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "initial import")
    (repo / "parse.go").write_text("package m\n\nfunc Parse() int {\n\treturn 2\n}\n")
    (repo / "parse_test.go").write_text("package m\n\n// covers #12\n")
    _git(
        repo,
        "commit",
        "-qam",
        "Fix Parse returning the wrong count for empty input\n\nCloses #12\n\nSigned-off-by: a <a@x>",
    )
    (repo / "parse_test.go").write_text("package m\n\n// more\n")
    _git(repo, "commit", "-qam", "Fix flaky test of the parser on slow machines (#13)")
    (repo / "parse.go").write_text("package m\n\nfunc Parse() int {\n\treturn 3\n}\n")
    _git(repo, "commit", "-qam", "Tune parse (#14)")
    (repo / "parse.go").write_text("package m\n\nfunc Parse() int {\n\treturn 4\n}\n")
    _git(repo, "commit", "-qam", "chore(deps): update the toolchain to fix the build of parse (#15)")
    cases, removed = mine_repository(repo / ".git", "ex/r", "go", load_conventions())
    assert [c["gold_files"] for c in cases] == [["parse.go"]]
    case = cases[0]
    assert "Signed-off-by" not in case["problem_statement"] and "Closes #12" in case["problem_statement"]
    assert case["gold_functions"] == ["parse.go::Parse"]
    assert removed[FILTERS[8]] == 1  # the initial import has no parent to index
    assert removed[FILTERS[3]] == 1  # the test-only fix has no source file
    assert removed[FILTERS[1]] == 1  # "Tune parse" describes no problem
    assert removed[FILTERS[2]] == 1  # a dependency bot's update
    assert removed["commits read"] == 5


def test_miner_mines_only_the_repositories_named(tmp_path, capsys):
    from cra.drivers.research.mine_cases import main

    repo = _tree(tmp_path / "r", {"parse.go": "package m\n\nfunc Parse() int {\n\treturn 1\n}\n"})
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "initial import")
    (repo / "parse.go").write_text("package m\n\nfunc Parse() int {\n\treturn 2\n}\n")
    _git(repo, "commit", "-qam", "Fix Parse returning the wrong count for empty input (#12)")
    mirror = tmp_path / "mirror"
    subprocess.run(["git", "clone", "-q", "--bare", str(repo), str(mirror / "spf13+cobra" / "repo")], check=True)
    out = tmp_path / "train.jsonl"
    assert main(["--mirror", str(mirror), "--set", "train", "--repos", "spf13/cobra", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "spf13/cobra (go): 1 cases" in err and "no mirror" not in err  # no other repository tried
    assert [json.loads(line)["repo"] for line in out.read_text().splitlines()] == ["spf13/cobra"]
    assert main(["--mirror", str(mirror), "--set", "train", "--repos", "ex/nowhere", "--out", str(out)]) == 2
    assert capsys.readouterr().err.startswith("error: ex/nowhere not in the train set")


def test_miner_leaves_out_a_generated_amalgamation_a_cpp_fix_also_changed(tmp_path):
    from cra.drivers.research.mine_cases import mine_repository

    banner = "// DO NOT EDIT: assembled from include/impl/*.inl by a script\n"
    repo = _tree(
        tmp_path / "r",
        {
            "include/impl/parser.inl": "namespace t {\nint parse_key() {\n  return 1;\n}\n}\n",
            "single.hpp": banner + "namespace t {\nint parse_key() {\n  return 1;\n}\n}\n",
        },
    )
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "initial import")
    (repo / "include/impl/parser.inl").write_text("namespace t {\nint parse_key() {\n  return 2;\n}\n}\n")
    (repo / "single.hpp").write_text(banner + "namespace t {\nint parse_key() {\n  return 2;\n}\n}\n")
    _git(repo, "commit", "-qam", "Fix parse_key returning the wrong depth for dotted keys (#7)")
    cases, _ = mine_repository(repo / ".git", "ex/r", "cpp", load_conventions())
    assert [c["gold_files"] for c in cases] == [["include/impl/parser.inl"]]
    assert cases[0]["gold_functions"] == ["include/impl/parser.inl::t.parse_key"]


def test_miner_leaves_rust_inline_tests_out_of_the_gold_functions(tmp_path):
    """A Rust fix that adds a `#[test]` beside the code it fixes: the gold is the fixed function, not the test."""
    from cra.drivers.research.mine_cases import mine_repository

    def lib(value: int, test: str) -> str:
        return (
            f"pub fn parse() -> u32 {{\n    {value}\n}}\n\n#[cfg(test)]\nmod tests {{\n    use super::*;\n\n"
            f"    #[test]\n    fn parses() {{\n        assert_eq!(parse(), {value});\n    }}\n{test}}}\n"
        )

    repo = _tree(tmp_path / "r", {"src/lib.rs": lib(1, "")})
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "initial import")
    (repo / "src/lib.rs").write_text(
        lib(2, "\n    #[test]\n    fn parses_empty() {\n        assert_eq!(parse(), 2);\n    }\n")
    )
    _git(repo, "commit", "-qam", "Fix parse returning the wrong count (#7)")
    [case], _ = mine_repository(repo / ".git", "ex/r", "rust", load_conventions())
    assert case["gold_files"] == ["src/lib.rs"]
    assert case["gold_functions"] == ["src/lib.rs::parse"]


def test_a_file_whose_inline_tests_alone_a_fix_changed_is_not_gold(tmp_path):
    """Rust keeps unit tests in the file they test: a fix of `parse.rs` that also edits a helper inside another
    file's `#[cfg(test)] mod tests` (no `#[test]` on it) has one gold file, and a commit that changes only such a
    module is a test change, not a case."""
    from cra.drivers.research.mine_cases import FILTERS, mine_repository

    def lib(fixture: str) -> str:
        return (
            f"pub mod parse;\n\npub fn run() {{}}\n\n#[cfg(test)]\nmod tests {{\n    use super::*;\n\n"
            f'    fn fixture() -> &\'static str {{\n        "{fixture}"\n    }}\n}}\n'
        )

    repo = _tree(tmp_path / "r", {"src/lib.rs": lib("a = 1"), "src/parse.rs": "pub fn parse() -> u32 {\n    1\n}\n"})
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "initial import")
    (repo / "src/parse.rs").write_text("pub fn parse() -> u32 {\n    2\n}\n")
    (repo / "src/lib.rs").write_text(lib("a = 2"))
    _git(repo, "commit", "-qam", "Fix parse returning the wrong count for dotted keys (#7)")
    (repo / "src/lib.rs").write_text(lib("a = 3"))
    _git(repo, "commit", "-qam", "Fix the fixture of the parser tests failing on Windows (#8)")
    [case], removed = mine_repository(repo / ".git", "ex/r", "rust", load_conventions())
    assert case["gold_files"] == ["src/parse.rs"]
    assert case["gold_functions"] == ["src/parse.rs::parse"]
    assert removed[FILTERS[9]] == 1


def test_refreshed_gold_is_named_as_the_parsers_name_symbols_now(tmp_path, capsys):
    """A case mined when the Java parser named every enum constant's method `State.read` is renamed by
    --refresh-gold to the method the fix changed, `State.Tag.read`; the rest of the case file is kept as it was."""
    from cra.drivers.research.mine_cases import main, mine_repository

    def java(value: int) -> str:
        return (
            "package m;\n\nenum State {\n    Data {\n        void read() { go(1); }\n    },\n"
            f"    Tag {{\n        void read() {{ go({value}); }}\n    }};\n    abstract void read();\n}}\n"
        )

    repo = _tree(tmp_path / "r", {"State.java": java(2)})
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "initial import")
    (repo / "State.java").write_text(java(3))
    _git(repo, "commit", "-qam", "Fix the tag state reading the wrong value (#7)")
    [case], _ = mine_repository(repo / ".git", "ex/r", "java", load_conventions())
    assert case["gold_functions"] == ["State.java::State.Tag.read"]
    case["problem_statement"] += "\u2028pasted with a line separator"  # one JSON line, not two
    stale = case | {"gold_functions": ["State.java::State.read"]}
    other = {"instance_id": "ex__gone-0123456789", "repo": "ex/gone", "gold_functions": ["a.go::A"]}
    mirror = tmp_path / "mirror"
    (mirror / "ex+r").mkdir(parents=True)
    (mirror / "ex+r" / "repo").symlink_to(repo / ".git")
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps(stale) + "\n" + json.dumps(other) + "\n")
    assert main(["--mirror", str(mirror), "--out", str(cases), "--refresh-gold"]) == 0
    assert [json.loads(line) for line in cases.read_text().split("\n") if line] == [case, other]
    assert "1 of 2 cases have new gold files or functions, 0 dropped" in capsys.readouterr().out


def test_family_fit_beats_a_shared_fit_when_languages_disagree():
    import pandas as pd

    from cra.dataflows.retrieval.combination import SIGNALS
    from cra.drivers.research.tune_languages import family_comparison

    rows = []
    for language, strong in (("go", "path_match"), ("rust", "lexical_match")):
        weak = "lexical_match" if strong == "path_match" else "path_match"
        for r in range(2):
            for c in range(3):
                case = f"{language}{r}-{c}"
                for f in range(
                    2
                ):  # gold (file 0) needs weight(strong) > 1.3 weight(weak): no one weighting serves both
                    values = dict.fromkeys(SIGNALS, 0.0)
                    values[strong], values[weak] = (0.5, 0.3) if f == 0 else (0.0, 0.95)
                    rows.append(
                        {
                            "path": f"f{f}",
                            **values,
                            "seed": False,
                            "is_test": False,
                            "non_source": False,
                            "case_id": case,
                            "repo": f"{language}/r{r}",
                            "gold": f == 0,
                            "language": language,
                        }
                    )
    table = family_comparison(pd.DataFrame(rows))
    for language in ("go", "rust"):
        assert table.loc[(language, "family fit (LORO)"), "acc@1"] == 1.0
    shared = table.xs("shared fit (LORO)", level="configuration")["acc@1"]
    assert shared.min() < 1.0


def test_rust_use_items_bind_to_their_definitions(tmp_path):
    """`use crate::a::b::Item`, `use super::{..}` and nested use lists bind each item, so calls across files become
    symbol edges (before, a Rust import named only the file)."""
    root = _tree(
        tmp_path,
        {
            "Cargo.toml": '[package]\nname = "demo"\nversion = "0.1.0"\n',
            "src/main.rs": "mod configs;\nmod modules;\nmod utils;\n\nfn main() { modules::sudo::module(); }\n",
            "src/configs/mod.rs": "pub mod sudo;\n",
            "src/configs/sudo.rs": "pub struct SudoConfig { pub allow_windows: bool }\n\npub fn load_sudo_config() -> SudoConfig {\n"
            "    SudoConfig { allow_windows: false }\n}\n",
            "src/modules/mod.rs": "pub mod sudo;\n\npub struct Context;\n\npub fn new_module(name: &str) -> u32 { 1 }\n",
            "src/utils.rs": "pub fn exec_cmd(cmd: &str) -> bool { true }\n\npub fn render(cmd: &str) -> bool { false }\n",
            "src/modules/sudo.rs": "use super::{new_module, Context};\nuse crate::configs::sudo::load_sudo_config;\n"
            'use crate::{utils::{exec_cmd, render}};\n\npub fn module() -> bool {\n    new_module("sudo");\n'
            '    let config = load_sudo_config();\n    exec_cmd("sudo -n true") && render("x")\n}\n',
        },
    )
    tables, _ = index_frames(root, history=0, workers=1)
    symbols = tables["symbols"].merge(tables["files"][["file_id", "path"]], on="file_id")
    name = dict(zip(symbols["symbol_id"], symbols["path"] + "::" + symbols["qualified_name"]))
    calls = {
        (name[s], name[d])
        for s, d in zip(tables["symbol_edges"]["src_symbol_id"], tables["symbol_edges"]["dst_symbol_id"])
    }
    caller = "src/modules/sudo.rs::module"
    assert {
        (caller, "src/configs/sudo.rs::load_sudo_config"),
        (caller, "src/modules/mod.rs::new_module"),
        (caller, "src/utils.rs::exec_cmd"),
        (caller, "src/utils.rs::render"),
    } <= calls


def test_the_holdout_repositories_are_in_no_other_set():
    """The holdout measures the shipped ranker on fixes nothing was fitted to: none of its repositories may be a
    development or training one."""
    from cra.drivers.research.mine_cases import SETS

    fitted = {repo for which in ("dev", "train") for repos in SETS[which].values() for repo in repos}
    holdout = {repo for repos in SETS["holdout"].values() for repo in repos}
    assert holdout and not holdout & fitted


def test_vendored_copies_are_not_indexed_as_code(tmp_path):
    """pip's `_vendor/`, a Rust crate's `vendored/` copy and a JS `third_party/` library are others' code."""
    files, _ = _index(
        _tree(
            tmp_path,
            {
                "src/pip/_internal/req.py": "def install():\n    return 1\n",
                "src/pip/_vendor/rich/console.py": "class Console:\n    pass\n",
                "insta/src/content/yaml/vendored/parser.rs": "pub fn parse() {}\n",
                "insta/src/content/yaml/mod.rs": "pub fn load() {}\n",
                "web/third_party/lodash.js": "export function chunk() {}\n",
                "web/app.js": "export function main() {}\n",
            },
        )
    )
    assert {"src/pip/_internal/req.py", "insta/src/content/yaml/mod.rs", "web/app.js"} <= set(files.index)
    assert not {
        "src/pip/_vendor/rich/console.py",
        "insta/src/content/yaml/vendored/parser.rs",
        "web/third_party/lodash.js",
    } & set(files.index)


def test_test_directories_named_in_a_longer_name_are_tests(tmp_path):
    """hono's runtime-tests/, immer's __performance_tests__/, retrofit's test-helpers/ module: tests by their names,
    while a source directory or package that merely contains the letters stays code."""
    files, _ = _index(
        _tree(
            tmp_path,
            {
                "runtime-tests/node/index.test.ts": "export const t = 1\n",
                "runtime-tests/node/setup.ts": "export const s = 1\n",
                "__performance_tests__/add-data.mjs": "export const d = 1\n",
                "src/latest/contest.ts": "export const c = 1\n",
                "retrofit/test-helpers/src/main/java/retrofit2/helpers/ToStringConverterFactory.java": "package retrofit2.helpers;\n\npublic class ToStringConverterFactory {}\n",
                "retrofit/src/main/java/retrofit2/attest/Attest.java": "package retrofit2.attest;\n\npublic class Attest {}\n",
            },
        )
    )
    assert (
        files.loc["runtime-tests/node/setup.ts", "is_test"]
        and files.loc["__performance_tests__/add-data.mjs", "is_test"]
    )
    assert files.loc["retrofit/test-helpers/src/main/java/retrofit2/helpers/ToStringConverterFactory.java", "is_test"]
    assert not files.loc["src/latest/contest.ts", "is_test"]
    assert not files.loc["retrofit/src/main/java/retrofit2/attest/Attest.java", "is_test"]


def test_a_packages_testing_library_is_code_and_a_top_level_test_dir_is_tests(tmp_path):
    """django/test/ (TestCase, Client) and numpy/testing/ are libraries a fix changes; test/ and testing/ at the top
    of a repository, tests/ anywhere and test_*.py files are tests."""
    files, _ = _index(
        _tree(
            tmp_path,
            {
                "django/__init__.py": "",
                "django/test/__init__.py": "from django.test.testcases import TestCase\n",
                "django/test/testcases.py": "class TestCase:\n    def assertFormError(self, form, field):\n        pass\n",
                "django/test/test_helpers.py": "def test_helper():\n    pass\n",
                "tests/forms/test_forms.py": "def test_bound():\n    pass\n",
                "test/helpers.py": "def helper():\n    pass\n",
                "testing/conftest.py": "",
            },
        )
    )
    assert not files.loc["django/test/testcases.py", "is_test"] and not files.loc["django/test/__init__.py", "is_test"]
    assert files.loc["django/test/test_helpers.py", "is_test"] and files.loc["tests/forms/test_forms.py", "is_test"]
    assert files.loc["test/helpers.py", "is_test"] and files.loc["testing/conftest.py", "is_test"]
