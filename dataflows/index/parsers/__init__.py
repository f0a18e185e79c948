"""Language detection and parsing of one source file into `ParsedFile` records (helper library, not a Hamilton module).

`language_of(path)` names the language of a text source we index (None = skip the file), `header_language` corrects
it from the text (a C++ `.h` header);
`parse_source(language, text)` returns symbols/imports/references/comments for the twelve parsed
languages and None for text-only ones. It never raises: failures become `ParsedFile(error=...)`.
"""

from __future__ import annotations

import re

from cra.dataflows.index.parsers.models import ParsedFile

PARSED_LANGUAGES = frozenset(
    {"python", "javascript", "typescript", "tsx", "go", "java", "rust", "c", "cpp", "csharp", "ruby", "php"}
)

LANGUAGE_BY_EXTENSION: dict[str, str] = {
    # parsed
    "py": "python",
    "pyi": "python",
    "c": "c",
    "h": "c",
    "cc": "cpp",
    "cpp": "cpp",
    "cxx": "cpp",
    "hpp": "cpp",
    "hh": "cpp",
    "hxx": "cpp",
    "inl": "cpp",
    "ipp": "cpp",
    "tpp": "cpp",
    "txx": "cpp",
    "cs": "csharp",
    "rb": "ruby",
    "php": "php",
    "js": "javascript",
    "jsx": "javascript",
    "mjs": "javascript",
    "cjs": "javascript",
    "ts": "typescript",
    "mts": "typescript",
    "cts": "typescript",
    "tsx": "tsx",
    "go": "go",
    "java": "java",
    "rs": "rust",
    # indexed as text
    "md": "markdown",
    "markdown": "markdown",
    "mdx": "markdown",
    "rst": "rst",
    "txt": "text",
    "adoc": "asciidoc",
    "toml": "toml",
    "yaml": "yaml",
    "yml": "yaml",
    "json": "json",
    "jsonc": "json",
    "cfg": "ini",
    "ini": "ini",
    "conf": "ini",
    "properties": "properties",
    "env": "dotenv",
    "xml": "xml",
    "gradle": "gradle",
    "lock": "text",
    "sh": "shell",
    "bash": "shell",
    "zsh": "shell",
    "fish": "shell",
    "ps1": "powershell",
    "bat": "batch",
    "kt": "kotlin",
    "kts": "kotlin",
    "swift": "swift",
    "scala": "scala",
    "sc": "scala",
    "clj": "clojure",
    "ex": "elixir",
    "exs": "elixir",
    "erl": "erlang",
    "hs": "haskell",
    "ml": "ocaml",
    "lua": "lua",
    "pl": "perl",
    "pm": "perl",
    "r": "r",
    "jl": "julia",
    "dart": "dart",
    "m": "objective-c",
    "mm": "objective-c",
    "zig": "zig",
    "nim": "nim",
    "v": "v",
    "sql": "sql",
    "graphql": "graphql",
    "gql": "graphql",
    "proto": "protobuf",
    "thrift": "thrift",
    "html": "html",
    "htm": "html",
    "css": "css",
    "scss": "scss",
    "sass": "sass",
    "less": "less",
    "vue": "vue",
    "svelte": "svelte",
    "tf": "terraform",
    "hcl": "hcl",
    "nix": "nix",
    "pyx": "cython",
    "pxd": "cython",
    "ipynb": "json",
    "cmake": "cmake",
    "mk": "make",
}
LANGUAGE_BY_FILENAME: dict[str, str] = {
    "dockerfile": "dockerfile",
    "makefile": "make",
    "gnumakefile": "make",
    "cmakelists.txt": "cmake",
    "readme": "text",
    "license": "text",
    "changelog": "text",
    "authors": "text",
    "contributing": "text",
    ".gitignore": "text",
    ".dockerignore": "text",
    ".editorconfig": "ini",
    "procfile": "text",
    "gemfile": "ruby",
    "rakefile": "ruby",
    "vagrantfile": "ruby",
    "jenkinsfile": "groovy",
}


def language_of(path: str) -> str | None:
    """Language of a repository path by file name / extension; None when it is not a text source we index
    (string operations only, no path object: the indexer calls it for every scanned file)."""
    name = path.rpartition("/")[2].rpartition("\\")[2].lower()
    if name in LANGUAGE_BY_FILENAME:
        return LANGUAGE_BY_FILENAME[name]
    if name.startswith("dockerfile."):
        return "dockerfile"
    return LANGUAGE_BY_EXTENSION.get(name.rsplit(".", 1)[-1] if "." in name.lstrip(".") else "")


# what C cannot say: a namespace, a template, a class, `using namespace`, <string>-style headers, access labels, `::`
_CPP_TEXT = re.compile(
    r"^[ \t]*(?:namespace(?:[ \t]+[\w:]+)?[ \t]*\{|template[ \t]*<|class[ \t]+\w+|using[ \t]+namespace[ \t]"
    r"|#[ \t]*include[ \t]*<\w+>|(?:public|private|protected)[ \t]*:)|\w::~?\w",
    re.MULTILINE,
)


def is_cpp_text(text: str) -> bool:
    """Whether C-looking source (a `.h` header, or a file handed to the C parser) is C++."""
    return bool(_CPP_TEXT.search(text))


def header_language(path: str, language: str | None, text: str | None) -> str | None:
    """The language of a file given its text: a `.h` header (C by its extension) whose text is C++ is C++, so that
    the KB says so and it is parsed with the C++ grammar (classes, namespaces, templates) rather than misread as C."""
    if language == "c" and text and path.endswith(".h") and is_cpp_text(text):
        return "cpp"
    return language


def parse_source(language: str, text: str) -> ParsedFile | None:
    """Parse one file of a parsed language (None for text-only languages); never raises."""
    if language not in PARSED_LANGUAGES:
        return None
    try:
        if language == "python":
            from cra.dataflows.index.parsers.python_ast import parse_python

            return parse_python(text)
        from cra.dataflows.index.parsers.treesitter import parse_treesitter

        return parse_treesitter(language, text)
    except Exception as exc:  # noqa: BLE001 - a parser bug must not stop indexing
        return ParsedFile(error=f"{type(exc).__name__}: {exc}")


__all__ = ["LANGUAGE_BY_EXTENSION", "PARSED_LANGUAGES", "header_language", "is_cpp_text", "language_of", "parse_source"]
