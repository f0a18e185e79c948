"""JavaScript / TypeScript / TSX for the tree-sitter walker: declarations, calls, `import` / `require` imports."""

from __future__ import annotations

from typing import Callable

from tree_sitter import Node

from dataflows.index.parsers.models import ParsedImport
from dataflows.index.parsers.ts_common import (
    CONSTANT_NAME,
    Decl,
    Walker,
    dotted_callee,
    is_jsdoc,
    make_spec,
    string_value,
)


_FUNCTION_VALUES = frozenset(
    {"arrow_function", "function_expression", "function", "generator_function", "generator_function_expression"}
)


def _js_declare(node: Node, walker: Walker) -> Decl | None:
    decl = _js_declaration(node, walker)
    if decl is not None and decl.outer.parent is not None and decl.outer.parent.type == "export_statement":
        decl.outer = decl.outer.parent
    return decl


def _js_declaration(node: Node, walker: Walker) -> Decl | None:
    kind = node.type
    name = node.child_by_field_name("name")
    if kind in ("function_declaration", "generator_function_declaration", "function_signature"):
        return Decl(walker.text(name), "function", node, node.child_by_field_name("body")) if name else None
    if kind == "method_definition":
        return Decl(walker.text(name), "method", node, node.child_by_field_name("body")) if name else None
    if kind in ("class_declaration", "abstract_class_declaration", "class") and name is not None:
        bases = []
        for child in node.children:
            if child.type == "class_heritage":
                bases = [
                    b
                    for clause in child.named_children
                    for b in (clause.named_children if clause.type.endswith("_clause") else [clause])
                    if b.type in ("identifier", "member_expression", "type_identifier", "nested_type_identifier", "generic_type")
                ]
        return Decl(walker.text(name), "class", node, node.child_by_field_name("body"), bases=bases)
    if kind == "interface_declaration" and name is not None:
        bases = [b for c in node.children if c.type == "extends_type_clause" for b in c.named_children]
        return Decl(walker.text(name), "interface", node, node.child_by_field_name("body"), bases=bases)
    if kind == "type_alias_declaration" and name is not None:
        return Decl(walker.text(name), "type_alias", node, None)
    if kind == "enum_declaration" and name is not None:
        return Decl(walker.text(name), "enum", node, node.child_by_field_name("body"))
    if kind == "variable_declarator" and name is not None and name.type == "identifier":
        return _js_variable(node, name, walker)
    return None


def _js_variable(node: Node, name: Node, walker: Walker) -> Decl | None:
    """`const f = () => ...` is a function; a top-level `const UPPER = ...` is a constant."""
    value = node.child_by_field_name("value")
    declaration = node.parent
    outer = declaration if declaration is not None and declaration.named_child_count == 1 else node
    if value is not None and value.type in _FUNCTION_VALUES:
        return Decl(walker.text(name), "function", outer, value.child_by_field_name("body"))
    at_top = declaration is not None and declaration.type == "lexical_declaration" and _js_is_top_level(declaration)
    if at_top and CONSTANT_NAME.match(walker.text(name)) and walker.text(declaration).startswith("const"):
        return Decl(walker.text(name), "constant", outer, None)
    return None


def _js_is_top_level(declaration: Node) -> bool:
    parent = declaration.parent
    if parent is not None and parent.type == "export_statement":
        parent = parent.parent
    return parent is not None and parent.type == "program"


_JS_CALLEE_PARTS = frozenset(
    {"identifier", "this", "super", "member_expression", "property_identifier", "private_property_identifier"}
)


def _make_js_calls(source_of: Callable[[], bytes]):
    def calls(node: Node) -> str | None:
        if node.type == "call_expression":
            callee = node.child_by_field_name("function")
            if callee is None or callee.type == "import":
                return None
            name = dotted_callee(callee, source_of(), _JS_CALLEE_PARTS)
            return None if name == "require" else name
        if node.type == "new_expression":
            return dotted_callee(node.child_by_field_name("constructor"), source_of(), _JS_CALLEE_PARTS)
        return None

    return calls


def _js_imports(node: Node, source: bytes) -> list[ParsedImport]:
    kind = node.type
    line = node.start_point[0] + 1
    if kind in ("import_statement", "export_statement"):
        target = string_value(node.child_by_field_name("source"), source)
        if target is None:
            return []
        names = []
        stack = list(node.named_children)
        while stack:
            child = stack.pop(0)
            if child.type in ("import_specifier", "export_specifier"):
                names.append(source[child.child_by_field_name("name").start_byte : child.child_by_field_name("name").end_byte].decode())
            elif child.type == "namespace_import" or child.type == "namespace_export":
                names.append("*")
            elif child.type == "identifier" and child.parent is not None and child.parent.type == "import_clause":
                names.append(source[child.start_byte : child.end_byte].decode())
            elif child.type in ("import_clause", "named_imports", "export_clause"):
                stack.extend(child.named_children)
        return [ParsedImport(target=target, names=tuple(names), line=line)]
    if kind == "call_expression":
        callee = node.child_by_field_name("function")
        args = node.child_by_field_name("arguments")
        if callee is None or args is None or args.named_child_count != 1 or args.named_children[0].type != "string":
            return []
        is_require = callee.type == "identifier" and source[callee.start_byte : callee.end_byte] == b"require"
        if not (is_require or callee.type == "import"):
            return []
        names: tuple[str, ...] = ()
        parent = node.parent
        if parent is not None and parent.type == "variable_declarator":
            pattern = parent.child_by_field_name("name")
            if pattern is not None and pattern.type == "identifier":
                names = (source[pattern.start_byte : pattern.end_byte].decode(),)
            elif pattern is not None and pattern.type == "object_pattern":
                names = tuple(
                    source[c.start_byte : c.end_byte].decode()
                    for c in pattern.named_children
                    if c.type == "shorthand_property_identifier_pattern"
                )
        return [ParsedImport(target=string_value(args.named_children[0], source), names=names, line=line)]
    return []


# spec factory (file source bytes -> Spec) for JS / TS / TSX
js_spec = make_spec(
    _js_declare,
    _make_js_calls,
    _js_imports,
    {"comment"},
    is_jsdoc,
    bound_types=frozenset({"extends_clause", "implements_clause", "extends_type_clause"}),
)
