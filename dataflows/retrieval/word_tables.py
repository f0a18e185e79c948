"""The per-KB word tables as nodes: per-file and per-symbol string work (splitting paths and names into words,
stemming) that a request only merges against.

Each node builds its table from the KB frames. A driver that has them already (written with the KB, loaded once
per process: `cra.drivers.kb.store.KnowledgeBase.word_overrides`) hands them to the retrieval DAG as overrides
(`execute(overrides=...)`), so in a request none of these nodes runs; without overrides (a notebook, a test on
three rows) the same nodes build them.
"""

from __future__ import annotations

import pandas as pd

from cra.dataflows.retrieval import carried_words, symbol_table, vocabulary
from cra.dataflows.retrieval.carried_words import PreviousSymbolWords, SymbolNamePatch
from cra.dataflows.retrieval.symbol_table import SymbolTable
from cra.dataflows.retrieval.vocabulary import NameIndex, WordIndex

# the tables persisted with a KB (`kb_<name>` nodes); the others are built from them once per loaded KB
PERSISTED = (
    "path_components",
    "path_words",
    "symbol_names",
    "symbol_name_words",
    "symbol_name_codes",
    "symbol_name_terms",
    "symbol_norms",
    "domain_words",
    "module_words",
    "file_concepts",
    "concept_vocabulary",
    "symbol_name_index",
)
DERIVED = ("symbol_table",)


def kb_path_table(kb_files: pd.DataFrame) -> pd.DataFrame:
    """Every file's path components with their words and stems: what the two path word indexes are built from."""
    return vocabulary.path_components(kb_files)


def kb_path_components(kb_path_table: pd.DataFrame) -> WordIndex:
    """Whole path components (directory and file names) -> files: path_match's "keyword equals the component"."""
    return vocabulary.path_component_index(kb_path_table)


def kb_path_words(kb_path_table: pd.DataFrame) -> WordIndex:
    """Words of path components -> files: path_match's word and prefix matches."""
    return vocabulary.path_word_index(kb_path_table)


def kb_symbol_name_patch(
    kb_symbols: pd.DataFrame, previous_symbol_words: PreviousSymbolWords | None = None
) -> SymbolNamePatch | None:
    """On a re-index (previous_symbol_words: the previous KB's symbol word tables), how this KB's names and symbols
    map onto the previous ones, so the symbol tables below carry their rows; None: they are built from scratch."""
    if previous_symbol_words is None:
        return None
    return carried_words.symbol_name_patch(kb_symbols, previous_symbol_words)


def kb_symbol_names(kb_symbols: pd.DataFrame, kb_symbol_name_patch: SymbolNamePatch | None = None) -> pd.DataFrame:
    """The distinct symbol names (name, lower), so names are matched once, not once per symbol."""
    if kb_symbol_name_patch is not None:
        return kb_symbol_name_patch.names
    return vocabulary.symbol_names(kb_symbols)


def kb_symbol_name_words(
    kb_symbol_names: pd.DataFrame, kb_symbol_name_patch: SymbolNamePatch | None = None
) -> WordIndex:
    """Words of symbol names -> name codes: symbol_match's constituent matches."""
    if kb_symbol_name_patch is not None:
        return carried_words.symbol_name_words(kb_symbol_name_patch)
    return vocabulary.symbol_name_word_index(kb_symbol_names)


def kb_symbol_name_codes(
    kb_symbols: pd.DataFrame, kb_symbol_names: pd.DataFrame, kb_symbol_name_patch: SymbolNamePatch | None = None
) -> pd.DataFrame:
    """Each symbol's name code and file: how a name match spreads to symbols and files."""
    if kb_symbol_name_patch is not None:
        return carried_words.symbol_name_codes(kb_symbols, kb_symbol_name_patch)
    return vocabulary.symbol_name_codes(kb_symbols, kb_symbol_names)


def kb_symbol_name_terms(
    kb_symbol_names: pd.DataFrame, kb_symbol_name_patch: SymbolNamePatch | None = None
) -> pd.DataFrame:
    """The index terms of each distinct name: precision's name-coverage test."""
    if kb_symbol_name_patch is not None:
        return carried_words.symbol_name_terms(kb_symbol_name_patch)
    return vocabulary.symbol_name_terms(kb_symbol_names)


def kb_symbol_norms(kb_symbols: pd.DataFrame, kb_symbol_name_patch: SymbolNamePatch | None = None) -> pd.DataFrame:
    """Normalised name and qualified name of each symbol: precision's symbol-hint matches."""
    if kb_symbol_name_patch is not None:
        return carried_words.symbol_norms(kb_symbols, kb_symbol_name_patch)
    return vocabulary.symbol_norms(kb_symbols)


def kb_domain_words(kb_files: pd.DataFrame) -> pd.DataFrame:
    """(file_id, stem) words of each file's domain label: domain_match."""
    return vocabulary.domain_words(kb_files)


def kb_module_words(kb_files: pd.DataFrame) -> pd.DataFrame:
    """(file_id, stem) words of each file's module name: domain_match."""
    return vocabulary.module_words(kb_files)


def kb_file_concepts(kb_files: pd.DataFrame) -> pd.DataFrame:
    """(file_id, concept) pairs: concept_overlap."""
    return vocabulary.file_concepts(kb_files)


def kb_concept_vocabulary(
    kb_files: pd.DataFrame, previous_concept_vocabulary: pd.DataFrame | None = None
) -> pd.DataFrame:
    """The KB's (concept, stem) vocabulary: task analysis grounds the task's concepts in it (on a re-index, the
    concepts the previous KB's vocabulary holds keep its stems)."""
    return vocabulary.concept_vocabulary(kb_files, previous_concept_vocabulary)


def kb_symbol_name_index(kb_symbol_names: pd.DataFrame, kb_symbol_name_codes: pd.DataFrame) -> NameIndex:
    """Searchable symbol names and the files carrying each: symbol_match's substring matches."""
    return vocabulary.name_index(kb_symbol_names, kb_symbol_name_codes)


def kb_symbol_table(
    kb_symbols: pd.DataFrame,
    kb_symbol_edges: pd.DataFrame,
    kb_symbol_name_codes: pd.DataFrame,
    kb_symbol_name_terms: pd.DataFrame,
    kb_symbol_norms: pd.DataFrame,
    kb_files: pd.DataFrame | None = None,
    language_conventions: dict | None = None,
) -> SymbolTable:
    """The symbols as arrays (parents, edges, name terms) for the precision stage; with kb_files and
    language_conventions, also which are tests by their attributes (Rust `#[test]` in a source file)."""
    return symbol_table.symbol_table(
        kb_symbols,
        kb_symbol_edges,
        kb_symbol_name_codes,
        kb_symbol_name_terms,
        kb_symbol_norms,
        kb_files,
        language_conventions,
    )
