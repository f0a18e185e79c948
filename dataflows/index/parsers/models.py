"""What a language parser returns for one file: plain records, local indices, no ids yet.

The index dataflow turns these into the KB tables of `cra.dataflows.index.schema`, assigning
file_id / symbol_id; `parent` and `symbol` fields are indices into `ParsedFile.symbols`.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ParsedSymbol:
    name: str
    qualified_name: str  # dotted within the file: "Outer.method"
    kind: str  # function|method|class|interface|type_alias|enum|constant
    start_line: int  # 1-based, inclusive, decorators/attributes included
    end_line: int
    signature: str  # header text up to the body, e.g. "def f(a: int) -> str:" / "func (s *S) Run(x int) error"
    docstring: str | None = None  # python docstring, or the doc comment right above the symbol
    decorators: tuple[str, ...] = ()
    parent: int | None = None  # index of the enclosing symbol in ParsedFile.symbols


@dataclass(frozen=True)
class ParsedComment:
    line: int
    text: str  # without the comment markers
    symbol: int | None  # innermost enclosing symbol index, None at module level


@dataclass(frozen=True)
class ParsedImport:
    target: str  # module / path as written ("pkg.mod", "./util", "github.com/x/y", "com.acme.Foo")
    names: tuple[str, ...] = ()  # imported names, e.g. `from pkg import a, b` -> ("a", "b")
    level: int = 0  # python relative-import level
    line: int = 0


@dataclass(frozen=True)
class ParsedReference:
    symbol: int  # index of the referring symbol
    name: str  # referenced identifier as written, possibly dotted: "helper", "os.path.join", "Base"
    kind: str  # call|base|annotation


@dataclass(frozen=True)
class ParsedFile:
    symbols: list[ParsedSymbol] = field(default_factory=list)
    comments: list[ParsedComment] = field(default_factory=list)
    imports: list[ParsedImport] = field(default_factory=list)
    references: list[ParsedReference] = field(default_factory=list)
    error: str | None = None  # "SyntaxError: invalid syntax (line 3)"; partial results may still be present
