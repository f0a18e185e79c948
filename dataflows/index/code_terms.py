"""Term counting of code at index time (a helper module, not a Hamilton module: no driver lists it, so its public
functions are not nodes): the counts of `cra.dataflows.text.terms`, tokenising each distinct identifier once."""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache

from cra.dataflows.text import terms

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@lru_cache(maxsize=500_000)
def identifier_terms(identifier: str) -> tuple[str, ...]:
    """`terms` of one identifier, cached: code repeats the same identifiers thousands of times."""
    return tuple(terms(identifier))


def code_term_counts(text: str) -> Counter:
    """Same counts, in the same first-seen order, as Counter(terms(text)) (terms works identifier by identifier),
    ~4x faster on code."""
    counts: Counter = Counter()
    for identifier, n in Counter(IDENTIFIER.findall(text)).items():
        for term in identifier_terms(identifier):
            counts[term] += n
    return counts
