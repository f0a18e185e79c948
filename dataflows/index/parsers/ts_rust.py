"""Rust for the tree-sitter walker: items, `impl Trait for Type` receivers, calls, `use` / `mod` imports."""

from __future__ import annotations

from collections.abc import Callable

from tree_sitter import Node

from cra.dataflows.index.parsers.models import ParsedImport
from cra.dataflows.index.parsers.ts_common import WHITESPACE, Decl, Walker, dotted_callee, make_spec

_RUST_KINDS = {
    "function_item": "function",
    "function_signature_item": "function",
    "struct_item": "class",
    "union_item": "class",
    "enum_item": "enum",
    "trait_item": "interface",
    "type_item": "type_alias",
    "const_item": "constant",
    "static_item": "constant",
}


def _rust_declare(node: Node, walker: Walker) -> Decl | None:
    kind = _RUST_KINDS.get(node.type)
    name = node.child_by_field_name("name")
    if kind is None or name is None:
        return None
    bases = []
    if node.type == "trait_item":
        bounds = node.child_by_field_name("bounds")
        bases = [b for b in bounds.named_children] if bounds is not None else []
    return Decl(walker.text(name), kind, node, node.child_by_field_name("body"), bases=bases)


def _rust_impl_type(node: Node, walker: Walker) -> str | None:
    """`impl<T> Trait for Type<T>` -> "Type" (and remember Trait as a base of Type)."""
    type_node = node.child_by_field_name("type")
    while type_node is not None and type_node.type in ("generic_type", "reference_type", "scoped_type_identifier"):
        type_node = type_node.child_by_field_name("type") or type_node.child_by_field_name("name")
    if type_node is None:
        return None
    type_name = walker.text(type_node)
    trait = node.child_by_field_name("trait")
    if trait is not None:
        walker.add_type_base(type_name, WHITESPACE.sub("", walker.text(trait)))
    return type_name


_RUST_CALLEE_PARTS = frozenset(
    {"identifier", "scoped_identifier", "field_expression", "field_identifier", "self", "crate", "super"}
)


def _make_rust_calls(source_of: Callable[[], bytes]):
    def calls(node: Node) -> str | None:
        if node.type != "call_expression":
            return None
        callee = node.child_by_field_name("function")
        if callee is not None and callee.type == "generic_function":
            callee = callee.child_by_field_name("function")
        return dotted_callee(callee, source_of(), _RUST_CALLEE_PARTS)

    return calls


def _rust_imports(node: Node, source: bytes) -> list[ParsedImport]:
    line = node.start_point[0] + 1
    if node.type == "mod_item" and node.child_by_field_name("body") is None:
        name = node.child_by_field_name("name")
        return [ParsedImport(target=source[name.start_byte : name.end_byte].decode(), line=line)]
    if node.type != "use_declaration":
        return []
    argument = node.child_by_field_name("argument")
    if argument is None:
        return []

    def text(n: Node) -> str:
        return WHITESPACE.sub("", source[n.start_byte : n.end_byte].decode())

    if argument.type == "scoped_use_list":
        path = argument.child_by_field_name("path")
        items = argument.child_by_field_name("list")
        names = tuple(_rust_use_name(c, text) for c in items.named_children) if items is not None else ()
        return [ParsedImport(target=text(path) if path is not None else "", names=names, line=line)]
    if argument.type == "use_list":  # `use {crate::{a::A, b::B}, std::fmt};`: each item a path from the root
        return [
            ParsedImport(target="", names=tuple(_rust_use_name(c, text) for c in argument.named_children), line=line)
        ]
    if argument.type == "use_wildcard":
        return [ParsedImport(target=text(argument).removesuffix("::*"), names=("*",), line=line)]
    if argument.type == "use_as_clause":
        argument = argument.child_by_field_name("path")
    if argument is not None and argument.type == "scoped_identifier":
        path, name = argument.child_by_field_name("path"), argument.child_by_field_name("name")
        return [ParsedImport(target=text(path) if path else "", names=(text(name),), line=line)]
    return [ParsedImport(target=text(argument), line=line)] if argument is not None else []


def _rust_use_name(item: Node, text: Callable[[Node], str]) -> str:
    if item.type == "use_as_clause":
        item = item.child_by_field_name("path") or item
    return text(item)


def _is_rust_doc(raw: str) -> bool:
    return raw.startswith("///") or raw.startswith("/**")


# spec factory (file source bytes -> Spec) for Rust
rust_spec = make_spec(
    _rust_declare,
    _make_rust_calls,
    _rust_imports,
    {"line_comment", "block_comment"},
    _is_rust_doc,
    bound_types=frozenset({"trait_bounds"}),
    qualifier_types=frozenset({"impl_item"}),  # methods inside are "Type.method"
    qualifier=_rust_impl_type,
)
