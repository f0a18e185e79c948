"""Run one node of the retrieval DAG on small frames, the way a request runs it (test support).

Values for the DAG's inputs go in as inputs, values for its nodes (a TaskQuery, a scope) as overrides; the word
tables a test does not give are built by their nodes (`cra.dataflows.retrieval.word_tables`) from the frames.
"""

from __future__ import annotations

from functools import cache

import pandas as pd

from cra.dataflows.lexical import Bm25Index
from cra.drivers.retrieval.retriever import retrieval_driver

EMPTY_LEXICON = Bm25Index.from_terms(pd.DataFrame(columns=["file_id", "term", "tf"]), "file_id")  # no files indexed


@cache
def _external_inputs() -> frozenset[str]:
    return frozenset(v.name for v in retrieval_driver().list_available_variables() if v.is_external_input)


def run_node(name: str, **values):
    """The value of node `name`, computed from `values` (inputs and node overrides by name)."""
    inputs = {k: v for k, v in values.items() if k in _external_inputs()}
    overrides = {k: v for k, v in values.items() if k not in inputs}
    return retrieval_driver().execute([name], inputs=inputs, overrides=overrides)[name]
