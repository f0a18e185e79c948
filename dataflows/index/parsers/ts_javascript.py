"""JavaScript / TypeScript / TSX for the tree-sitter walker: declarations, calls, `import` / `require` imports.

Besides declarations, functions assigned to names define symbols, named as a reader calls them (CommonJS, Node's own
library style): `res.redirect = function redirect(url) {}` is `res.redirect`; `exports.parse = ...` and
`module.exports.parse = ...` are `parse`; `Foo.prototype.bar = function () {}` is `Foo.bar`, a method of `Foo` (which
is then a class); members of an object literal held by a name, `module.exports = { a() {}, b: function () {} }` (`a`,
`b`), `Foo.prototype = { bar() {} }` (`Foo.bar`), `const api = { get: () => {} }` (`api.get`); class fields holding a
function, `onClick = () => {}`; a named function passed to a call at module level, `defineGetter(req, 'ip', function ip()
{})` (`ip`).
"""

from __future__ import annotations

from collections.abc import Callable

from tree_sitter import Node

from cra.dataflows.index.parsers.models import ParsedImport
from cra.dataflows.index.parsers.ts_common import (
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
        return _js_object_method(node, name, walker) if name else None
    if kind == "assignment_expression":
        return _js_assigned(node, walker)
    if kind == "function_expression" and name is not None and _js_is_top_level_argument(node):
        return Decl(walker.text(name), "function", node, node.child_by_field_name("body"))
    if kind == "pair":
        return _js_pair(node, walker)
    if kind in ("field_definition", "public_field_definition"):
        value = node.child_by_field_name("value")
        name = node.child_by_field_name("name") or node.child_by_field_name("property")
        if name is None or value is None or value.type not in _FUNCTION_VALUES:
            return None
        return Decl(walker.text(name), "method", node, value.child_by_field_name("body"))
    if kind in ("class_declaration", "abstract_class_declaration", "class") and name is not None:
        bases = []
        for child in node.children:
            if child.type == "class_heritage":
                bases = [
                    b
                    for clause in child.named_children
                    for b in (clause.named_children if clause.type.endswith("_clause") else [clause])
                    if b.type
                    in ("identifier", "member_expression", "type_identifier", "nested_type_identifier", "generic_type")
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


_MODULE_OBJECTS = ("module.exports", "exports")
_JS_TARGET_PARTS = frozenset({"identifier", "this", "member_expression", "property_identifier"})


def _js_target(node: Node | None, walker: Walker) -> str | None:
    """The dotted text of an assignment target made of names only (`res.redirect`, `Foo.prototype.bar`, `x`)."""
    return dotted_callee(node, walker.source, _JS_TARGET_PARTS) if node is not None else None


def _js_owner(path: str) -> tuple[str | None, bool]:
    """(qualifier, whether through `prototype`) of the object a dotted path names: `res` -> ("res", False),
    `Foo.prototype` -> ("Foo", True); `module.exports`, `exports` and `this` -> (None, False): the module, or the
    scope the assignment is in, qualifies the name."""
    parts = path.split(".")
    if parts[:2] == ["module", "exports"]:
        parts = parts[2:]
    elif parts[:1] in (["exports"], ["this"]):
        parts = parts[1:]
    kept = [part for part in parts if part != "prototype"]
    return (".".join(kept) or None, len(kept) < len(parts))


def _js_assigned(node: Node, walker: Walker) -> Decl | None:
    """`a.b = function ...` / `a.b = (...) => ...`: a function named `b` qualified by what `a` names (`_js_owner`);
    `module.exports = function name() {}` is `name`. The statement of a chain (`res.type = res.contentType = ...`)
    is its span, so its signature shows every name it is given."""
    value = node.child_by_field_name("right")
    path = _js_target(node.child_by_field_name("left"), walker)
    if value is None or value.type not in _FUNCTION_VALUES or path is None or "." not in path:
        return None
    owner, _, name = path.rpartition(".")
    if path in _MODULE_OBJECTS:
        own = value.child_by_field_name("name")
        owner, name = "exports", walker.text(own) if own is not None else ""
    if not name or name == "prototype":
        return None
    qualifier, through_prototype = _js_owner(owner)
    outer = node
    while outer.parent is not None and outer.parent.type == "assignment_expression":
        outer = outer.parent
    if outer.parent is not None and outer.parent.type == "expression_statement":
        outer = outer.parent
    return Decl(
        name, "function", outer, value.child_by_field_name("body"), qualifier=qualifier, makes_class=through_prototype
    )


def _js_holder(obj: Node | None, walker: Walker) -> tuple[str | None, bool] | None:
    """(qualifier, through `prototype`) of the members of an object literal held by a name: `const api = {...}`
    (api), `Foo.prototype = {...}` (Foo), `module.exports = {...}` / `export default {...}` / `return {...}` (none:
    the module or the enclosing function qualifies them), a nested `{ key: {...} }` (its holder's, then key);
    None for any other object (an argument, an array item): its members define nothing."""
    parent = obj.parent if obj is not None else None
    if parent is None:
        return None
    if parent.type == "variable_declarator":
        name = parent.child_by_field_name("name")
        return (walker.text(name), False) if name is not None and name.type == "identifier" else None
    if parent.type == "assignment_expression":
        path = _js_target(parent.child_by_field_name("left"), walker)
        return _js_owner(path) if path is not None else None
    if parent.type == "pair":
        holder, key = _js_holder(parent.parent, walker), _js_key(parent, walker)
        if holder is None or key is None:
            return None
        return (f"{holder[0]}.{key}" if holder[0] else key, holder[1])
    if parent.type in ("export_statement", "return_statement"):
        return None, False
    return None


def _js_key(pair: Node, walker: Walker) -> str | None:
    """The name of an object member's key (an identifier, a string or a number; None when computed)."""
    key = pair.child_by_field_name("key")
    if key is None or key.type not in ("property_identifier", "string", "number", "private_property_identifier"):
        return None
    return string_value(key, walker.source) if key.type == "string" else walker.text(key)


def _js_is_top_level_argument(node: Node) -> bool:
    """Whether a function is an argument of a call made at module level: `defineGetter(req, 'ip', function ip() {})`
    defines `ip` (named by its author; a function passed inside another function is a callback, not a definition)."""
    call = node.parent.parent if node.parent is not None and node.parent.type == "arguments" else None
    statement = call.parent if call is not None and call.type == "call_expression" else None
    return statement is not None and statement.type == "expression_statement" and _js_is_top_level(statement)


def _js_pair(node: Node, walker: Walker) -> Decl | None:
    """`key: function () {}` / `key: () => ...` in an object literal held by a name (`_js_holder`): a method of
    that object, like `key() {}`."""
    value = node.child_by_field_name("value")
    if value is None or value.type not in _FUNCTION_VALUES:
        return None
    name, holder = _js_key(node, walker), _js_holder(node.parent, walker)
    if not name or holder is None:
        return None
    return Decl(name, "method", node, value.child_by_field_name("body"), qualifier=holder[0], makes_class=holder[1])


def _js_object_method(node: Node, name: Node, walker: Walker) -> Decl:
    """A method of a class, or of an object literal: then qualified by its holder (`_js_holder`) when it has one."""
    body = node.child_by_field_name("body")
    holder = _js_holder(node.parent, walker) if node.parent is not None and node.parent.type == "object" else None
    if holder is None:
        return Decl(walker.text(name), "method", node, body)
    return Decl(walker.text(name), "method", node, body, qualifier=holder[0], makes_class=holder[1])


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
                names.append(
                    source[
                        child.child_by_field_name("name").start_byte : child.child_by_field_name("name").end_byte
                    ].decode()
                )
            elif child.type == "namespace_import" or child.type == "namespace_export":
                alias = next((c for c in child.named_children if c.type == "identifier"), None)
                names.append(
                    f"* as {source[alias.start_byte : alias.end_byte].decode()}"
                    if alias is not None and child.type == "namespace_import"
                    else "*"
                )
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
            if pattern is not None and pattern.type == "identifier":  # the module's own export, or the module
                local = source[pattern.start_byte : pattern.end_byte].decode()  # (`utils.parse()`: its `parse`)
                names = (local, f"* as {local}") if is_require else (local,)
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
