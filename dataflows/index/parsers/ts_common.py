"""What the tree-sitter walker and the per-language modules share: `Decl`, `Spec`, `make_spec`, the `Walker`
interface a language module may use, and small node helpers. The language modules import this module, never
`treesitter.py` (which finds their specs through the registry `cra.dataflows.index.languages`): no import cycle."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from tree_sitter import Node

from cra.dataflows.index.parsers.models import ParsedImport

CONSTANT_NAME = re.compile(r"^_*[A-Z][A-Z0-9_]*$")
WHITESPACE = re.compile(r"\s+")


class Walker(Protocol):
    """What a language module may ask of the walk over one file (implemented in `treesitter.py`)."""

    source: bytes

    def text(self, node: Node) -> str:
        """The source text of a node."""
        ...

    def add_type_base(self, type_name: str, base: str) -> None:
        """Record base as a base of type_name, declared outside the type (Rust `impl Trait for Type`)."""
        ...


@dataclass
class Decl:
    """What a declaring node contributes: name, kind, the node whose lines it spans, its body."""

    name: str
    kind: str
    outer: Node
    body: Node | None
    qualifier: str | None = None  # Go receiver / C++ `Class::` / Ruby `Outer::`: qualified name "Type.method"
    bases: list[Node | str] = field(default_factory=list)  # base type nodes, or names already normalised
    makes_class: bool = (
        False  # the qualifier's own symbol is a class: JS `Foo.prototype.bar = function` (constructor Foo)
    )


@dataclass(frozen=True)
class Spec:
    """One language's rules for the walker, bound to the source of one file (see `make_spec`)."""

    declare: Callable[[Node, Walker], Decl | None]
    calls: Callable[[Node], str | None]
    imports: Callable[[Node], list[ParsedImport]]
    comment_types: frozenset[str]
    doc_comment: Callable[[str], bool]
    bound_types: frozenset[str] = frozenset()  # node types whose type names are bases, not annotations
    builtin_types: frozenset[str] = frozenset()  # predeclared type names not worth a reference
    namespace_types: frozenset[str] = frozenset()  # node types that open a namespace
    namespace: Callable[[Node], tuple[str | None, bool]] = lambda node: (None, False)  # (dotted name, is block)
    mixin_types: frozenset[str] = frozenset()  # node types that may add bases to the enclosing class
    mixins: Callable[[Node], list[str]] = lambda node: []  # Ruby `include M`, PHP `use Trait;`
    qualifier_types: frozenset[str] = frozenset()  # node types whose members are qualified by a type (Rust `impl`)
    qualifier: Callable[[Node, Walker], str | None] = lambda node, walker: None  # the name of that type


def string_value(node: Node | None, walker_source: bytes) -> str | None:
    """The text of a string literal node without its quotes; None for no node."""
    if node is None:
        return None
    raw = walker_source[node.start_byte : node.end_byte].decode("utf-8", errors="replace")
    return raw.strip("\"'`")


def dotted_callee(node: Node | None, source: bytes, parts: frozenset[str]) -> str | None:
    """Text of a callee made only of identifiers / this / property access; None for anything else."""
    if node is None:
        return None
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type not in parts:
            return None
        stack.extend(current.named_children)
    return WHITESPACE.sub("", source[node.start_byte : node.end_byte].decode("utf-8", errors="replace"))


def descendants(node: Node):
    """The node and every node below it, in source order."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


def make_spec(
    declare,
    make_calls,
    imports,
    comment_types: set[str],
    doc_comment,
    bound_types: frozenset[str] = frozenset(),
    builtin_types: frozenset[str] = frozenset(),
    **namespaces_mixins_and_qualifiers,
) -> Callable[[bytes], Spec]:
    """A language's spec factory: given one file's source, the `Spec` whose call and import readers read it."""

    def bind(source: bytes) -> Spec:
        return Spec(
            declare=declare,
            calls=make_calls(lambda: source),
            imports=lambda node: imports(node, source),
            comment_types=frozenset(comment_types),
            doc_comment=doc_comment,
            bound_types=bound_types,
            builtin_types=builtin_types,
            **namespaces_mixins_and_qualifiers,
        )

    return bind


def is_jsdoc(raw: str) -> bool:
    """Whether a comment is a JSDoc / Javadoc / PHPDoc block (`/** ... */`): a doc comment."""
    return raw.startswith("/**")
