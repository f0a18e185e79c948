"""Term extraction shared by indexing and retrieval, so the index and the query speak one vocabulary."""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache

import Stemmer

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# the words of one identifier chunk: "HTTPServerError2" -> HTTP, Server, Error2 ; "parse_url" is split on "_" by _IDENT handling
CAMEL_WORDS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+[0-9]*|[A-Z]+[0-9]*|[0-9]+")

STOP_WORDS = frozenset(
    """
a about above after again against all also am an and any are as at be because been before being below
between both but by can cannot could did do does doing down during each else few for from further get gets
got had has have having he her here hers herself him himself his how however i if in into is it its itself
just let like may me might more most must my myself no nor not now of off on once only or other ought our
ours ourselves out over own same shall she should so some such than that the their theirs them themselves
then there these they this those through to too under until up upon us very was we were what when where
which while who whom why will with would you your yours yourself yourselves
self cls none true false return returns def class import from pass elif lambda yield
one two use used using way want wants need needs see seems still thing things think know make makes made
e g eg ie etc
""".split()
)

_MIN_LEN = 2


def split_identifier(identifier: str) -> list[str]:
    """Lower-cased constituent words of a CamelCase / snake_case / dotted identifier."""
    parts: list[str] = []
    for chunk in re.split(r"[_.\-/:]+", identifier):
        parts.extend(p.lower() for p in CAMEL_WORDS.findall(chunk))
    return parts


_STEMMER = Stemmer.Stemmer("english")


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    """Snowball English stem (PyStemmer, as bm25s uses), cached: 'parsing' and 'parse' meet at 'pars'."""
    return _STEMMER.stemWord(word)


def stem_words(words: list[str]) -> list[str]:
    """`stem` of each word in one call to the stemmer (thousands of words: a third of the time of a call each)."""
    return _STEMMER.stemWords(words)


def terms(text: str) -> list[str]:
    """Index terms of free text or code: identifiers split into words, lower-cased, stemmed, stop words dropped.

    Whole identifiers that split into several words are kept too ("getattr" next to "get", "attr" is not
    possible, but "parse_url" yields "parse_url", "parse", "url"), so exact identifier hits weigh more.
    """
    out: list[str] = []
    for ident in _IDENT.findall(text):
        words = split_identifier(ident)
        if len(words) > 1:
            whole = ident.lower().strip("_")
            if len(whole) >= _MIN_LEN:
                out.append(whole)
        for w in words:
            if len(w) >= _MIN_LEN and w not in STOP_WORDS and not w.isdigit():
                out.append(stem(w))
    return out


def term_counts(text: str) -> Counter:
    """Term frequencies of a document (see `terms`)."""
    return Counter(terms(text))
