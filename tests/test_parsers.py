"""Language parsers: exact symbols, imports, references and comments for each parsed language."""

from __future__ import annotations

import pathlib
import textwrap
import time

import pytest

from cra.dataflows.index.parsers import LANGUAGE_BY_EXTENSION, language_of, parse_source
from cra.dataflows.index.parsers.comments import is_rationale
from cra.dataflows.index.parsers.models import ParsedComment, ParsedFile, ParsedImport


def parsed(language: str, source: str) -> ParsedFile:
    result = parse_source(language, textwrap.dedent(source).lstrip("\n"))
    assert result is not None
    return result


def symbol_rows(result: ParsedFile) -> list[tuple]:
    return [(s.qualified_name, s.kind, s.start_line, s.end_line, s.parent) for s in result.symbols]


def references_of(result: ParsedFile, qualified_name: str) -> set[tuple[str, str]]:
    idx = [s.qualified_name for s in result.symbols].index(qualified_name)
    return {(r.name, r.kind) for r in result.references if r.symbol == idx}


def symbol(result: ParsedFile, qualified_name: str):
    return next(s for s in result.symbols if s.qualified_name == qualified_name)


PYTHON = '''
import os, a.b
from x.y import a, b as c
from . import m
from ..p import q
if TYPE_CHECKING:
    from typing import Sequence

MAX_SIZE = 10  # limit because of bug #1234
Alias: TypeAlias = "dict[str, int]"
T = TypeVar("T")


class Color(Enum):
    RED = 1


@dataclass(frozen=True)
class Outer(Base, models.Model, metaclass=Meta):
    """Outer doc."""

    LIMIT = 3

    @property
    def method(self, x: "Sequence[Foo]",  # note: odd layout
               y: os.PathLike = default()) -> dict[str, Bar]:
        """Method doc."""
        # loop over items
        def inner():
            return helper(1)
        self.save()
        os.path.join("#not a comment")
        z: Baz = Foo.bar()
        return z
'''


def test_python_symbols_kinds_lines_and_parents():
    result = parsed("python", PYTHON)
    assert result.error is None
    assert symbol_rows(result) == [
        ("MAX_SIZE", "constant", 8, 8, None),
        ("Alias", "type_alias", 9, 9, None),
        ("Color", "enum", 13, 14, None),
        ("Color.RED", "constant", 14, 14, 2),
        ("Outer", "class", 17, 33, None),
        ("Outer.LIMIT", "constant", 21, 21, 4),
        ("Outer.method", "method", 23, 33, 4),
        ("Outer.method.inner", "function", 28, 29, 6),
    ]


def test_python_signatures_docstrings_decorators():
    result = parsed("python", PYTHON)
    method = symbol(result, "Outer.method")
    assert method.signature == (
        'def method(self, x: "Sequence[Foo]",  # note: odd layout\n'
        "               y: os.PathLike = default()) -> dict[str, Bar]:"
    )
    assert method.docstring == "Method doc."
    assert method.decorators == ("property",)
    outer = symbol(result, "Outer")
    assert outer.signature == "class Outer(Base, models.Model, metaclass=Meta):"
    assert outer.decorators == ("dataclass(frozen=True)",)
    assert outer.docstring == "Outer doc."
    assert symbol(result, "Outer.method.inner").signature == "def inner():"
    assert symbol(result, "Outer.LIMIT").signature == "LIMIT = 3"


def test_python_imports_including_nested_ones():
    assert parsed("python", PYTHON).imports == [
        ParsedImport(target="os", line=1),
        ParsedImport(target="a.b", line=1),
        ParsedImport(target="x.y", names=("a", "b as c"), line=2),
        ParsedImport(target="", names=("m",), level=1, line=3),
        ParsedImport(target="p", names=("q",), level=2, line=4),
        ParsedImport(target="typing", names=("Sequence",), line=6),
    ]


def test_python_references_calls_bases_annotations():
    result = parsed("python", PYTHON)
    assert references_of(result, "Outer") == {
        ("Base", "base"),
        ("models.Model", "base"),
        ("dataclass", "call"),
    }
    assert references_of(result, "Outer.method") == {
        ("Sequence", "annotation"),
        ("Foo", "annotation"),
        ("os.PathLike", "annotation"),
        ("dict", "annotation"),
        ("str", "annotation"),
        ("Bar", "annotation"),
        ("Baz", "annotation"),
        ("default", "call"),
        ("self.save", "call"),
        ("os.path.join", "call"),
        ("Foo.bar", "call"),
    }
    assert references_of(result, "Outer.method.inner") == {("helper", "call")}
    assert len(result.references) == len({(r.symbol, r.name, r.kind) for r in result.references})


def test_python_comments_attach_to_innermost_symbol():
    assert parsed("python", PYTHON).comments == [
        ParsedComment(line=8, text="limit because of bug #1234", symbol=0),
        ParsedComment(line=24, text="note: odd layout", symbol=6),
        ParsedComment(line=27, text="loop over items", symbol=6),
    ]


def test_python_syntax_error_keeps_comments_and_imports():
    result = parsed("python", "import os  # needed because of plugins\ndef broken(:\n    pass\n")
    assert result.error == "SyntaxError: invalid syntax (line 2)"
    assert result.symbols == []
    assert result.comments == [ParsedComment(line=1, text="needed because of plugins", symbol=None)]
    assert result.imports == [ParsedImport(target="os", line=1)]


def test_python_import_aliases_are_kept_as_name_as_alias():
    source = "import numpy as np, os\nfrom m import f as g, h\nimport a.b as c\n"
    expected = [
        ParsedImport(target="numpy", names=("numpy as np",), line=1),
        ParsedImport(target="os", line=1),
        ParsedImport(target="m", names=("f as g", "h"), line=2),
        ParsedImport(target="a.b", names=("a.b as c",), line=3),
    ]
    assert parsed("python", source).imports == expected
    assert parsed("python", source + "def broken(:\n").imports == expected  # the regex fallback keeps them too


TYPESCRIPT = """
import x from './a';
import {a, b} from '../b';
export {c} from './c2';
const c = require('./c');
const MAX_SIZE = 10;
/** Adds things. */
export function add(x: number, y: Point): number { return helper(x) + y; }
function* gen() { yield 1; }
const f = async (p: Opts) => { this.bar(); obj.method(); };
interface Shape extends Base { area(): number }
type Id = string | number;
enum Color { Red, Green }
@Component()
class Foo extends Bar implements Baz {
  // keep because of IE11
  run(n: number): void { import('./d'); new Thing(); }
}
"""


def test_typescript_symbols():
    result = parsed("typescript", TYPESCRIPT)
    assert result.error is None
    assert symbol_rows(result) == [
        ("MAX_SIZE", "constant", 5, 5, None),
        ("add", "function", 7, 7, None),
        ("gen", "function", 8, 8, None),
        ("f", "function", 9, 9, None),
        ("Shape", "interface", 10, 10, None),
        ("Id", "type_alias", 11, 11, None),
        ("Color", "enum", 12, 12, None),
        ("Foo", "class", 13, 17, None),
        ("Foo.run", "method", 16, 16, 7),
    ]
    add = symbol(result, "add")
    assert add.signature == "export function add(x: number, y: Point): number"
    assert add.docstring == "Adds things."
    assert symbol(result, "f").signature == "const f = async (p: Opts) =>"
    assert symbol(result, "Foo").decorators == ("Component()",)
    assert symbol(result, "Foo").signature == "class Foo extends Bar implements Baz"


def test_typescript_imports_references_comments():
    result = parsed("typescript", TYPESCRIPT)
    assert [(i.target, i.names, i.line) for i in result.imports] == [
        ("./a", ("x",), 1),
        ("../b", ("a", "b"), 2),
        ("./c2", ("c",), 3),
        ("./c", ("c", "* as c"), 4),  # (the module's export `c`, or the module itself: `c.f()`)
        ("./d", (), 16),
    ]
    assert references_of(result, "add") == {("Point", "annotation"), ("helper", "call")}
    assert references_of(result, "f") == {("Opts", "annotation"), ("this.bar", "call"), ("obj.method", "call")}
    assert references_of(result, "Shape") == {("Base", "base")}
    assert references_of(result, "Foo") == {("Bar", "base"), ("Baz", "base"), ("Component", "call")}
    assert references_of(result, "Foo.run") == {("Thing", "call")}
    assert result.comments == [
        ParsedComment(line=6, text="Adds things.", symbol=None),
        ParsedComment(line=15, text="keep because of IE11", symbol=7),
    ]


def test_typescript_with_errors_keeps_what_parsed():
    source = 'import {a} from "./a";\nfunction ok(x: number) { return a(x); }\nclass Broken {\n  m( { \n}\n'
    result = parse_source("typescript", source)
    assert result.error == "syntax error at line 3"
    assert [s.name for s in result.symbols][:1] == ["ok"]
    assert result.imports == [ParsedImport(target="./a", names=("a",), line=1)]
    assert references_of(result, "ok") == {("a", "call")}


def test_typescript_generic_call_signatures_on_their_own_lines_parse():
    # tree-sitter-typescript reads `number\n  <U>(` as `number<U>(...)` (its issue 335): zustand's store types
    source = """
        export type Store<S> = {
          (): S
          <U>(selector: (state: S) => U): U
        } & S

        export interface Api<T> {
          getState: () => T
          <U>(select: (t: T) => U): U
        }

        export function create<T>(init: T): Store<T> {
          return use(init)
        }
        """
    for language in ("typescript", "tsx"):
        result = parsed(language, source)
        assert result.error is None
        assert ("create", "function", 11) in [(s.name, s.kind, s.start_line) for s in result.symbols]
        create = next(s for s in result.symbols if s.name == "create")
        assert create.signature.startswith("export function create<T>(init: T): Store<T>")


def test_typescript_variance_annotations_parse():
    # `in` / `out` on type parameters (TypeScript 4.7) are not in tree-sitter-typescript 0.23: zod's core types
    source = """
        export interface ZodType<
          /** @ts-ignore Cast variance */
          out Output = unknown,
          in out Input extends object = {},
        > {
          parse(data: unknown): Output
        }

        export interface Check<in T = never> {
          run(value: T): boolean
        }

        export function isKey(key: string, obj: object): boolean {
          for (const k in obj) if (k === key) return true
          return key in obj
        }
        """
    result = parsed("typescript", source)
    assert result.error is None
    names = [s.name for s in result.symbols]
    assert {"ZodType", "Check", "isKey"} <= set(names)
    zod_type = next(s for s in result.symbols if s.name == "ZodType")
    assert "out Output = unknown" in zod_type.signature  # read from the original source


def test_javascript_variables_named_using_parse():
    # the grammars read `using += ...` (and TypeScript's `return using`) as a `using` declaration (knex)
    source = """
        function joins(tables) {
          let using = '';
          using += tables.join(',');
          return using;
        }
        """
    for language in ("javascript", "typescript"):
        result = parsed(language, source)
        assert result.error is None and [s.name for s in result.symbols] == ["joins"]


def test_rust_str_macro_calls_parse():
    # tree-sitter-rust reads `str` as the primitive type, so snapbox's `str![...]` (common in crates' tests) broke
    source = """
        #[test]
        fn build_reports_errors() {
            cmd.expect_stderr(str![[r#"error: no book"#]]);
        }

        fn after() -> usize {
            1
        }
        """
    result = parsed("rust", source)
    assert result.error is None
    assert [(s.name, s.start_line) for s in result.symbols] == [("build_reports_errors", 1), ("after", 6)]


def test_javascript_and_tsx_share_the_extractor():
    js = parsed("javascript", "const h = require('./h');\nfunction main() { h.run(); }\n")
    assert symbol_rows(js) == [("main", "function", 2, 2, None)]
    assert js.imports == [ParsedImport(target="./h", names=("h", "* as h"), line=1)]
    assert references_of(js, "main") == {("h.run", "call")}
    tsx = parsed("tsx", "export const App = (p: Props) => <div>{render(p)}</div>;\n")
    assert symbol_rows(tsx) == [("App", "function", 1, 1, None)]
    assert references_of(tsx, "App") == {("Props", "annotation"), ("render", "call")}


GO = """
package main

import (
	"fmt"
	str "strings"
)

const MaxSize = 10

// Server serves.
// It is nice.
type Server struct {
	name string
}

type Runner interface {
	Run() error
}

type ID int

func (s *Server) Run(ctx context.Context, n Opts) error {
	// must flush first, otherwise data is lost
	fmt.Println(s.name)
	return helper(n)
}
"""


def test_go_symbols_imports_references_comments():
    result = parsed("go", GO)
    assert result.error is None
    assert symbol_rows(result) == [
        ("MaxSize", "constant", 8, 8, None),
        ("Server", "class", 12, 14, None),
        ("Runner", "interface", 16, 18, None),
        ("ID", "type_alias", 20, 20, None),
        ("Server.Run", "method", 22, 26, 1),
    ]
    assert symbol(result, "Server").docstring == "Server serves.\nIt is nice."
    assert symbol(result, "Server").signature == "type Server struct"
    assert symbol(result, "Server.Run").signature == "func (s *Server) Run(ctx context.Context, n Opts) error"
    assert [i.target for i in result.imports] == ["fmt", "strings"]
    assert references_of(result, "Server.Run") == {
        ("Server", "annotation"),
        ("context.Context", "annotation"),
        ("Opts", "annotation"),
        ("fmt.Println", "call"),
        ("helper", "call"),
    }
    assert result.comments == [
        ParsedComment(line=10, text="Server serves.", symbol=None),
        ParsedComment(line=11, text="It is nice.", symbol=None),
        ParsedComment(line=23, text="must flush first, otherwise data is lost", symbol=4),
    ]


JAVA = """
package com.acme;
import com.acme.Foo;
import com.acme.*;
/** The app. */
@Service
public class App extends Base implements Runnable {
    static final int MAX = 3;
    private Repo repo;
    /** Runs. */
    @Override
    public void run(Task t) { repo.save(t); helper(); new Thing(); }
    App(int x) {}
    interface Inner {}
    enum E { A }
    record R(int a) {}
}
"""


def test_java_symbols_imports_references():
    result = parsed("java", JAVA)
    assert result.error is None
    assert symbol_rows(result) == [
        ("App", "class", 5, 16, None),
        ("App.MAX", "constant", 7, 7, 0),
        ("App.run", "method", 10, 11, 0),
        ("App.App", "method", 12, 12, 0),
        ("App.Inner", "interface", 13, 13, 0),
        ("App.E", "enum", 14, 14, 0),
        ("App.R", "class", 15, 15, 0),
    ]
    run = symbol(result, "App.run")
    assert (run.signature, run.docstring, run.decorators) == ("public void run(Task t)", "Runs.", ("Override",))
    assert symbol(result, "App").docstring == "The app."
    assert [i.target for i in result.imports] == ["com.acme.Foo", "com.acme.*"]
    assert references_of(result, "App") == {("Base", "base"), ("Runnable", "base"), ("Repo", "annotation")}
    assert references_of(result, "App.run") == {
        ("Task", "annotation"),
        ("repo.save", "call"),
        ("helper", "call"),
        ("Thing", "call"),
    }
    assert result.comments == [
        ParsedComment(line=4, text="The app.", symbol=None),
        ParsedComment(line=9, text="Runs.", symbol=0),
    ]


def test_java_enum_constants_with_bodies_own_their_methods():
    """A state machine's constants each override `read`: seventy `State.read` would be one name for seventy
    methods; each is `State.<Constant>.read` under a class symbol for the constant."""
    result = parsed(
        "java",
        """
        enum State {
            Data {
                @Override void read(Tokeniser t) { t.advance(); }
            },
            Tag { void read(Tokeniser t) { helper(); } },
            Plain;
            abstract void read(Tokeniser t);
        }
    """,
    )
    assert result.error is None
    assert symbol_rows(result) == [
        ("State", "enum", 1, 8, None),
        ("State.Data", "class", 2, 4, 0),
        ("State.Data.read", "method", 3, 3, 1),
        ("State.Tag", "class", 5, 5, 0),
        ("State.Tag.read", "method", 5, 5, 3),
        ("State.read", "method", 7, 7, 0),
    ]
    assert symbol(result, "State.Data").signature == "Data"


def test_wrapped_parameter_lists_read_as_one_line_signatures():
    """A parameter list wrapped one per line (rustfmt, prettier) reads `f(a: u8, b: u8)`, not `f( a: u8, b: u8, )`."""
    rust = parsed(
        "rust",
        """
        fn parse_recipe(
            &mut self,
            quiet: bool,
        ) -> Result<u8, [u8; 2]> {
            1
        }
    """,
    )
    assert [s.signature for s in rust.symbols] == ["fn parse_recipe(&mut self, quiet: bool) -> Result<u8, [u8; 2]>"]
    ts = parsed(
        "typescript",
        """
        export function pick(
          keys: [string, number],
          strict = false,
        ): void {}
    """,
    )
    assert [s.signature for s in ts.symbols] == ["export function pick(keys: [string, number], strict = false): void"]


RUST = """
use std::collections::{HashMap, HashSet};
use crate::a::b;
mod util;
const MAX: u32 = 10;
/// A server.
/// Really.
#[derive(Debug)]
pub struct Server { name: String }
enum Color { Red }
trait Shape: Display { fn area(&self) -> f64; }
type Id = u32;
impl Shape for Server {
    fn area(&self) -> f64 {
        // HACK: util::go is not reentrant
        helper(self.name); self.run(); util::go(); 0.0
    }
}
fn generic<T: Clone>(x: T, m: HashMap<Id, Server>) {}
"""


def test_rust_symbols_imports_references_comments():
    result = parsed("rust", RUST)
    assert result.error is None
    assert symbol_rows(result) == [
        ("MAX", "constant", 4, 4, None),
        ("Server", "class", 7, 8, None),
        ("Color", "enum", 9, 9, None),
        ("Shape", "interface", 10, 10, None),
        ("Shape.area", "method", 10, 10, 3),
        ("Id", "type_alias", 11, 11, None),
        ("Server.area", "method", 13, 16, 1),
        ("generic", "function", 18, 18, None),
    ]
    server = symbol(result, "Server")
    assert (server.docstring, server.decorators, server.signature) == (
        "A server.\nReally.",
        ("derive(Debug)",),
        "pub struct Server",
    )
    assert [(i.target, i.names) for i in result.imports] == [
        ("std::collections", ("HashMap", "HashSet")),
        ("crate::a", ("b",)),
        ("util", ()),
    ]
    assert references_of(result, "Server") == {("String", "annotation"), ("Shape", "base")}
    assert references_of(result, "Shape") == {("Display", "base")}
    assert references_of(result, "Server.area") == {("helper", "call"), ("self.run", "call"), ("util::go", "call")}
    assert references_of(result, "generic") >= {("Clone", "base"), ("HashMap", "annotation"), ("Id", "annotation")}
    assert ParsedComment(line=14, text="HACK: util::go is not reentrant", symbol=6) in result.comments


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("loop over items", False),
        ("increment counter", False),
        ("compute the total", False),
        ("encode as utf-8", False),
        ("TODO", False),
        ("workaround for a numpy bug", True),
        ("must be sorted before the merge", True),
        ("don't close the handle here", True),
        ("see #1234", True),
        ("regression from GH-12", True),
        ("https://github.com/org/repo/issues/77", True),
        ("legacy clients send latin-1", True),
        ("note: ordering matters", True),
        ("TODO: cache this, lookups are slow", True),
    ],
)
def test_is_rationale(text, expected):
    assert is_rationale(text) is expected


def test_language_of_paths():
    assert language_of("src/app/main.py") == "python"
    assert language_of("types/index.d.ts") == "typescript"
    assert language_of("ui/App.tsx") == "tsx"
    assert language_of("lib/x.mjs") == "javascript"
    assert language_of("cmd/server/main.go") == "go"
    assert language_of("src/lib.rs") == "rust"
    assert language_of("docs/README.md") == "markdown"
    assert language_of("Dockerfile") == "dockerfile"
    assert language_of("assets/logo.png") is None
    assert language_of("bin/tool") is None
    assert LANGUAGE_BY_EXTENSION["pyi"] == "python"
    assert parse_source("markdown", "# title") is None


def test_real_pandas_sources_parse():
    import pandas

    files = sorted(pathlib.Path(pandas.__file__).parent.rglob("*.py"))
    started = time.perf_counter()
    results = [parse_source("python", f.read_text(encoding="utf-8", errors="replace")) for f in files]
    elapsed = time.perf_counter() - started
    n_symbols = sum(len(r.symbols) for r in results)
    n_errors = sum(r.error is not None for r in results)
    print(f"parsed {len(files)} pandas files, {n_symbols} symbols, {n_errors} errors in {elapsed:.1f}s")
    assert len(files) > 500
    assert n_symbols > 20 * len(files)
    assert n_errors < 0.1 * len(files)
    assert sum(len(r.references) for r in results) > n_symbols
