"""Ruby for the tree-sitter walker: classes / modules, methods, constants, calls, mixins, `require` imports."""

from __future__ import annotations

from collections.abc import Callable

from tree_sitter import Node

from cra.dataflows.index.parsers.models import ParsedImport
from cra.dataflows.index.parsers.ts_common import Decl, Walker, make_spec, string_value

_RUBY_IMPORTS = frozenset({"require", "require_relative", "load"})
_RUBY_MIXINS = frozenset({"include", "extend", "prepend"})
_RUBY_NOT_CALLS = (
    _RUBY_IMPORTS
    | _RUBY_MIXINS
    | frozenset(
        {"attr_reader", "attr_writer", "attr_accessor", "private", "protected", "public", "module_function", "new"}
    )
)
_RUBY_RECEIVERS = frozenset({"identifier", "constant", "self", "scope_resolution"})


def _ruby_declare(node: Node, walker: Walker) -> Decl | None:
    kind = node.type
    if kind in ("class", "module"):
        name = node.child_by_field_name("name")
        if name is None:
            return None
        qualifier, _, last = walker.text(name).replace("::", ".").rpartition(".")
        superclass = node.child_by_field_name("superclass")
        bases = [
            walker.text(b).replace("::", ".")
            for b in (superclass.named_children if superclass is not None else [])
            if b.type in ("constant", "scope_resolution")
        ]
        body = next((c for c in node.named_children if c.type in ("comment", "body_statement")), None)
        return Decl(last, "class", node, body, qualifier=qualifier or None, bases=bases)
    if kind in ("method", "singleton_method"):
        name = node.child_by_field_name("name")
        if name is None:
            return None
        obj = node.child_by_field_name("object")
        qualifier = walker.text(obj).replace("::", ".") if obj is not None and obj.type != "self" else None
        return Decl(walker.text(name), "function", node, node.child_by_field_name("body"), qualifier=qualifier)
    if kind == "assignment":
        left, parent = node.child_by_field_name("left"), node.parent
        at_top = parent is not None and (
            parent.type == "program"
            or (
                parent.type == "body_statement"
                and parent.parent is not None
                and parent.parent.type in ("class", "module")
            )
        )
        if at_top and left is not None and left.type == "constant":
            return Decl(walker.text(left), "constant", node, None)
    return None


def _make_ruby_calls(source_of: Callable[[], bytes]):
    def calls(node: Node) -> str | None:
        if node.type != "call":
            return None
        method = node.child_by_field_name("method")
        if method is None:
            return None
        source = source_of()
        name = source[method.start_byte : method.end_byte].decode("utf-8", errors="replace")
        receiver = node.child_by_field_name("receiver")
        if receiver is None:
            return None if name in _RUBY_NOT_CALLS else name
        if receiver.type not in _RUBY_RECEIVERS:
            return None
        prefix = source[receiver.start_byte : receiver.end_byte].decode("utf-8", errors="replace").replace("::", ".")
        return prefix if name == "new" else f"{prefix}.{name}"  # `Cart.new(...)` constructs a Cart

    return calls


def _ruby_mixins(node: Node) -> list[str]:
    """`include Comparable` / `extend Forwardable` / `prepend M`: the modules are bases of the enclosing class."""
    method = node.child_by_field_name("method")
    args = node.child_by_field_name("arguments")
    if node.child_by_field_name("receiver") is not None or method is None or args is None:
        return []
    if method.text.decode() not in _RUBY_MIXINS:
        return []
    return [
        a.text.decode("utf-8", errors="replace").replace("::", ".")
        for a in args.named_children
        if a.type in ("constant", "scope_resolution")
    ]


def _ruby_imports(node: Node, source: bytes) -> list[ParsedImport]:
    """`require "a/b"` (level 0: load path) and `require_relative "../b"` (level 1: next to this file)."""
    if node.type != "call" or node.child_by_field_name("receiver") is not None:
        return []
    method, args = node.child_by_field_name("method"), node.child_by_field_name("arguments")
    if method is None or args is None or not args.named_child_count or args.named_children[0].type != "string":
        return []
    name = source[method.start_byte : method.end_byte].decode()
    if name not in _RUBY_IMPORTS:
        return []
    string = args.named_children[0]
    if any(c.type == "interpolation" for c in string.named_children):
        return []
    target = string_value(string, source)
    return [ParsedImport(target=target, level=int(name == "require_relative"), line=node.start_point[0] + 1)]


def _is_hash_comment(raw: str) -> bool:
    return raw.startswith("#") and not raw.startswith("#!")


# spec factory (file source bytes -> Spec) for Ruby
ruby_spec = make_spec(
    _ruby_declare,
    _make_ruby_calls,
    _ruby_imports,
    {"comment"},
    _is_hash_comment,
    mixin_types=frozenset({"call"}),
    mixins=_ruby_mixins,
)
