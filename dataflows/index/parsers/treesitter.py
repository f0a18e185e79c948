"""JS / TS / TSX / Go / Java / Rust / C / C++ / C# / Ruby / PHP parser on tree-sitter 0.26 and the grammar wheels.

One walk over the syntax tree per file; a per-language `_Spec` says which node types declare
symbols (and of which kind), which are calls, comments, imports, base clauses and namespaces
(C++ / C# / PHP namespaces qualify the names declared in them: `ns.Class.method`).
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Callable

from tree_sitter import Language, Node, Parser

from dataflows.index.parsers.models import (
    ParsedComment,
    ParsedFile,
    ParsedImport,
    ParsedReference,
    ParsedSymbol,
)

_CONSTANT_NAME = re.compile(r"^_*[A-Z][A-Z0-9_]*$")
_WS = re.compile(r"\s+")
_FUNCTION_VALUES = frozenset(
    {"arrow_function", "function_expression", "function", "generator_function", "generator_function_expression"}
)
_TYPE_NAMES = frozenset({"type_identifier", "nested_type_identifier", "qualified_type", "scoped_type_identifier"})
# type names here are declarations or constructor calls, not annotations
_NOT_ANNOTATIONS = frozenset(
    {"type_parameter", "type_parameters", "object_creation_expression", "type_parameter_declaration", "new_expression"}
)
_GO_BUILTIN_TYPES = frozenset(
    "any bool byte comparable complex64 complex128 error float32 float64 int int8 int16 int32 int64 rune string "
    "uint uint8 uint16 uint32 uint64 uintptr".split()
)
_DECORATORS = frozenset({"decorator", "marker_annotation", "annotation", "attribute_item", "attribute_list"})
_SUMMARY_TAGS = re.compile(r"</?(?:summary|remarks|returns|para)>")


def _grammar(language: str):
    if language == "javascript":
        import tree_sitter_javascript as grammar

        return grammar.language()
    if language in ("typescript", "tsx"):
        import tree_sitter_typescript as grammar

        return grammar.language_typescript() if language == "typescript" else grammar.language_tsx()
    if language == "go":
        import tree_sitter_go as grammar

        return grammar.language()
    if language == "java":
        import tree_sitter_java as grammar

        return grammar.language()
    if language == "rust":
        import tree_sitter_rust as grammar

        return grammar.language()
    if language == "c":
        import tree_sitter_c as grammar

        return grammar.language()
    if language == "cpp":
        import tree_sitter_cpp as grammar

        return grammar.language()
    if language == "csharp":
        import tree_sitter_c_sharp as grammar

        return grammar.language()
    if language == "ruby":
        import tree_sitter_ruby as grammar

        return grammar.language()
    if language == "php":
        import tree_sitter_php as grammar

        return grammar.language_php()
    raise ValueError(f"no tree-sitter grammar for {language!r}")


_LOCAL = threading.local()  # parsers are not thread-safe: one per language per thread


def _parser(language: str) -> Parser:
    cache = _LOCAL.__dict__.setdefault("parsers", {})
    if language not in cache:
        cache[language] = Parser(Language(_grammar(language)))
    return cache[language]


def parse_treesitter(language: str, text: str) -> ParsedFile:
    """Parse one file of a tree-sitter language; syntax errors keep what parsed plus `error`.

    A "c" file (`.h` maps to C) with C++ markers (`namespace `, `template`, `::`, `public:`) is parsed as C++.
    """
    source = text.encode("utf-8", errors="replace")
    if language == "c" and any(marker in source for marker in _CPP_MARKERS):
        language = "cpp"
    tree = _parser(language).parse(source)
    walker = _Walker(_SPEC_FACTORIES[language](source), source)
    walker.walk(tree.root_node)
    walker.resolve_receivers()
    error = None
    if tree.root_node.has_error:
        error = f"syntax error at line {_first_error_line(tree.root_node)}"
    return ParsedFile(
        symbols=walker.symbols,
        comments=walker.comments(),
        imports=walker.imports,
        references=walker.references,
        error=error,
    )


_CPP_MARKERS = (b"namespace ", b"template", b"::", b"public:", b"private:")


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


class _Walker:
    def __init__(self, spec: _Spec, source: bytes):
        self.spec = spec
        self.source = source
        self.symbols: list[ParsedSymbol] = []
        self.imports: list[ParsedImport] = []
        self.references: list[ParsedReference] = []
        self._comments: list[tuple[int, str]] = []
        self._seen: set[tuple[int, str, str]] = set()
        self._receivers: list[tuple[int, str]] = []  # (symbol, receiver type) for Go methods
        self._impl_bases: list[tuple[str, str]] = []  # (type, trait) for Rust `impl Trait for Type`
        self._file_namespace: str | None = None  # C# `namespace A.B;` / PHP `namespace A\B;` (statement form)

    def text(self, node: Node) -> str:
        return self.source[node.start_byte : node.end_byte].decode("utf-8", errors="replace")

    def walk(self, root: Node) -> None:
        stack: list[tuple[Node, int | None, str | None, str | None]] = [(root, None, None, None)]
        while stack:
            node, scope, qualifier, namespace = stack.pop()
            kind = node.type
            if kind in self.spec.comment_types:
                self._comments.append((node.start_point[0] + 1, _clean_comment(self.text(node))))
                continue
            if kind in self.spec.namespace_types:
                name, block = self.spec.namespace(node)
                if block and name:
                    outer = namespace or self._file_namespace
                    namespace = f"{outer}.{name}" if outer else name
                elif name:
                    self._file_namespace = name
            decl = self.spec.declare(node, self)
            own_name = None
            if decl is not None:
                scope = self._add(decl, scope, qualifier, namespace or self._file_namespace)
                own_name = node.child_by_field_name("name")
                if decl.kind in ("class", "interface", "enum") or node.type == "impl_item":
                    qualifier = None
            elif kind == "impl_item":  # Rust: methods inside are "Type.method"
                qualifier = _rust_impl_type(node, self)
            self.imports.extend(self.spec.imports(node))
            if scope is not None:
                self._references(node, scope, decl)
            children = node.children
            for child in reversed(children):
                if own_name is not None and child.id == own_name.id:
                    continue
                if scope is not None and child.type in _TYPE_NAMES:
                    name = _WS.sub("", self.text(child))
                    if node.type not in _NOT_ANNOTATIONS and name not in self.spec.builtin_types:
                        kind_of_ref = "base" if node.type in self.spec.bound_types else "annotation"
                        self._ref(scope, name, kind_of_ref)
                    continue
                stack.append((child, scope, qualifier, namespace))

    def _references(self, node: Node, scope: int, decl: _Decl | None) -> None:
        name = self.spec.calls(node)
        if name:
            self._ref(scope, name, "call")
        if decl is not None:
            for base in decl.bases:
                self._ref(scope, base if isinstance(base, str) else _WS.sub("", self.text(base)), "base")
        if node.type in self.spec.mixin_types:
            for base in self.spec.mixins(node):
                self._ref(scope, base, "base")

    def _ref(self, symbol: int, name: str, kind: str) -> None:
        key = (symbol, name, kind)
        if key not in self._seen:
            self._seen.add(key)
            self.references.append(ParsedReference(symbol=symbol, name=name, kind=kind))

    def _add(self, decl: _Decl, scope: int | None, qualifier: str | None, namespace: str | None = None) -> int:
        outer = self.symbols[scope].qualified_name if scope is not None else namespace
        if decl.qualifier:
            prefix = f"{outer}.{decl.qualifier}" if outer else decl.qualifier
        else:
            prefix = qualifier or outer
        kind = decl.kind
        if kind == "function" and (qualifier or decl.qualifier or _is_class_scope(self.symbols, scope)):
            kind = "method"
        start_node, decorators = _leading_attributes(decl.outer, self)
        self.symbols.append(
            ParsedSymbol(
                name=decl.name,
                qualified_name=f"{prefix}.{decl.name}" if prefix else decl.name,
                kind=kind,
                start_line=start_node.start_point[0] + 1,
                end_line=decl.outer.end_point[0] + 1 - (decl.outer.end_point[1] == 0),
                signature=_signature(decl, self),
                docstring=_docstring(start_node, self),
                decorators=decorators,
                parent=scope,
            )
        )
        idx = len(self.symbols) - 1
        if decl.qualifier or qualifier:
            self._receivers.append((idx, prefix))
        return idx

    def resolve_receivers(self) -> None:
        """Go methods / Rust impl items / C++ `Class::method`: parent = the receiver type's symbol when it is in
        this file (by qualified name, else by its last name); impl traits are its bases."""
        by_name = {s.name: i for i, s in enumerate(self.symbols) if s.parent is None and s.kind != "method"}
        by_qualified = {s.qualified_name: i for i, s in enumerate(self.symbols) if s.kind in _OWNER_KINDS}
        for idx, receiver in self._receivers:
            owner = by_qualified.get(receiver, by_name.get(receiver.rpartition(".")[2]))
            if owner is not None and owner != idx and self.symbols[idx].parent is None:
                self.symbols[idx] = _replace_parent(self.symbols[idx], owner)
        for type_name, trait in self._impl_bases:
            if type_name in by_name:
                self._ref(by_name[type_name], trait, "base")

    def comments(self) -> list[ParsedComment]:
        owner = _line_owners(self.symbols, max((s.end_line for s in self.symbols), default=0))
        return [
            ParsedComment(line=line, text=text, symbol=owner[line] if line < len(owner) else None)
            for line, text in self._comments
        ]


_OWNER_KINDS = frozenset({"class", "interface", "enum", "type_alias"})


def _replace_parent(symbol: ParsedSymbol, parent: int) -> ParsedSymbol:
    from dataclasses import replace

    return replace(symbol, parent=parent)


def _is_class_scope(symbols: list[ParsedSymbol], scope: int | None) -> bool:
    return scope is not None and symbols[scope].kind in ("class", "interface", "enum")


def _line_owners(symbols: list[ParsedSymbol], n_lines: int) -> list[int | None]:
    """Per line, the innermost symbol containing it (later, nested symbols overwrite their parents)."""
    owner: list[int | None] = [None] * (n_lines + 2)
    order = sorted(range(len(symbols)), key=lambda i: (symbols[i].start_line, -symbols[i].end_line))
    for idx in order:
        sym = symbols[idx]
        owner[sym.start_line : sym.end_line + 1] = [idx] * (sym.end_line - sym.start_line + 1)
    return owner


def _first_error_line(root: Node) -> int:
    stack = [root]
    while stack:
        node = stack.pop()
        if node.is_error or node.is_missing:
            return node.start_point[0] + 1
        stack.extend(reversed([c for c in node.children if c.has_error or c.is_missing]))
    return root.start_point[0] + 1


def _clean_comment(raw: str) -> str:
    """Comment text without //, ///, //!, /* */, /** */, leading '*' of block lines, and # (Ruby, PHP)."""
    if raw.startswith("/*"):
        body = raw[2:-2] if raw.endswith("*/") else raw[2:]
        lines = [re.sub(r"^\s*\*+ ?", "", line).strip() for line in body.lstrip("*!").split("\n")]
        return "\n".join(line for line in lines if line).strip()
    if raw.startswith("#"):
        return raw.lstrip("#").strip()
    if raw.startswith("=begin"):
        return raw.removeprefix("=begin").strip().removesuffix("=end").strip()
    return re.sub(r"^//[/!]?", "", raw).strip()


def _leading_attributes(outer: Node, walker: _Walker) -> tuple[Node, tuple[str, ...]]:
    """The first node of a declaration including preceding Rust attributes, and its decorators."""
    decorators: list[str] = []
    start = outer
    prev = outer.prev_named_sibling
    while prev is not None and prev.type == "attribute_item":
        decorators.insert(0, walker.text(prev)[2:-1].strip())
        start, prev = prev, prev.prev_named_sibling
    stack = list(outer.children)
    for child in stack:
        if child.type in ("decorator", "marker_annotation", "annotation"):
            decorators.append(walker.text(child).lstrip("@").strip())
        elif child.type == "attribute_list":  # C# [Attr], PHP #[Attr]
            decorators.append(walker.text(child).lstrip("#").strip().removeprefix("[").removesuffix("]").strip())
        elif child.type == "modifiers":
            stack.extend(child.children)
    return start, tuple(decorators)


def _docstring(start: Node, walker: _Walker) -> str | None:
    """The doc comment right above a declaration: JSDoc/Javadoc block, or a run of //, /// lines."""
    lines: list[str] = []
    node, expected_row = start.prev_sibling, start.start_point[0]
    while node is None and start.parent is not None and start.parent.start_byte == start.start_byte:
        start = start.parent  # Ruby: a class/def that opens a body is preceded by its comments one level up
        node = start.prev_sibling
    while node is not None and node.type in walker.spec.comment_types:
        raw = walker.text(node)
        if node.end_point[0] < expected_row - 1 - (node.end_point[1] == 0) or not walker.spec.doc_comment(raw):
            break
        before = node.prev_sibling  # (a Rust line comment ends at column 0 of the next line)
        if before is not None and before.end_point[0] - (before.end_point[1] == 0) == node.start_point[0]:
            break  # a trailing comment of the line above (`}  // namespace x`) documents that line
        lines.insert(0, _clean_comment(raw))
        if raw.startswith("/*"):
            break
        node, expected_row = node.prev_sibling, node.start_point[0]
    text = "\n".join(lines).strip()
    if "<summary>" in text:  # C# XML doc comments
        text = _SUMMARY_TAGS.sub("", text).strip()
    return text or None


def _signature(decl: _Decl, walker: _Walker) -> str:
    """Declaration source up to (not including) its body, whitespace-collapsed; first line if bodiless."""
    start = decl.outer
    for child in decl.outer.children:  # skip decorators / annotations / JSDoc-like leading children
        if child.type in _DECORATORS or child.type == "comment":
            continue
        if child.type == "modifiers":
            rest = [c for c in child.children if c.type not in _DECORATORS]
            if not rest:
                continue
            child = rest[0]
        start = child
        break
    if decl.body is not None:
        raw = walker.source[start.start_byte : decl.body.start_byte]
    else:
        raw = walker.source[start.start_byte : decl.outer.end_byte].split(b"\n", 1)[0]
    return _WS.sub(" ", raw.decode("utf-8", errors="replace")).strip().rstrip("{;").strip()


def _string_value(node: Node | None, walker_source: bytes) -> str | None:
    if node is None:
        return None
    raw = walker_source[node.start_byte : node.end_byte].decode("utf-8", errors="replace")
    return raw.strip("\"'`")


# ----------------------------------------------------------------------------------- JS / TS / TSX


def _js_declare(node: Node, walker: _Walker) -> _Decl | None:
    decl = _js_declaration(node, walker)
    if decl is not None and decl.outer.parent is not None and decl.outer.parent.type == "export_statement":
        decl.outer = decl.outer.parent
    return decl


def _js_declaration(node: Node, walker: _Walker) -> _Decl | None:
    kind = node.type
    name = node.child_by_field_name("name")
    if kind in ("function_declaration", "generator_function_declaration", "function_signature"):
        return _Decl(walker.text(name), "function", node, node.child_by_field_name("body")) if name else None
    if kind == "method_definition":
        return _Decl(walker.text(name), "method", node, node.child_by_field_name("body")) if name else None
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
        return _Decl(walker.text(name), "class", node, node.child_by_field_name("body"), bases=bases)
    if kind == "interface_declaration" and name is not None:
        bases = [b for c in node.children if c.type == "extends_type_clause" for b in c.named_children]
        return _Decl(walker.text(name), "interface", node, node.child_by_field_name("body"), bases=bases)
    if kind == "type_alias_declaration" and name is not None:
        return _Decl(walker.text(name), "type_alias", node, None)
    if kind == "enum_declaration" and name is not None:
        return _Decl(walker.text(name), "enum", node, node.child_by_field_name("body"))
    if kind == "variable_declarator" and name is not None and name.type == "identifier":
        return _js_variable(node, name, walker)
    return None


def _js_variable(node: Node, name: Node, walker: _Walker) -> _Decl | None:
    """`const f = () => ...` is a function; a top-level `const UPPER = ...` is a constant."""
    value = node.child_by_field_name("value")
    declaration = node.parent
    outer = declaration if declaration is not None and declaration.named_child_count == 1 else node
    if value is not None and value.type in _FUNCTION_VALUES:
        return _Decl(walker.text(name), "function", outer, value.child_by_field_name("body"))
    at_top = declaration is not None and declaration.type == "lexical_declaration" and _js_is_top_level(declaration)
    if at_top and _CONSTANT_NAME.match(walker.text(name)) and walker.text(declaration).startswith("const"):
        return _Decl(walker.text(name), "constant", outer, None)
    return None


def _js_is_top_level(declaration: Node) -> bool:
    parent = declaration.parent
    if parent is not None and parent.type == "export_statement":
        parent = parent.parent
    return parent is not None and parent.type == "program"


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


_JS_CALLEE_PARTS = frozenset(
    {"identifier", "this", "super", "member_expression", "property_identifier", "private_property_identifier"}
)


def _make_js_calls(source_of: Callable[[], bytes]):
    def calls(node: Node) -> str | None:
        if node.type == "call_expression":
            callee = node.child_by_field_name("function")
            if callee is None or callee.type == "import":
                return None
            name = _dotted_callee(callee, source_of(), _JS_CALLEE_PARTS)
            return None if name == "require" else name
        if node.type == "new_expression":
            return _dotted_callee(node.child_by_field_name("constructor"), source_of(), _JS_CALLEE_PARTS)
        return None

    return calls


def _js_imports(node: Node, source: bytes) -> list[ParsedImport]:
    kind = node.type
    line = node.start_point[0] + 1
    if kind in ("import_statement", "export_statement"):
        target = _string_value(node.child_by_field_name("source"), source)
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
        return [ParsedImport(target=_string_value(args.named_children[0], source), names=names, line=line)]
    return []


# ----------------------------------------------------------------------------------------------- Go


def _go_declare(node: Node, walker: _Walker) -> _Decl | None:
    kind = node.type
    name = node.child_by_field_name("name")
    if kind == "function_declaration" and name is not None:
        return _Decl(walker.text(name), "function", node, node.child_by_field_name("body"))
    if kind == "method_declaration" and name is not None:
        receiver = _go_receiver_type(node.child_by_field_name("receiver"), walker)
        return _Decl(walker.text(name), "method", node, node.child_by_field_name("body"), qualifier=receiver)
    if kind in ("type_spec", "type_alias") and name is not None:
        declaration = node.parent
        outer = declaration if declaration is not None and declaration.named_child_count == 1 else node
        type_node = node.child_by_field_name("type")
        type_kind = type_node.type if type_node is not None else ""
        symbol_kind = {"struct_type": "class", "interface_type": "interface"}.get(type_kind, "type_alias")
        body = None
        if type_node is not None and type_kind in ("struct_type", "interface_type"):
            body = next((c for c in type_node.children if c.type in ("field_declaration_list", "{")), None)
        return _Decl(walker.text(name), symbol_kind, outer, body)
    if kind == "const_spec" and name is not None:
        text = walker.text(name)
        if _CONSTANT_NAME.match(text) or text[:1].isupper():
            declaration = node.parent
            outer = declaration if declaration is not None and declaration.named_child_count == 1 else node
            return _Decl(text, "constant", outer, None)
    return None


def _go_receiver_type(receiver: Node | None, walker: _Walker) -> str | None:
    if receiver is None:
        return None
    for node in _descendants(receiver):
        if node.type == "type_identifier":
            return walker.text(node)
    return None


def _descendants(node: Node):
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


_GO_CALLEE_PARTS = frozenset({"identifier", "selector_expression", "field_identifier"})


def _make_go_calls(source_of: Callable[[], bytes]):
    def calls(node: Node) -> str | None:
        if node.type == "call_expression":
            return _dotted_callee(node.child_by_field_name("function"), source_of(), _GO_CALLEE_PARTS)
        return None

    return calls


def _go_imports(node: Node, source: bytes) -> list[ParsedImport]:
    if node.type != "import_spec":
        return []
    target = _string_value(node.child_by_field_name("path"), source)
    return [ParsedImport(target=target, line=node.start_point[0] + 1)] if target else []


# --------------------------------------------------------------------------------------------- Java

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


def _java_declare(node: Node, walker: _Walker) -> _Decl | None:
    kind = _JAVA_KINDS.get(node.type)
    name = node.child_by_field_name("name")
    if kind is not None and name is not None:
        bases = []
        for child in node.children:
            if child.type in ("superclass", "super_interfaces", "extends_interfaces"):
                bases.extend(
                    t for t in _descendants(child) if t.type in ("type_identifier", "scoped_type_identifier") and t.parent.type != "scoped_type_identifier"
                )
        return _Decl(walker.text(name), kind, node, node.child_by_field_name("body"), bases=bases)
    if node.type == "variable_declarator" and node.parent is not None and node.parent.type == "field_declaration":
        modifiers = next((c for c in node.parent.children if c.type == "modifiers"), None)
        words = walker.text(modifiers).split() if modifiers is not None else []
        text = walker.text(name) if name is not None else ""
        if "static" in words and "final" in words and _CONSTANT_NAME.match(text):
            outer = node.parent if node.parent.named_child_count <= 3 else node
            return _Decl(text, "constant", outer, None)
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
            prefix = _dotted_callee(obj, source, _JAVA_OBJECT_PARTS)
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


# --------------------------------------------------------------------------------------------- Rust

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


def _rust_declare(node: Node, walker: _Walker) -> _Decl | None:
    kind = _RUST_KINDS.get(node.type)
    name = node.child_by_field_name("name")
    if kind is None or name is None:
        return None
    bases = []
    if node.type == "trait_item":
        bounds = node.child_by_field_name("bounds")
        bases = [b for b in bounds.named_children] if bounds is not None else []
    return _Decl(walker.text(name), kind, node, node.child_by_field_name("body"), bases=bases)


def _rust_impl_type(node: Node, walker: _Walker) -> str | None:
    """`impl<T> Trait for Type<T>` -> "Type" (and remember Trait as a base of Type)."""
    type_node = node.child_by_field_name("type")
    while type_node is not None and type_node.type in ("generic_type", "reference_type", "scoped_type_identifier"):
        type_node = type_node.child_by_field_name("type") or type_node.child_by_field_name("name")
    if type_node is None:
        return None
    type_name = walker.text(type_node)
    trait = node.child_by_field_name("trait")
    if trait is not None:
        walker._impl_bases.append((type_name, _WS.sub("", walker.text(trait))))
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
        return _dotted_callee(callee, source_of(), _RUST_CALLEE_PARTS)

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
        return _WS.sub("", source[n.start_byte : n.end_byte].decode())

    if argument.type == "scoped_use_list":
        path = argument.child_by_field_name("path")
        items = argument.child_by_field_name("list")
        names = tuple(_rust_use_name(c, text) for c in items.named_children) if items is not None else ()
        return [ParsedImport(target=text(path) if path is not None else "", names=names, line=line)]
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


# ------------------------------------------------------------------------------------------- C / C++

_C_RECORDS = {"struct_specifier": "class", "union_specifier": "class", "class_specifier": "class", "enum_specifier": "enum"}
_C_NAMES = frozenset(
    {"identifier", "field_identifier", "qualified_identifier", "destructor_name", "operator_name", "template_function"}
)
_C_CALLEE_PARTS = frozenset(
    {"identifier", "field_expression", "field_identifier", "qualified_identifier", "namespace_identifier", "this"}
)


def _c_declare(node: Node, walker: _Walker) -> _Decl | None:
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
            return _Decl(walker.text(alias), "type_alias", node, None)
        return None
    if kind == "alias_declaration":  # C++ `using Id = int;`
        name = node.child_by_field_name("name")
        return _Decl(walker.text(name), "type_alias", _c_outer(node), None) if name is not None else None
    if kind == "preproc_function_def":  # bugs often live in macros
        name = node.child_by_field_name("name")
        return _Decl(walker.text(name), "function", node, node.child_by_field_name("value")) if name else None
    if kind == "preproc_def" and node.child_by_field_name("value") is not None:
        name = node.child_by_field_name("name")
        if name is not None and _CONSTANT_NAME.match(walker.text(name)):
            return _Decl(walker.text(name), "constant", node, None)
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


def _c_macro_class(node: Node, walker: _Walker) -> _Decl:
    bases = [
        b
        for error in node.children
        if error.type == "ERROR"
        for b in error.named_children
        if b.type in ("identifier", "type_identifier", "qualified_identifier", "template_type")
    ]
    bases = [b.child_by_field_name("name") or b if b.type == "template_type" else b for b in bases]
    name = walker.text(node.child_by_field_name("declarator"))
    return _Decl(name, _C_RECORDS[node.child_by_field_name("type").type], _c_outer(node), node.child_by_field_name("body"), bases=bases)


def _c_in_function_body(node: Node) -> bool:
    """Inside the body of a real function definition (not of a misread `class MACRO Name {...}`)."""
    parent = node.parent
    while parent is not None and parent.type in ("labeled_statement", "compound_statement"):
        if parent.type == "compound_statement":
            owner = parent.parent
            return owner is None or owner.type != "function_definition" or not _c_is_macro_class(owner)
        parent = parent.parent
    return False


def _c_is_static(node: Node, walker: _Walker) -> bool:
    return any(c.type == "storage_class_specifier" and walker.text(c) == "static" for c in node.children)


def _c_outer(node: Node) -> Node:
    """A declaration with its `template <...>` prefix."""
    while node.parent is not None and node.parent.type == "template_declaration":
        node = node.parent
    return node


def _c_function(node: Node, body: Node | None, walker: _Walker) -> _Decl | None:
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
    return _Decl(walker.text(name_node), "function", _c_outer(node), body, qualifier=".".join(qualifier) or None)


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


def _c_record(node: Node, walker: _Walker) -> _Decl | None:
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
            return _Decl(walker.text(alias), kind, parent, body, bases=[b for b in bases if b is not None])
    if name is None:
        return None
    text = walker.text(name).replace("::", ".")
    return _Decl(text.rpartition(".")[2], kind, _c_outer(node), body, bases=[b for b in bases if b is not None])


def _cpp_namespace(node: Node) -> tuple[str | None, bool]:
    name = node.child_by_field_name("name")
    if name is None:  # anonymous namespace
        return None, True
    return _WS.sub("", name.text.decode("utf-8", errors="replace")).replace("::", "."), True


def _make_c_calls(source_of: Callable[[], bytes]):
    def calls(node: Node) -> str | None:
        if node.type == "call_expression":
            callee = node.child_by_field_name("function")
            if callee is not None and callee.type == "template_function":
                callee = callee.child_by_field_name("name")
            name = _dotted_callee(callee, source_of(), _C_CALLEE_PARTS)
        elif node.type == "new_expression":
            type_node = node.child_by_field_name("type")
            if type_node is not None and type_node.type == "template_type":
                type_node = type_node.child_by_field_name("name")
            name = _dotted_callee(type_node, source_of(), _C_CALLEE_PARTS | {"type_identifier"})
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
    return [ParsedImport(target=_string_value(path, source), line=node.start_point[0] + 1)]


# ----------------------------------------------------------------------------------------------- C#

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


def _cs_declare(node: Node, walker: _Walker) -> _Decl | None:
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
        return _Decl(walker.text(name), kind, node, body, bases=bases)
    if node.type == "variable_declarator" and name is not None:
        field = node.parent.parent if node.parent is not None else None
        if field is not None and field.type == "field_declaration":
            if any(c.type == "modifier" and walker.text(c) == "const" for c in field.children):
                return _Decl(walker.text(name), "constant", field if field.named_child_count <= 4 else node, None)
    return None


def _cs_namespace(node: Node) -> tuple[str | None, bool]:
    name = node.child_by_field_name("name")
    text = _WS.sub("", name.text.decode("utf-8", errors="replace")) if name is not None else None
    return text, node.type == "namespace_declaration"


def _make_cs_calls(source_of: Callable[[], bytes]):
    def calls(node: Node) -> str | None:
        if node.type == "invocation_expression":
            callee = node.child_by_field_name("function")
            if callee is not None and callee.type == "generic_name" and callee.named_child_count:
                callee = callee.named_children[0]
            return _dotted_callee(callee, source_of(), _CS_CALLEE_PARTS)
        if node.type == "object_creation_expression":
            type_node = node.child_by_field_name("type")
            if type_node is not None and type_node.type == "generic_name" and type_node.named_child_count:
                type_node = type_node.named_children[0]
            return _dotted_callee(type_node, source_of(), frozenset({"identifier", "qualified_name"}))
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
    dotted = _WS.sub("", source[target.start_byte : target.end_byte].decode("utf-8", errors="replace"))
    alias = node.child_by_field_name("name")
    if alias is not None and alias.id != target.id:
        prefix, _, last = dotted.rpartition(".")
        alias_text = source[alias.start_byte : alias.end_byte].decode()
        return [ParsedImport(target=prefix, names=(f"{last} as {alias_text}",), line=line)]
    if any(c.type == "static" for c in node.children):
        return [ParsedImport(target=dotted, names=("*",), line=line)]
    return [ParsedImport(target=dotted, line=line)]


# --------------------------------------------------------------------------------------------- Ruby

_RUBY_IMPORTS = frozenset({"require", "require_relative", "load"})
_RUBY_MIXINS = frozenset({"include", "extend", "prepend"})
_RUBY_NOT_CALLS = _RUBY_IMPORTS | _RUBY_MIXINS | frozenset(
    {"attr_reader", "attr_writer", "attr_accessor", "private", "protected", "public", "module_function", "new"}
)
_RUBY_RECEIVERS = frozenset({"identifier", "constant", "self", "scope_resolution"})


def _ruby_declare(node: Node, walker: _Walker) -> _Decl | None:
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
        return _Decl(last, "class", node, body, qualifier=qualifier or None, bases=bases)
    if kind in ("method", "singleton_method"):
        name = node.child_by_field_name("name")
        if name is None:
            return None
        obj = node.child_by_field_name("object")
        qualifier = walker.text(obj).replace("::", ".") if obj is not None and obj.type != "self" else None
        return _Decl(walker.text(name), "function", node, node.child_by_field_name("body"), qualifier=qualifier)
    if kind == "assignment":
        left, parent = node.child_by_field_name("left"), node.parent
        at_top = parent is not None and (
            parent.type == "program"
            or (parent.type == "body_statement" and parent.parent is not None and parent.parent.type in ("class", "module"))
        )
        if at_top and left is not None and left.type == "constant":
            return _Decl(walker.text(left), "constant", node, None)
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
    target = _string_value(string, source)
    return [ParsedImport(target=target, level=int(name == "require_relative"), line=node.start_point[0] + 1)]


# ---------------------------------------------------------------------------------------------- PHP

_PHP_KINDS = {
    "class_declaration": "class",
    "trait_declaration": "class",
    "interface_declaration": "interface",
    "enum_declaration": "enum",
    "function_definition": "function",
    "method_declaration": "method",
}
_PHP_REQUIRES = frozenset({"require_expression", "require_once_expression", "include_expression", "include_once_expression"})
_PHP_NAMES = frozenset({"name", "qualified_name"})
_PHP_RELATIVE_SCOPES = frozenset({"self", "static", "parent"})


def _php_name(node: Node) -> str:
    """`\\App\\Models\\User` -> "App.Models.User"."""
    return _WS.sub("", node.text.decode("utf-8", errors="replace")).lstrip("\\").replace("\\", ".")


def _php_declare(node: Node, walker: _Walker) -> _Decl | None:
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
        return _Decl(walker.text(name), kind, node, node.child_by_field_name("body"), bases=bases)
    if node.type == "const_element":
        name = next((c for c in node.named_children if c.type == "name"), None)
        declaration = node.parent
        if name is not None and declaration is not None:
            outer = declaration if declaration.named_child_count == 1 else node
            return _Decl(walker.text(name), "constant", outer, None)
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
            return [ParsedImport(target=_string_value(argument, source), line=line)]
        if argument is not None and argument.type == "binary_expression":
            left, right = argument.child_by_field_name("left"), argument.child_by_field_name("right")
            if left is not None and right is not None and right.type in ("string", "encapsed_string"):
                if source[left.start_byte : left.end_byte] in (b"__DIR__", b"dirname(__FILE__)"):
                    return [ParsedImport(target="." + _string_value(right, source), level=1, line=line)]
    return []


def _php_use_name(clause: Node) -> str:
    """"App.Support.Str" or "Builder as B" for one `use` clause."""
    name = next((c for c in clause.named_children if c.type in _PHP_NAMES), None)
    alias = clause.child_by_field_name("alias")
    text = _php_name(name) if name is not None else ""
    return f"{text} as {alias.text.decode()}" if alias is not None else text


# ----------------------------------------------------------------------------------------- registry


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


def _is_line_comment(raw: str) -> bool:
    return raw.startswith("//") and not raw.startswith("///")


def _is_rust_doc(raw: str) -> bool:
    return raw.startswith("///") or raw.startswith("/**")


def _is_any_comment(raw: str) -> bool:
    """C / C++ conventions vary (`/** */`, `///`, `/* */`, `//`): any comment right above a declaration documents it."""
    return True


def _is_csharp_doc(raw: str) -> bool:
    return raw.startswith("///") or raw.startswith("/**")


def _is_hash_comment(raw: str) -> bool:
    return raw.startswith("#") and not raw.startswith("#!")


_JS = _spec(
    _js_declare,
    _make_js_calls,
    _js_imports,
    {"comment"},
    _is_jsdoc,
    bound_types=frozenset({"extends_clause", "implements_clause", "extends_type_clause"}),
)
_SPEC_FACTORIES: dict[str, Callable[[bytes], _Spec]] = {
    "javascript": _JS,
    "typescript": _JS,
    "tsx": _JS,
    "go": _spec(
        _go_declare, _make_go_calls, _go_imports, {"comment"}, _is_line_comment, builtin_types=_GO_BUILTIN_TYPES
    ),
    "java": _spec(
        _java_declare,
        _make_java_calls,
        _java_imports,
        {"line_comment", "block_comment"},
        _is_jsdoc,
        bound_types=frozenset({"superclass", "type_list", "extends_interfaces"}),
    ),
    "rust": _spec(
        _rust_declare,
        _make_rust_calls,
        _rust_imports,
        {"line_comment", "block_comment"},
        _is_rust_doc,
        bound_types=frozenset({"trait_bounds"}),
    ),
    "c": _spec(_c_declare, _make_c_calls, _c_imports, {"comment"}, _is_any_comment),
    "cpp": _spec(
        _c_declare,
        _make_c_calls,
        _c_imports,
        {"comment"},
        _is_any_comment,
        bound_types=frozenset({"base_class_clause"}),
        namespace_types=frozenset({"namespace_definition"}),
        namespace=_cpp_namespace,
    ),
    "csharp": _spec(
        _cs_declare,
        _make_cs_calls,
        _cs_imports,
        {"comment"},
        _is_csharp_doc,
        namespace_types=frozenset({"namespace_declaration", "file_scoped_namespace_declaration"}),
        namespace=_cs_namespace,
    ),
    "ruby": _spec(
        _ruby_declare,
        _make_ruby_calls,
        _ruby_imports,
        {"comment"},
        _is_hash_comment,
        mixin_types=frozenset({"call"}),
        mixins=_ruby_mixins,
    ),
    "php": _spec(
        _php_declare,
        _make_php_calls,
        _php_imports,
        {"comment"},
        _is_jsdoc,
        namespace_types=frozenset({"namespace_definition"}),
        namespace=_php_namespace,
        mixin_types=frozenset({"use_declaration"}),
        mixins=_php_mixins,
    ),
}
