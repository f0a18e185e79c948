"""Python parser on the standard library `ast`: symbols, imports, references, comments of one file.

Imports keep aliases in `names`: `from m import f as g` -> names ("f as g",); `import a.b as c` -> target
"a.b", names ("a.b as c",); a plain `import a.b` has no names.
Comments come from a single regex pass that skips string literals (`tokenize` is ~5x slower than
`ast.parse` itself), so they are also available when the file does not parse.
"""

from __future__ import annotations

import ast
import re

from cra.dataflows.index.parsers.models import (
    ParsedComment,
    ParsedFile,
    ParsedImport,
    ParsedReference,
    ParsedSymbol,
)

_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
_TYPE_ALIAS_NODE = getattr(ast, "TypeAlias", None)  # `type X = ...` (Python >= 3.12)
_CONSTANT_NAME = re.compile(r"^_*[A-Z][A-Z0-9_]*$")
_ENUM_BASES = frozenset({"Enum", "IntEnum", "StrEnum", "Flag", "IntFlag"})
_ALIAS_FACTORIES = frozenset({"TypeAliasType", "NewType"})
_NOT_SYMBOL_FACTORIES = frozenset({"TypeVar", "ParamSpec", "TypeVarTuple"})
_ALIAS_GENERICS = frozenset({"Union", "Optional", "Callable", "Literal", "Annotated"})

# string literals (skipped) or a comment; strings first so a '#' inside a string is never a comment
_STRING_OR_COMMENT = re.compile(
    r'"""(?:[^"\\]|\\.|"(?!""))*"""'
    r"|'''(?:[^'\\]|\\.|'(?!''))*'''"
    r'|"(?:[^"\\\n]|\\.)*"'
    r"|'(?:[^'\\\n]|\\.)*'"
    r"|(#[^\n]*)",
    re.S,
)
_IMPORT_LINE = re.compile(
    r"^[ \t]*(?:from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+\(?([\w ,\t]+)|import[ \t]+([\w., \t]+))", re.M
)


def parse_python(text: str) -> ParsedFile:
    """Parse Python source; a file that does not compile keeps its comments and simple imports."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        return ParsedFile(
            comments=_comments(text, []),
            imports=_regex_imports(text),
            error=f"SyntaxError: {exc.msg} (line {exc.lineno})",
        )
    except (ValueError, MemoryError, RecursionError) as exc:
        return ParsedFile(comments=_comments(text, []), error=f"{type(exc).__name__}: {exc}")
    collector = _Collector(text.split("\n"))
    error = None
    try:
        collector.statements(tree.body, None, "module")
    except RecursionError:
        error = "RecursionError: nesting too deep, symbols after it are missing"
    return ParsedFile(
        symbols=collector.symbols,
        comments=_comments(text, collector.symbols),
        imports=collector.imports,
        references=collector.references,
        error=error,
    )


class _Collector:
    """One pass over the statements; expressions are only walked to find calls of a symbol."""

    def __init__(self, lines: list[str]):
        self.lines = lines
        self.symbols: list[ParsedSymbol] = []
        self.imports: list[ParsedImport] = []
        self.references: list[ParsedReference] = []
        self._seen: set[tuple[int, str, str]] = set()

    def statements(self, body: list, scope: int | None, container: str) -> None:
        for node in body:
            kind = type(node)
            if kind in _FUNCS:
                self._function(node, scope, container)
            elif kind is ast.ClassDef:
                self._class(node, scope)
            elif kind is ast.Import:
                for alias in node.names:
                    names = (_aliased(alias),) if alias.asname else ()
                    self.imports.append(ParsedImport(target=alias.name, names=names, line=node.lineno))
            elif kind is ast.ImportFrom:
                names = tuple(_aliased(alias) for alias in node.names)
                self.imports.append(
                    ParsedImport(target=node.module or "", names=names, level=node.level, line=node.lineno)
                )
            else:
                if container != "function" and kind in (ast.Assign, ast.AnnAssign):
                    self._assignment(node, scope)
                elif _TYPE_ALIAS_NODE is not None and kind is _TYPE_ALIAS_NODE and container != "function":
                    self._add(node.name.id, "type_alias", node, node.lineno, self._first_line(node), scope)
                if kind is ast.AnnAssign and scope is not None:
                    self._annotations(node.annotation, scope)
                self._children(node, scope, container)

    def _children(self, node: ast.AST, scope: int | None, container: str) -> None:
        """Recurse into nested statement blocks; scan expressions for calls (only inside a symbol)."""
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                self.statements([child], scope, container)
            elif isinstance(child, (ast.excepthandler, ast.match_case)):
                self._children(child, scope, container)
            elif scope is not None:
                self._calls(child, scope)

    def _function(self, node: ast.FunctionDef, scope: int | None, container: str) -> None:
        kind = "method" if container == "class" else "function"
        idx = self._add(node.name, kind, node, _start_line(node), self._header(node, _function_parts(node)), scope)
        for arg in _all_args(node.args):
            if arg.annotation is not None:
                self._annotations(arg.annotation, idx)
        if node.returns is not None:
            self._annotations(node.returns, idx)
        for expr in [*node.decorator_list, *node.args.defaults, *node.args.kw_defaults]:
            if expr is not None:
                self._calls(expr, idx)
        self.statements(node.body, idx, "function")

    def _class(self, node: ast.ClassDef, scope: int | None) -> None:
        base_names = [_dotted(base) for base in node.bases]
        is_enum = any(name and name.rsplit(".", 1)[-1] in _ENUM_BASES for name in base_names)
        parts = [*node.bases, *node.keywords]
        idx = self._add(
            node.name, "enum" if is_enum else "class", node, _start_line(node), self._header(node, parts), scope
        )
        for name in base_names:
            if name:
                self._ref(idx, name, "base")
        for expr in [*node.decorator_list, *node.bases, *(kw.value for kw in node.keywords)]:
            self._calls(expr, idx)
        self.statements(node.body, idx, "class")

    def _assignment(self, node: ast.Assign | ast.AnnAssign, scope: int | None) -> None:
        targets = node.targets if type(node) is ast.Assign else [node.target]
        names = [n.id for t in targets for n in (t.elts if type(t) is ast.Tuple else [t]) if type(n) is ast.Name]
        kind = _assignment_kind(node, names)
        if kind is None:
            return
        for name in names:
            if kind == "type_alias" or _CONSTANT_NAME.match(name):
                self._add(name, kind, node, node.lineno, self._first_line(node), scope)

    def _add(self, name: str, kind: str, node: ast.AST, start: int, signature: str, scope: int | None) -> int:
        parent = self.symbols[scope] if scope is not None else None
        qualified = f"{parent.qualified_name}.{name}" if parent else name
        decorators = tuple(_source_segment(self.lines, d) for d in getattr(node, "decorator_list", ()))
        docstring = ast.get_docstring(node) if isinstance(node, (*_FUNCS, ast.ClassDef)) else None
        self.symbols.append(
            ParsedSymbol(
                name=name,
                qualified_name=qualified,
                kind=kind,
                start_line=start,
                end_line=node.end_lineno or start,
                signature=signature,
                docstring=docstring,
                decorators=decorators,
                parent=scope,
            )
        )
        return len(self.symbols) - 1

    def _ref(self, symbol: int, name: str, kind: str) -> None:
        key = (symbol, name, kind)
        if key not in self._seen:
            self._seen.add(key)
            self.references.append(ParsedReference(symbol=symbol, name=name, kind=kind))

    def _calls(self, expr: ast.AST, symbol: int) -> None:
        stack = [expr]
        while stack:
            node = stack.pop()
            kind = type(node)
            if kind is ast.Call:
                name = _dotted(node.func)
                if name:
                    self._ref(symbol, name, "call")
            fields = _CHILD_FIELDS.get(kind)
            if fields is None:
                fields = _CHILD_FIELDS[kind] = _child_fields(kind)
            for field in fields:
                value = getattr(node, field, None)
                if type(value) is list:
                    stack.extend(value)
                elif value is not None:
                    stack.append(value)

    def _annotations(self, expr: ast.AST, symbol: int) -> None:
        for name in _annotation_names(expr):
            self._ref(symbol, name, "annotation")

    def _first_line(self, node: ast.AST) -> str:
        return self.lines[node.lineno - 1].strip()

    def _header(self, node: ast.AST, parts: list) -> str:
        """Source from `def`/`class` up to and including the ':' that opens the body."""
        line, col = node.lineno, _char_col(self.lines[node.lineno - 1], node.col_offset)
        ends = [(p.end_lineno, p.end_col_offset) for p in parts if getattr(p, "end_lineno", None)]
        scan_line, scan_col = (line, col)
        if ends:
            end_line, end_byte = max(ends)
            scan_line, scan_col = end_line, _char_col(self.lines[end_line - 1], end_byte)
        colon = _find_colon(self.lines, scan_line, scan_col)
        if colon is None:
            return self._first_line(node)
        end_line, end_col = colon
        if end_line == line:
            return self.lines[line - 1][col : end_col + 1]
        middle = self.lines[line : end_line - 1]
        return "\n".join([self.lines[line - 1][col:], *middle, self.lines[end_line - 1][: end_col + 1]])


def _aliased(alias: ast.alias) -> str:
    """An imported name as stored in `ParsedImport.names`: "f", or "f as g" when it is bound under an alias."""
    return f"{alias.name} as {alias.asname}" if alias.asname else alias.name


def _source_segment(lines: list[str], node: ast.AST) -> str:
    """Source text of an expression node (utf-8 byte columns converted), lines joined as written."""
    first, last = node.lineno, node.end_lineno or node.lineno
    start = _char_col(lines[first - 1], node.col_offset)
    end = _char_col(lines[last - 1], node.end_col_offset or 0)
    if first == last:
        return lines[first - 1][start:end]
    return "\n".join([lines[first - 1][start:], *lines[first : last - 1], lines[last - 1][:end]])


_LEAVES = (ast.Name, ast.Constant, ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def _child_fields(kind: type) -> tuple[str, ...]:
    """Fields of an expression node type that can hold sub-expressions (ctx/op/identifier fields dropped)."""
    if not issubclass(kind, ast.AST) or issubclass(kind, _LEAVES):
        return ()
    skip = {"ctx", "op", "ops", "name", "id", "attr", "arg", "type_comment", "conversion", "kind", "is_async"}
    return tuple(f for f in kind._fields if f not in skip)


def _char_col(line: str, byte_col: int) -> int:
    """Character column of a utf-8 byte offset (ast columns are bytes)."""
    if line.isascii():
        return byte_col
    return len(line.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore"))


def _find_colon(lines: list[str], line: int, col: int) -> tuple[int, int] | None:
    """First ':' at or after (line, col), skipping comments; only closing brackets/commas/names precede it."""
    for number in range(line, min(len(lines), line + 50) + 1):
        text = lines[number - 1]
        start = col if number == line else 0
        hash_at = text.find("#", start)
        colon_at = text.find(":", start)
        if colon_at != -1 and (hash_at == -1 or colon_at < hash_at):
            return number, colon_at
    return None


def _start_line(node: ast.AST) -> int:
    return min([node.lineno, *(d.lineno for d in node.decorator_list)])


def _all_args(args: ast.arguments) -> list[ast.arg]:
    extra = [a for a in (args.vararg, args.kwarg) if a is not None]
    return [*args.posonlyargs, *args.args, *args.kwonlyargs, *extra]


def _function_parts(node: ast.FunctionDef) -> list:
    args = node.args
    parts = [*_all_args(args), *args.defaults, *(d for d in args.kw_defaults if d is not None)]
    if node.returns is not None:
        parts.append(node.returns)
    return parts


def _dotted(node: ast.AST) -> str | None:
    """'a.b.c' for a Name/Attribute chain, None for anything else (calls on call results, subscripts...)."""
    parts = []
    while type(node) is ast.Attribute:
        parts.append(node.attr)
        node = node.value
    if type(node) is not ast.Name:
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _annotation_names(expr: ast.AST) -> list[str]:
    """Every Name / dotted Attribute inside an annotation; string annotations parsed when possible."""
    names: list[str] = []
    stack = [expr]
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is ast.Name or kind is ast.Attribute:
            dotted = _dotted(node)
            if dotted:
                names.append(dotted)
                continue
        if kind is ast.Constant and isinstance(node.value, str):
            try:
                stack.append(ast.parse(node.value.strip(), mode="eval").body)
            except (SyntaxError, ValueError, RecursionError):
                pass
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))
    return names


def _assignment_kind(node: ast.Assign | ast.AnnAssign, names: list[str]) -> str | None:
    """'type_alias', 'constant' or None (not a symbol) for a module/class-level assignment."""
    if type(node) is ast.AnnAssign:
        annotation = _dotted(node.annotation) or ""
        if annotation.rsplit(".", 1)[-1] == "TypeAlias":
            return "type_alias"
        return "constant"
    value = node.value
    if type(value) is ast.Call:
        factory = (_dotted(value.func) or "").rsplit(".", 1)[-1]
        if factory in _ALIAS_FACTORIES:
            return "type_alias"
        if factory in _NOT_SYMBOL_FACTORIES:
            return None
    if type(value) is ast.Subscript and len(names) == 1 and not _CONSTANT_NAME.match(names[0]):
        generic = (_dotted(value.value) or "").rsplit(".", 1)[-1]
        if generic in _ALIAS_GENERICS:
            return "type_alias"
    return "constant"


def _comments(text: str, symbols: list[ParsedSymbol]) -> list[ParsedComment]:
    """Every '#' comment (marker stripped) with its line and innermost enclosing symbol."""
    owner = _line_owners(symbols, text.count("\n") + 2)
    out: list[ParsedComment] = []
    line, pos = 1, 0
    for match in _STRING_OR_COMMENT.finditer(text):
        if match.lastindex is None:
            continue
        start = match.start()
        line += text.count("\n", pos, start)
        pos = start
        out.append(ParsedComment(line=line, text=match.group(1)[1:].strip(), symbol=owner[line]))
    return out


def _line_owners(symbols: list, n_lines: int) -> list[int | None]:
    """Per line, the innermost symbol whose range contains it (symbols are in pre-order: children last)."""
    owner: list[int | None] = [None] * (n_lines + 1)
    for idx, sym in enumerate(symbols):
        start, end = sym.start_line, min(sym.end_line, n_lines)
        owner[start : end + 1] = [idx] * (end - start + 1)
    return owner


def _regex_imports(text: str) -> list[ParsedImport]:
    """Single-line imports of a file that does not parse (best effort), aliases kept as "f as g"."""
    out: list[ParsedImport] = []
    for match in _IMPORT_LINE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        dots, module, names, plain = match.groups()
        if plain is not None:
            for item in plain.split(","):
                words = item.split()
                if words:
                    aliased = (" ".join(words[:3]),) if len(words) >= 3 and words[1] == "as" else ()
                    out.append(ParsedImport(target=words[0], names=aliased, line=line))
        else:
            imported = tuple(
                " ".join(w[:3]) if len(w) >= 3 and w[1] == "as" else w[0] for w in map(str.split, names.split(",")) if w
            )
            out.append(ParsedImport(target=module, names=imported, level=len(dots), line=line))
    return out
