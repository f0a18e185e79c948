"""PHP for the tree-sitter walker: classes / traits / functions, constants, namespaces, calls, trait mixins,
`use` and `require` imports."""

from __future__ import annotations

from collections.abc import Callable

from tree_sitter import Node

from cra.dataflows.index.parsers.models import ParsedImport
from cra.dataflows.index.parsers.ts_common import WHITESPACE, Decl, Walker, is_jsdoc, make_spec, string_value

_PHP_KINDS = {
    "class_declaration": "class",
    "trait_declaration": "class",
    "interface_declaration": "interface",
    "enum_declaration": "enum",
    "function_definition": "function",
    "method_declaration": "method",
}
_PHP_REQUIRES = frozenset(
    {"require_expression", "require_once_expression", "include_expression", "include_once_expression"}
)
_PHP_NAMES = frozenset({"name", "qualified_name"})
_PHP_RELATIVE_SCOPES = frozenset({"self", "static", "parent"})


def _php_name(node: Node) -> str:
    """`\\App\\Models\\User` -> "App.Models.User"."""
    return WHITESPACE.sub("", node.text.decode("utf-8", errors="replace")).lstrip("\\").replace("\\", ".")


def _php_declare(node: Node, walker: Walker) -> Decl | None:
    kind = _PHP_KINDS.get(node.type)
    name = node.child_by_field_name("name")
    if kind is not None and name is not None:
        bases = [
            _php_name(b)
            for c in node.children
            if c.type in ("base_clause", "class_interface_clause")
            for b in c.named_children
            if b.type in _PHP_NAMES
        ]
        return Decl(walker.text(name), kind, node, node.child_by_field_name("body"), bases=bases)
    if node.type == "const_element":
        name = next((c for c in node.named_children if c.type == "name"), None)
        declaration = node.parent
        if name is not None and declaration is not None:
            outer = declaration if declaration.named_child_count == 1 else node
            return Decl(walker.text(name), "constant", outer, None)
    return None


def _php_namespace(node: Node) -> tuple[str | None, bool]:
    name = node.child_by_field_name("name")
    return (_php_name(name) if name is not None else None), node.child_by_field_name("body") is not None


def _php_object(node: Node | None) -> str | None:
    """`$this` -> "this", `$repo` -> "repo", `$this->items` -> "this.items", `Foo` -> "Foo"; None otherwise."""
    if node is None:
        return None
    if node.type == "variable_name":
        return node.text.decode("utf-8", errors="replace").lstrip("$")
    if node.type in _PHP_NAMES or node.type == "relative_scope":
        return _php_name(node)
    if node.type in ("member_access_expression", "nullsafe_member_access_expression"):
        obj, name = _php_object(node.child_by_field_name("object")), node.child_by_field_name("name")
        return f"{obj}.{name.text.decode()}" if obj and name is not None and name.type == "name" else None
    return None


def _make_php_calls(source_of: Callable[[], bytes]):
    def calls(node: Node) -> str | None:
        kind = node.type
        if kind == "function_call_expression":
            callee = node.child_by_field_name("function")
            return _php_name(callee) if callee is not None and callee.type in _PHP_NAMES else None
        if kind in ("member_call_expression", "nullsafe_member_call_expression", "scoped_call_expression"):
            name = node.child_by_field_name("name")
            obj = _php_object(node.child_by_field_name("object" if kind != "scoped_call_expression" else "scope"))
            return f"{obj}.{name.text.decode()}" if obj and name is not None and name.type == "name" else None
        if kind == "object_creation_expression":
            type_node = next((c for c in node.named_children if c.type in _PHP_NAMES), None)
            name = _php_name(type_node) if type_node is not None else None
            return name if name and name not in _PHP_RELATIVE_SCOPES else None
        return None

    return calls


def _php_mixins(node: Node) -> list[str]:
    """`use HasFactory, Notifiable;` inside a class body: the traits are bases of the class."""
    return [_php_name(c) for c in node.named_children if c.type in _PHP_NAMES]


def _php_imports(node: Node, source: bytes) -> list[ParsedImport]:
    """`use A\\B\\C [as D];` -> ("A.B", "C [as D]"); `use A\\B\\{C, D as E};` -> ("A.B", ("C", "D as E"));
    `require_once 'x.php'` -> "x.php" (level 0), `require __DIR__ . '/x.php'` -> "./x.php" (level 1: next to this file)."""
    line = node.start_point[0] + 1
    if node.type == "namespace_use_declaration":
        group = node.child_by_field_name("body")
        prefix = next((c for c in node.named_children if c.type == "namespace_name"), None)
        if group is not None:
            names = tuple(_php_use_name(c) for c in group.named_children if c.type == "namespace_use_clause")
            return [ParsedImport(target=_php_name(prefix) if prefix is not None else "", names=names, line=line)]
        out = []
        for clause in (c for c in node.named_children if c.type == "namespace_use_clause"):
            full, _, alias = _php_use_name(clause).partition(" as ")
            target, _, last = full.rpartition(".")
            out.append(ParsedImport(target=target, names=(f"{last} as {alias}" if alias else last,), line=line))
        return out
    if node.type in _PHP_REQUIRES:
        argument = next(iter(node.named_children), None)
        if argument is not None and argument.type in ("string", "encapsed_string"):
            return [ParsedImport(target=string_value(argument, source), line=line)]
        if argument is not None and argument.type == "binary_expression":
            left, right = argument.child_by_field_name("left"), argument.child_by_field_name("right")
            if left is not None and right is not None and right.type in ("string", "encapsed_string"):
                if source[left.start_byte : left.end_byte] in (b"__DIR__", b"dirname(__FILE__)"):
                    return [ParsedImport(target="." + string_value(right, source), level=1, line=line)]
    return []


def _php_use_name(clause: Node) -> str:
    """ "App.Support.Str" or "Builder as B" for one `use` clause."""
    name = next((c for c in clause.named_children if c.type in _PHP_NAMES), None)
    alias = clause.child_by_field_name("alias")
    text = _php_name(name) if name is not None else ""
    return f"{text} as {alias.text.decode()}" if alias is not None else text


# spec factory (file source bytes -> Spec) for PHP
php_spec = make_spec(
    _php_declare,
    _make_php_calls,
    _php_imports,
    {"comment"},
    is_jsdoc,
    namespace_types=frozenset({"namespace_definition"}),
    namespace=_php_namespace,
    mixin_types=frozenset({"use_declaration"}),
    mixins=_php_mixins,
)
