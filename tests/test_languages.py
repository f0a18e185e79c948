"""The per-language registry (`cra.dataflows.index.languages`): every parsed language has its module, parser and
convention table; import rows resolve through the language's own resolver."""

from __future__ import annotations

import pandas as pd

from cra.dataflows.index import languages
from cra.dataflows.index.parsers import PARSED_LANGUAGES, parse_source
from cra.drivers.common.conventions import load_conventions


def test_every_parsed_language_has_a_module_a_parser_and_its_shipped_convention_table():
    conventions = load_conventions()
    for language in sorted(PARSED_LANGUAGES):
        module = languages.MODULE_OF[language]
        assert language in getattr(module, "SPECS", {}) or hasattr(module, "parse"), language
        table = conventions[module.CONVENTIONS]
        assert language in table["languages"], (language, module.CONVENTIONS)
        for manifest in getattr(module, "MANIFESTS", ()):
            assert manifest in table["imports"]["manifests"], (language, manifest)
    assert set(languages.SPEC_FACTORIES) == PARSED_LANGUAGES - {"python"}


def test_parse_source_reads_each_tree_sitter_language_through_its_registered_grammar():
    samples = {"go": "package a\nfunc F() {}\n", "rust": "fn f() {}\n", "ruby": "def f\nend\n", "c": "int f(void) {}\n"}
    for language, text in samples.items():
        parsed = parse_source(language, text)
        assert parsed.error is None and [s.name for s in parsed.symbols] == ["F" if language == "go" else "f"]


def test_import_resolver_dispatches_by_language_and_binds_nothing_for_an_unknown_one():
    files = pd.DataFrame(
        {
            "file_id": [0, 1, 2, 3],
            "path": ["lib/pkg/a.py", "lib/pkg/b.py", "src/x.rb", "lib/y.rb"],
            "language": ["python", "python", "ruby", "ruby"],
            "module": ["pkg.a", "pkg.b", "src/x", "lib/y"],
            "package": ["lib/pkg", "lib/pkg", "src", "lib"],
        }
    )
    resolver = languages.ImportResolver(files, {"go_modules": {}})
    # lib/pkg/b.py is found by its dotted module name (file_facts gives it), not by a path from the root or src/
    assert resolver.resolve("python", "lib/pkg/a.py", "pkg.a", "lib/pkg", "pkg.b", ["f as g"], 0) == [(1, "g", "f")]
    assert resolver.resolve("ruby", "src/x.rb", "src/x", "src", "y", [], 0) == [(3, None, None)]
    assert resolver.resolve("ruby", "src/x.rb", "src/x", "src", "y", [], 1) == []  # require_relative: next to it
    assert resolver.resolve("kotlin", "a.kt", "a", "", "pkg.b", [], 0) == []


def test_module_names_are_each_languages_own():
    package_dirs = languages.python.package_dirs(["src/pkg/__init__.py", "src/pkg/sub/__init__.py", "src/pkg/a.py"])
    assert languages.module_name("src/pkg/sub/b.py", "python", "", package_dirs) == "pkg.sub.b"
    assert languages.module_name("src/pkg/__init__.py", "python", "", package_dirs) == "pkg"
    java = "// header\npackage org.example.util;\n\nclass Strings {}\n"
    assert languages.module_name("src/main/java/org/example/util/Strings.java", "java", java, frozenset()) == (
        "org.example.util.Strings"
    )
    assert languages.module_name("internal/router/tree.go", "go", "package router\n", frozenset()) == "internal/router"
    assert languages.module_name("types/index.d.ts", "typescript", "", frozenset()) == "types/index"
    assert languages.module_name("docs/guide.md", "markdown", "", frozenset()) == "docs/guide"
