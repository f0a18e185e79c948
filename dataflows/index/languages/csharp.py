"""C#: the tree-sitter walker's `csharp_spec`; `using` names a namespace or a class (see `namespaces`)."""

from __future__ import annotations

from cra.dataflows.index.languages import namespaces
from cra.dataflows.index.languages.common import RepositoryFiles
from cra.dataflows.index.parsers.ts_csharp import csharp_spec

LANGUAGES = frozenset({"csharp"})
CONVENTIONS = "csharp"  # data/conventions/csharp.toml
SPECS = {"csharp": csharp_spec}
# types are named unqualified across the whole project: C# sees its own namespace, every enclosing one and each it
# `using`s (a project's usual reach); its type names, one per project almost always, resolve repository-wide
PROJECT_SCOPE = frozenset({"csharp"})
NAMESPACE_IMPORTS = True  # its imports name namespaced classes: its top-level symbols join the namespace table


def grammar(language: str):
    """The tree-sitter grammar of C#."""
    import tree_sitter_c_sharp as grammar

    return grammar.language()


class Resolver:
    """C# `using A.B;`, `using static A.B.C;`, `using X = A.B.C;`."""

    def __init__(self, repo: RepositoryFiles):
        self.repo = repo

    @staticmethod
    def question(path: str, module: str, package: str, target: str, names: tuple[str, ...], level: int) -> tuple:
        """What `resolve` reads of an import row: its target and names."""
        return target, names

    def resolve(self, path: str, module: str, package: str, target: str, names: list[str], level: int):
        return namespaces.namespaced(self.repo, target, names)
