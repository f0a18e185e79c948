"""C# for the tree-sitter walker: types and members, `const` fields, namespaces, calls, `using` imports."""

from __future__ import annotations

from collections.abc import Callable

from tree_sitter import Node

from cra.dataflows.index.parsers.models import ParsedImport
from cra.dataflows.index.parsers.ts_common import WHITESPACE, Decl, Walker, dotted_callee, make_spec

_CS_KINDS = {
    "class_declaration": "class",
    "record_declaration": "class",
    "record_struct_declaration": "class",
    "struct_declaration": "class",
    "interface_declaration": "interface",
    "enum_declaration": "enum",
    "method_declaration": "method",
    "constructor_declaration": "method",
    "destructor_declaration": "method",
    "property_declaration": "method",
    "local_function_statement": "function",
    "delegate_declaration": "type_alias",
}
_CS_BASE_TYPES = frozenset({"identifier", "qualified_name", "generic_name"})
_CS_CALLEE_PARTS = frozenset({"identifier", "member_access_expression", "this", "base"})


def _cs_declare(node: Node, walker: Walker) -> Decl | None:
    kind = _CS_KINDS.get(node.type)
    name = node.child_by_field_name("name")
    if kind is not None and name is not None:
        bases = [
            b.named_children[0] if b.type == "generic_name" and b.named_child_count else b
            for c in node.children
            if c.type == "base_list"
            for b in c.named_children
            if b.type in _CS_BASE_TYPES
        ]
        body = node.child_by_field_name("body") or node.child_by_field_name("accessors")
        return Decl(walker.text(name), kind, node, body, bases=bases)
    if node.type == "variable_declarator" and name is not None:
        field = node.parent.parent if node.parent is not None else None
        if field is not None and field.type == "field_declaration":
            if any(c.type == "modifier" and walker.text(c) == "const" for c in field.children):
                return Decl(walker.text(name), "constant", field if field.named_child_count <= 4 else node, None)
    return None


def _cs_namespace(node: Node) -> tuple[str | None, bool]:
    name = node.child_by_field_name("name")
    text = WHITESPACE.sub("", name.text.decode("utf-8", errors="replace")) if name is not None else None
    return text, node.type == "namespace_declaration"


def _make_cs_calls(source_of: Callable[[], bytes]):
    def calls(node: Node) -> str | None:
        if node.type == "invocation_expression":
            callee = node.child_by_field_name("function")
            if callee is not None and callee.type == "generic_name" and callee.named_child_count:
                callee = callee.named_children[0]
            return dotted_callee(callee, source_of(), _CS_CALLEE_PARTS)
        if node.type == "object_creation_expression":
            type_node = node.child_by_field_name("type")
            if type_node is not None and type_node.type == "generic_name" and type_node.named_child_count:
                type_node = type_node.named_children[0]
            return dotted_callee(type_node, source_of(), frozenset({"identifier", "qualified_name"}))
        return None

    return calls


def _cs_imports(node: Node, source: bytes) -> list[ParsedImport]:
    """`using A.B;` -> target "A.B"; `using X = A.B.C;` -> ("A.B", "C as X"); `using static A.B.C;` -> ("A.B.C", "*")."""
    if node.type != "using_directive":
        return []
    target = next((c for c in reversed(node.named_children) if c.type in ("qualified_name", "identifier")), None)
    if target is None:
        return []
    line = node.start_point[0] + 1
    dotted = WHITESPACE.sub("", source[target.start_byte : target.end_byte].decode("utf-8", errors="replace"))
    alias = node.child_by_field_name("name")
    if alias is not None and alias.id != target.id:
        prefix, _, last = dotted.rpartition(".")
        alias_text = source[alias.start_byte : alias.end_byte].decode()
        return [ParsedImport(target=prefix, names=(f"{last} as {alias_text}",), line=line)]
    if any(c.type == "static" for c in node.children):
        return [ParsedImport(target=dotted, names=("*",), line=line)]
    return [ParsedImport(target=dotted, line=line)]


def _is_csharp_doc(raw: str) -> bool:
    return raw.startswith("///") or raw.startswith("/**")


# spec factory (file source bytes -> Spec) for C#
csharp_spec = make_spec(
    _cs_declare,
    _make_cs_calls,
    _cs_imports,
    {"comment"},
    _is_csharp_doc,
    namespace_types=frozenset({"namespace_declaration", "file_scoped_namespace_declaration"}),
    namespace=_cs_namespace,
)
