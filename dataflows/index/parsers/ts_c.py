"""C and C++ for the tree-sitter walker: functions and prototypes, records, typedefs, macros, namespaces,
`Class::method` qualifiers, calls and `#include "..."` imports."""

from __future__ import annotations

from collections.abc import Callable

from tree_sitter import Node

from cra.dataflows.index.parsers.models import ParsedImport
from cra.dataflows.index.parsers.ts_common import (
    CONSTANT_NAME,
    WHITESPACE,
    Decl,
    Walker,
    dotted_callee,
    make_spec,
    string_value,
)

_C_RECORDS = {
    "struct_specifier": "class",
    "union_specifier": "class",
    "class_specifier": "class",
    "enum_specifier": "enum",
}
_C_NAMES = frozenset(
    {"identifier", "field_identifier", "qualified_identifier", "destructor_name", "operator_name", "template_function"}
)
_C_CALLEE_PARTS = frozenset(
    {"identifier", "field_expression", "field_identifier", "qualified_identifier", "namespace_identifier", "this"}
)


def _c_declare(node: Node, walker: Walker) -> Decl | None:
    kind = node.type
    if kind == "function_definition":
        if _c_is_macro_class(node):
            return _c_macro_class(node, walker)
        return _c_function(node, node.child_by_field_name("body"), walker)
    if kind in ("declaration", "field_declaration"):  # prototypes: header API, class method declarations
        if _c_in_function_body(node) or _c_is_static(node, walker):
            return None  # local declarations; `static` prototypes forward-declare a definition in the same file
        return _c_function(node, None, walker)
    if kind in _C_RECORDS:
        return _c_record(node, walker)
    if kind == "type_definition":  # `typedef int Id;` (a typedef'd struct with a body is declared by the struct)
        alias, type_node = node.child_by_field_name("declarator"), node.child_by_field_name("type")
        has_body = type_node is not None and type_node.child_by_field_name("body") is not None
        if alias is not None and alias.type == "type_identifier" and not has_body:
            return Decl(walker.text(alias), "type_alias", node, None)
        return None
    if kind == "alias_declaration":  # C++ `using Id = int;`
        name = node.child_by_field_name("name")
        return Decl(walker.text(name), "type_alias", _c_outer(node), None) if name is not None else None
    if kind == "preproc_function_def":  # bugs often live in macros
        name = node.child_by_field_name("name")
        return Decl(walker.text(name), "function", node, node.child_by_field_name("value")) if name else None
    if kind == "preproc_def" and node.child_by_field_name("value") is not None:
        name = node.child_by_field_name("name")
        if name is not None and CONSTANT_NAME.match(walker.text(name)):
            return Decl(walker.text(name), "constant", node, None)
    return None


def _c_is_macro_class(node: Node) -> bool:
    """`class EXPORT_MACRO Name : public Base {...}` reads as a function definition typed `class EXPORT_MACRO`."""
    type_node, declarator = node.child_by_field_name("type"), node.child_by_field_name("declarator")
    return (
        type_node is not None
        and type_node.type in ("class_specifier", "struct_specifier")
        and type_node.child_by_field_name("body") is None
        and declarator is not None
        and declarator.type == "identifier"
    )


def _c_macro_class(node: Node, walker: Walker) -> Decl:
    bases = [
        b
        for error in node.children
        if error.type == "ERROR"
        for b in error.named_children
        if b.type in ("identifier", "type_identifier", "qualified_identifier", "template_type")
    ]
    bases = [b.child_by_field_name("name") or b if b.type == "template_type" else b for b in bases]
    name = walker.text(node.child_by_field_name("declarator"))
    return Decl(
        name,
        _C_RECORDS[node.child_by_field_name("type").type],
        _c_outer(node),
        node.child_by_field_name("body"),
        bases=bases,
    )


def _c_in_function_body(node: Node) -> bool:
    """Inside the body of a real function definition (not of a misread `class MACRO Name {...}`)."""
    parent = node.parent
    while parent is not None and parent.type in ("labeled_statement", "compound_statement"):
        if parent.type == "compound_statement":
            owner = parent.parent
            return owner is None or owner.type != "function_definition" or not _c_is_macro_class(owner)
        parent = parent.parent
    return False


def _c_is_static(node: Node, walker: Walker) -> bool:
    return any(c.type == "storage_class_specifier" and walker.text(c) == "static" for c in node.children)


def _c_outer(node: Node) -> Node:
    """A declaration with its `template <...>` prefix."""
    while node.parent is not None and node.parent.type == "template_declaration":
        node = node.parent
    return node


def _c_function(node: Node, body: Node | None, walker: Walker) -> Decl | None:
    """A function definition or prototype: `int f(void)`, `Class::method`, `ns::Class::method` (qualifier)."""
    name_node = _c_function_name(node.child_by_field_name("declarator"))
    if name_node is None:
        return None
    qualifier: list[str] = []
    while name_node is not None and name_node.type == "qualified_identifier":
        scope = name_node.child_by_field_name("scope")
        if scope is not None:
            scope_name = scope.child_by_field_name("name") if scope.type == "template_type" else scope
            qualifier.append(walker.text(scope_name if scope_name is not None else scope))
        name_node = name_node.child_by_field_name("name")
    if name_node is None:
        return None
    if name_node.type == "template_function":
        name_node = name_node.child_by_field_name("name") or name_node
    return Decl(walker.text(name_node), "function", _c_outer(node), body, qualifier=".".join(qualifier) or None)


def _c_function_name(declarator: Node | None) -> Node | None:
    """The name inside a function declarator chain (pointer / reference / parenthesised); None for variables,
    function pointers included (their name is not directly inside a function_declarator)."""
    node, parent_type = declarator, None
    while node is not None:
        if node.type in _C_NAMES:
            return node if parent_type == "function_declarator" else None
        parent_type = node.type
        inner = node.child_by_field_name("declarator")
        if inner is None and node.type in ("parenthesized_declarator", "reference_declarator", "attributed_declarator"):
            inner = next((c for c in node.named_children if c.type != "attribute_declaration"), None)
        node = inner
    return None


def _c_record(node: Node, walker: Walker) -> Decl | None:
    """struct / union / class / enum with a body; `typedef struct {..} Name` is named by the typedef."""
    body = node.child_by_field_name("body")
    if body is None:
        return None
    kind = _C_RECORDS[node.type]
    name = node.child_by_field_name("name")
    bases = [
        b.child_by_field_name("name") if b.type == "template_type" else b
        for c in node.children
        if c.type == "base_class_clause"
        for b in c.named_children
        if b.type in ("type_identifier", "qualified_identifier", "template_type")
    ]
    parent = node.parent
    if parent is not None and parent.type == "type_definition":
        alias = parent.child_by_field_name("declarator")
        if alias is not None and alias.type == "type_identifier":
            return Decl(walker.text(alias), kind, parent, body, bases=[b for b in bases if b is not None])
    if name is None:
        return None
    text = walker.text(name).replace("::", ".")
    return Decl(text.rpartition(".")[2], kind, _c_outer(node), body, bases=[b for b in bases if b is not None])


def _cpp_namespace(node: Node) -> tuple[str | None, bool]:
    name = node.child_by_field_name("name")
    if name is None:  # anonymous namespace
        return None, True
    return WHITESPACE.sub("", name.text.decode("utf-8", errors="replace")).replace("::", "."), True


def _make_c_calls(source_of: Callable[[], bytes]):
    def calls(node: Node) -> str | None:
        if node.type == "call_expression":
            callee = node.child_by_field_name("function")
            if callee is not None and callee.type == "template_function":
                callee = callee.child_by_field_name("name")
            name = dotted_callee(callee, source_of(), _C_CALLEE_PARTS)
        elif node.type == "new_expression":
            type_node = node.child_by_field_name("type")
            if type_node is not None and type_node.type == "template_type":
                type_node = type_node.child_by_field_name("name")
            name = dotted_callee(type_node, source_of(), _C_CALLEE_PARTS | {"type_identifier"})
        else:
            return None
        return name.replace("->", ".").replace("::", ".") if name else None

    return calls


def _c_imports(node: Node, source: bytes) -> list[ParsedImport]:
    """`#include "x.h"` only: `<...>` system headers are not repository files."""
    if node.type != "preproc_include":
        return []
    path = node.child_by_field_name("path")
    if path is None or path.type != "string_literal":
        return []
    return [ParsedImport(target=string_value(path, source), line=node.start_point[0] + 1)]


def _is_any_comment(raw: str) -> bool:
    """C / C++ conventions vary (`/** */`, `///`, `/* */`, `//`): any comment right above a declaration documents it."""
    return True


# spec factory (file source bytes -> Spec) for C, then C++
c_spec = make_spec(_c_declare, _make_c_calls, _c_imports, {"comment"}, _is_any_comment)
cpp_spec = make_spec(
    _c_declare,
    _make_c_calls,
    _c_imports,
    {"comment"},
    _is_any_comment,
    bound_types=frozenset({"base_class_clause"}),
    namespace_types=frozenset({"namespace_definition"}),
    namespace=_cpp_namespace,
)
