"""What the tree-sitter walker and the per-language modules share: `_Decl`, `_Spec`, the spec builder and
small node helpers (kept apart from `treesitter.py` so the language modules do not import it back)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from tree_sitter import Node

from dataflows.index.parsers.models import ParsedImport

if TYPE_CHECKING:
    from dataflows.index.parsers.treesitter import _Walker

_CONSTANT_NAME = re.compile(r"^_*[A-Z][A-Z0-9_]*$")
_WS = re.compile(r"\s+")


@dataclass
class _Decl:
    """What a declaring node contributes: name, kind, the node whose lines it spans, its body."""

    name: str
    kind: str
    outer: Node
    body: Node | None
    qualifier: str | None = None  # Go receiver / C++ `Class::` / Ruby `Outer::`: qualified name "Type.method"
    bases: list[Node | str] = field(default_factory=list)  # base type nodes, or names already normalised


@dataclass(frozen=True)
class _Spec:
    declare: Callable[[Node, "_Walker"], _Decl | None]
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


def _string_value(node: Node | None, walker_source: bytes) -> str | None:
    if node is None:
        return None
    raw = walker_source[node.start_byte : node.end_byte].decode("utf-8", errors="replace")
    return raw.strip("\"'`")


def _dotted_callee(node: Node | None, source: bytes, parts: frozenset[str]) -> str | None:
    """Text of a callee made only of identifiers / this / property access; None for anything else."""
    if node is None:
        return None
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type not in parts:
            return None
        stack.extend(current.named_children)
    return _WS.sub("", source[node.start_byte : node.end_byte].decode("utf-8", errors="replace"))


def _descendants(node: Node):
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


def _spec(
    declare,
    make_calls,
    imports,
    comment_types: set[str],
    doc_comment,
    bound_types: frozenset[str] = frozenset(),
    builtin_types: frozenset[str] = frozenset(),
    **namespaces_and_mixins,
) -> Callable[[bytes], _Spec]:
    def bind(source: bytes) -> _Spec:
        return _Spec(
            declare=declare,
            calls=make_calls(lambda: source),
            imports=lambda node: imports(node, source),
            comment_types=frozenset(comment_types),
            doc_comment=doc_comment,
            bound_types=bound_types,
            builtin_types=builtin_types,
            **namespaces_and_mixins,
        )

    return bind


def _is_jsdoc(raw: str) -> bool:
    return raw.startswith("/**")
