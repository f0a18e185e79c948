"""Java for the tree-sitter walker: types and members, `static final` constants, calls, imports."""

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
    is_jsdoc,
    make_spec,
)

_JAVA_KINDS = {
    "class_declaration": "class",
    "record_declaration": "class",
    "interface_declaration": "interface",
    "annotation_type_declaration": "interface",
    "enum_declaration": "enum",
    "method_declaration": "method",
    "constructor_declaration": "method",
    "compact_constructor_declaration": "method",
}


def _java_declare(node: Node, walker: Walker) -> Decl | None:
    kind = _JAVA_KINDS.get(node.type)
    name = node.child_by_field_name("name")
    if kind is not None and name is not None:
        bases = []
        for child in node.children:
            if child.type in ("superclass", "super_interfaces", "extends_interfaces"):
                bases.extend(
                    t
                    for t in descendants(child)
                    if t.type in ("type_identifier", "scoped_type_identifier")
                    and t.parent.type != "scoped_type_identifier"
                )
        return Decl(walker.text(name), kind, node, node.child_by_field_name("body"), bases=bases)
    if node.type == "enum_constant" and name is not None and node.child_by_field_name("body") is not None:
        # a constant with a body is a class of its own (state machines: `Data { void read(...) }`): its methods are
        # `Enum.Data.read`, not one of seventy `Enum.read`
        return Decl(walker.text(name), "class", node, node.child_by_field_name("body"))
    if node.type == "variable_declarator" and node.parent is not None and node.parent.type == "field_declaration":
        modifiers = next((c for c in node.parent.children if c.type == "modifiers"), None)
        words = walker.text(modifiers).split() if modifiers is not None else []
        text = walker.text(name) if name is not None else ""
        if "static" in words and "final" in words and CONSTANT_NAME.match(text):
            outer = node.parent if node.parent.named_child_count <= 3 else node
            return Decl(text, "constant", outer, None)
    return None


_JAVA_OBJECT_PARTS = frozenset({"identifier", "this", "super", "field_access"})


def _make_java_calls(source_of: Callable[[], bytes]):
    def calls(node: Node) -> str | None:
        source = source_of()
        if node.type == "method_invocation":
            name = node.child_by_field_name("name")
            obj = node.child_by_field_name("object")
            method = source[name.start_byte : name.end_byte].decode()
            if obj is None:
                return method
            prefix = dotted_callee(obj, source, _JAVA_OBJECT_PARTS)
            return f"{prefix}.{method}" if prefix else None
        if node.type == "object_creation_expression":
            type_node = node.child_by_field_name("type")
            if type_node is not None and type_node.type == "generic_type":
                type_node = type_node.named_children[0]
            if type_node is not None and type_node.type in ("type_identifier", "scoped_type_identifier"):
                return source[type_node.start_byte : type_node.end_byte].decode()
        return None

    return calls


def _java_imports(node: Node, source: bytes) -> list[ParsedImport]:
    if node.type != "import_declaration":
        return []
    parts = [
        source[c.start_byte : c.end_byte].decode()
        for c in node.named_children
        if c.type in ("scoped_identifier", "identifier", "asterisk")
    ]
    return [ParsedImport(target=".".join(parts), line=node.start_point[0] + 1)] if parts else []


# spec factory (file source bytes -> Spec) for Java
java_spec = make_spec(
    _java_declare,
    _make_java_calls,
    _java_imports,
    {"line_comment", "block_comment"},
    is_jsdoc,
    bound_types=frozenset({"superclass", "type_list", "extends_interfaces"}),
)
