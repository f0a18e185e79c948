"""Go for the tree-sitter walker: functions, methods qualified by receiver type, types, constants, imports."""

from __future__ import annotations

from collections.abc import Callable

from tree_sitter import Node

from cra.dataflows.index.parsers.models import ParsedImport
from cra.dataflows.index.parsers.ts_common import (
    CONSTANT_NAME,
    Decl,
    Walker,
    descendants,
    dotted_callee,
    make_spec,
    string_value,
)

_GO_BUILTIN_TYPES = frozenset(
    "any bool byte comparable complex64 complex128 error float32 float64 int int8 int16 int32 int64 rune string "
    "uint uint8 uint16 uint32 uint64 uintptr".split()
)


def _go_declare(node: Node, walker: Walker) -> Decl | None:
    kind = node.type
    name = node.child_by_field_name("name")
    if kind == "function_declaration" and name is not None:
        return Decl(walker.text(name), "function", node, node.child_by_field_name("body"))
    if kind == "method_declaration" and name is not None:
        receiver = _go_receiver_type(node.child_by_field_name("receiver"), walker)
        return Decl(walker.text(name), "method", node, node.child_by_field_name("body"), qualifier=receiver)
    if kind in ("type_spec", "type_alias") and name is not None:
        declaration = node.parent
        outer = declaration if declaration is not None and declaration.named_child_count == 1 else node
        type_node = node.child_by_field_name("type")
        type_kind = type_node.type if type_node is not None else ""
        symbol_kind = {"struct_type": "class", "interface_type": "interface"}.get(type_kind, "type_alias")
        body = None
        if type_node is not None and type_kind in ("struct_type", "interface_type"):
            body = next((c for c in type_node.children if c.type in ("field_declaration_list", "{")), None)
        return Decl(walker.text(name), symbol_kind, outer, body)
    if kind == "const_spec" and name is not None:
        text = walker.text(name)
        if CONSTANT_NAME.match(text) or text[:1].isupper():
            declaration = node.parent
            outer = declaration if declaration is not None and declaration.named_child_count == 1 else node
            return Decl(text, "constant", outer, None)
    return None


def _go_receiver_type(receiver: Node | None, walker: Walker) -> str | None:
    if receiver is None:
        return None
    for node in descendants(receiver):
        if node.type == "type_identifier":
            return walker.text(node)
    return None


_GO_CALLEE_PARTS = frozenset({"identifier", "selector_expression", "field_identifier"})


def _make_go_calls(source_of: Callable[[], bytes]):
    def calls(node: Node) -> str | None:
        if node.type == "call_expression":
            return dotted_callee(node.child_by_field_name("function"), source_of(), _GO_CALLEE_PARTS)
        return None

    return calls


def _go_imports(node: Node, source: bytes) -> list[ParsedImport]:
    if node.type != "import_spec":
        return []
    target = string_value(node.child_by_field_name("path"), source)
    return [ParsedImport(target=target, line=node.start_point[0] + 1)] if target else []


def _is_line_comment(raw: str) -> bool:
    return raw.startswith("//") and not raw.startswith("///")


# spec factory (file source bytes -> Spec) for Go
go_spec = make_spec(
    _go_declare, _make_go_calls, _go_imports, {"comment"}, _is_line_comment, builtin_types=_GO_BUILTIN_TYPES
)
