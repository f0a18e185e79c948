"""Precision tiers on a hand-built scope: what is primary, supporting, type context, excluded."""

from __future__ import annotations

import pandas as pd
import pytest

from cra.dataflows.lexical import Bm25Index
from cra.dataflows.retrieval import precision
from cra.dataflows.retrieval.models import TaskQuery
from cra.dataflows.text import term_counts
from tests.retrieval_dag import run_node

HANDLER = '''from auth.types import LoginRequest, AuthResult


class LoginHandler:
    """Handles login requests."""

    def validate_login(self, request: LoginRequest) -> AuthResult:
        """Validate credentials and return an auth token."""
        # Workaround for legacy LDAP integration: remove after the migration
        if request.source == "ldap":
            return validate_ldap(request)
        return AuthResult(hash_password(request.password) == "x", "tok", None)

    def logout(self):
        # Hack because sessions are global
        return None


def hash_password(password: str) -> str:
    """Hash a password with the site salt."""
    return password[::-1]


def get(key):
    return key
'''
TYPES = """class Credentials:
    username: str


class LoginRequest(Credentials):
    password: str
    source: str = "default"


class AuthResult:
    success: bool


class UnrelatedType:
    x: int
"""
LDAP = '''def validate_ldap(request):
    """Check the request against the LDAP directory."""
    return True
'''
TEST_AUTH = """from auth.handler import LoginHandler


def make_request():
    return object()


def test_validate_login_ldap():
    result = LoginHandler().validate_login(make_request())
    assert result.success is True
    assert result.token is not None


def test_logout():
    assert LoginHandler().logout() is None
"""
TEST_OTHER = """from auth.handler import LoginHandler


def other_helper():
    return 1


def test_banner():
    assert other_helper() == 1
"""

FILES = [
    # file_id, path, language, is_test, text
    (0, "src/auth/handler.py", "python", False, HANDLER),
    (1, "src/auth/types.py", "python", False, TYPES),
    (2, "src/auth/ldap.py", "python", False, LDAP),
    (3, "tests/test_auth.py", "python", True, TEST_AUTH),
    (4, "tests/test_other.py", "python", True, TEST_OTHER),
]
SYMBOLS = [
    # symbol_id, file_id, name, qualified_name, kind, start, end, signature, docstring, parent
    (0, 0, "LoginHandler", "LoginHandler", "class", 4, 17, "class LoginHandler:", "Handles login requests.", None),
    (
        1,
        0,
        "validate_login",
        "LoginHandler.validate_login",
        "method",
        7,
        12,
        "def validate_login(self, request: LoginRequest) -> AuthResult:",
        "Validate credentials and return an auth token.",
        0,
    ),
    (2, 0, "logout", "LoginHandler.logout", "method", 14, 16, "def logout(self):", None, 0),
    (
        3,
        0,
        "hash_password",
        "hash_password",
        "function",
        19,
        21,
        "def hash_password(password: str) -> str:",
        "Hash a password with the site salt.",
        None,
    ),
    (4, 0, "get", "get", "function", 24, 25, "def get(key):", None, None),
    (5, 1, "Credentials", "Credentials", "class", 1, 2, "class Credentials:", None, None),
    (6, 1, "LoginRequest", "LoginRequest", "class", 5, 7, "class LoginRequest(Credentials):", None, None),
    (7, 1, "AuthResult", "AuthResult", "class", 10, 11, "class AuthResult:", None, None),
    (8, 1, "UnrelatedType", "UnrelatedType", "class", 14, 15, "class UnrelatedType:", None, None),
    (
        9,
        2,
        "validate_ldap",
        "validate_ldap",
        "function",
        1,
        3,
        "def validate_ldap(request):",
        "Check the request against the LDAP directory.",
        None,
    ),
    (10, 3, "make_request", "make_request", "function", 4, 5, "def make_request():", None, None),
    (
        11,
        3,
        "test_validate_login_ldap",
        "test_validate_login_ldap",
        "function",
        8,
        11,
        "def test_validate_login_ldap():",
        None,
        None,
    ),
    (12, 3, "test_logout", "test_logout", "function", 14, 15, "def test_logout():", None, None),
    (13, 4, "other_helper", "other_helper", "function", 4, 5, "def other_helper():", None, None),
    (14, 4, "test_banner", "test_banner", "function", 8, 9, "def test_banner():", None, None),
]
SYMBOL_EDGES = [
    (1, 3, "call"),
    (1, 9, "call"),
    (1, 6, "annotation"),
    (1, 7, "annotation"),
    (6, 5, "base"),
    (1, 13, "call"),  # into a test file that has no matching test: must not pull it in
    (11, 10, "call"),
    (11, 1, "call"),
    (14, 13, "call"),
]
COMMENTS = [
    (0, 1, 8, "Look the user up by name", False),  # a plain comment of the same symbol: never shown as rationale
    (0, 1, 9, "Workaround for legacy LDAP integration: remove after the migration", True),
    (0, 2, 15, "Hack because sessions are global", True),
]


def kb_files() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "file_id": [f[0] for f in FILES],
            "path": [f[1] for f in FILES],
            "language": [f[2] for f in FILES],
            "is_test": [f[3] for f in FILES],
        }
    )


def kb_contents() -> pd.DataFrame:
    return pd.DataFrame({"file_id": [f[0] for f in FILES], "text": [f[4] for f in FILES]})


def kb_symbols() -> pd.DataFrame:
    cols = [
        "symbol_id",
        "file_id",
        "name",
        "qualified_name",
        "kind",
        "start_line",
        "end_line",
        "signature",
        "docstring",
        "parent_id",
    ]
    frame = pd.DataFrame(SYMBOLS, columns=cols)
    frame["parent_id"] = frame["parent_id"].astype("Int32")
    frame["body_tokens"] = 20
    return frame


def kb_symbol_edges() -> pd.DataFrame:
    return pd.DataFrame(SYMBOL_EDGES, columns=["src_symbol_id", "dst_symbol_id", "kind"])


def kb_comments() -> pd.DataFrame:
    frame = pd.DataFrame(COMMENTS, columns=["file_id", "symbol_id", "line", "text", "is_rationale"])
    frame["symbol_id"] = frame["symbol_id"].astype("Int32")
    return frame


def scope(seed_file: int = 0) -> pd.DataFrame:
    files = kb_files()
    return pd.DataFrame(
        {
            "path": files["path"].to_numpy(),
            "rank": [1, 3, 2, 4, 5],
            "total_score": [1.0, 0.5, 0.6, 0.4, 0.3],
            "seed": files["file_id"].eq(seed_file).to_numpy(),
            "seed_reason": ["file hint" if i == seed_file else "" for i in files["file_id"]],
            "added_by": ["seed" if i == seed_file else "score" for i in files["file_id"]],
            "is_test": files["is_test"].to_numpy(),
        },
        index=pd.Index(files["file_id"], name="file_id"),
    )


def symbol_lexicon(extra_docs: dict[int, str] | None = None) -> Bm25Index:
    docs = {s[0]: f"{s[2]} {s[8] or ''}" for s in SYMBOLS} | (extra_docs or {})
    rows = [(sid, t, n) for sid, text in docs.items() for t, n in term_counts(text).items()]
    return Bm25Index.from_terms(pd.DataFrame(rows, columns=["symbol_id", "term", "tf"]), "symbol_id")


def task(**kw) -> TaskQuery:
    base = dict(
        raw_description="validate_login fails for LDAP users, get returns nothing",
        task_type="bug_fix",
        keywords=("validate_login", "ldap", "users", "get"),
        file_hints=("handler.py",),
        symbol_hints=("validate_login",),
    )
    return TaskQuery(**(base | kw))


@pytest.fixture(autouse=True)
def two_primaries(monkeypatch):
    """The two best-ranked symbols are the primaries: the other tiers keep something to classify."""
    monkeypatch.setattr(precision, "PRIMARY_CANDIDATES", 2)


def precision_terms(query: TaskQuery, lexicon: Bm25Index) -> pd.Series:
    return run_node("precision_terms", task_query=query, symbol_lexicon=lexicon)


def tiers_for(query: TaskQuery, lexicon: Bm25Index | None = None, seed_file: int = 0) -> pd.DataFrame:
    weights = precision_terms(query, lexicon or symbol_lexicon())
    return _tiers(scope(seed_file), query, kb_symbols(), weights, lexicon=lexicon)


def _tiers(scoped, query, symbols, weights, node="symbol_tiers", lexicon=None):
    return run_node(node, **_inputs(scoped, query, symbols, weights, lexicon))


def _inputs(scoped, query, symbols, weights, lexicon=None) -> dict:
    """What the precision nodes read, for the hand-built KB (no trace frames or quoted messages in these tasks)."""
    return dict(
        scope=scoped,
        task_query=query,
        kb_symbols=symbols,
        kb_comments=kb_comments(),
        kb_symbol_edges=kb_symbol_edges(),
        precision_terms=weights,
        kb_files=kb_files(),
        kb_contents=kb_contents(),
        symbol_lexicon=lexicon or symbol_lexicon(),
        budget_mode="fixed",
        symbol_weight_profile=None,
        lexical_query_terms=list(query.keywords),
        title_query_terms=[],
        task_messages=[],
        symbol_task_frames=pd.DataFrame(columns=["file_id", "line", "function", "depth"]),
    )


def tier_node(node: str, query: TaskQuery) -> pd.Series:
    """One classification node (symbol_id -> reason) for the hand-built scope with seed file 0."""
    return _tiers(scope(), query, kb_symbols(), precision_terms(query, symbol_lexicon()), node=node)


def names(symbols: pd.Series) -> dict[str, str]:
    """name -> reason of a symbol_id-indexed node output."""
    by_id = kb_symbols().set_index("symbol_id")["name"]
    return dict(zip(by_id.loc[symbols.index], symbols))


def tier_of(tiers: pd.DataFrame) -> dict[str, str]:
    names = kb_symbols().set_index("symbol_id")["name"]
    return dict(zip(tiers["symbol_id"].map(names), tiers["tier"]))


def contexts_for(query: TaskQuery) -> list:
    return run_node(
        "file_contexts",
        **_inputs(scope(), query, kb_symbols(), precision_terms(query, symbol_lexicon())),
        count_tokens=lambda t: len(t) // 4,
    )


def test_tiers_cover_every_scoped_symbol_once():
    tiers = tiers_for(task())
    assert sorted(tiers["symbol_id"]) == list(range(len(SYMBOLS)))
    assert set(tiers["tier"]) <= {"primary", "supporting", "type_context", "outline", "excluded"}


def test_hinted_symbol_in_seed_file_is_primary():
    tiers = tier_of(tiers_for(task()))
    assert tiers["validate_login"] == "primary"


def test_the_top_of_the_symbol_ranking_is_primary():
    tiers = tier_of(tiers_for(task()))
    assert tiers["validate_ldap"] == "primary"  # words 'validate' + 'ldap' both from the task, in another file
    ranked = tier_node("symbol_ranking", task())
    assert list(ranked["qualified_name"][:2]) == ["LoginHandler.validate_login", "validate_ldap"]


def test_stop_word_and_common_names_do_not_match_by_name():
    tiers = tier_of(tiers_for(task()))
    assert tiers["get"] == "outline"  # in the top-ranked file: by signature only
    crowded = {100 + i: f"logout helper {i}" for i in range(10)}  # 'logout' now in 11 of 25 symbols: common
    query = task(keywords=("logout",), symbol_hints=())

    def name_signal(lexicon):
        weights = precision_terms(query, lexicon)
        ranked = _tiers(scope(seed_file=2), query, kb_symbols(), weights, node="symbol_signal_matrix", lexicon=lexicon)
        return dict(zip(ranked["qualified_name"], ranked["name"]))["LoginHandler.logout"]

    assert name_signal(symbol_lexicon(crowded)) == 0.0
    assert name_signal(symbol_lexicon()) == 1.0


def test_symbols_used_by_primaries_are_supporting():
    tiers = tier_of(tiers_for(task()))
    assert tiers["hash_password"] == "supporting"
    assert tiers["LoginHandler"] == "supporting"  # the class around a primary method, by signature


def test_types_referenced_transitively_are_type_context():
    tiers = tier_of(tiers_for(task()))
    assert tiers["LoginRequest"] == "type_context"
    assert tiers["AuthResult"] == "type_context"
    assert tiers["Credentials"] == "type_context"  # base of LoginRequest
    assert tiers["UnrelatedType"] == "outline"


def test_unrelated_symbols_enter_file_contexts_only_as_outline_signatures():
    tiers = tier_of(tiers_for(task()))
    assert tiers["logout"] == "outline"
    included = {s.name: s for f in contexts_for(task()) for s in f.symbols}
    for name in ("logout", "get", "UnrelatedType"):
        assert included[name].relevance == "outline" and included[name].body is None
    assert "test_logout" not in included  # test files are never outlined


def test_only_the_top_ranked_files_are_outlined(monkeypatch):
    monkeypatch.setattr(precision, "OUTLINE_RANK", 2)  # handler.py (rank 1), ldap.py (2); types.py is rank 3
    tiers = tier_of(tiers_for(task()))
    assert tiers["get"] == "outline" and tiers["UnrelatedType"] == "excluded"
    assert "UnrelatedType" not in {s.name for f in contexts_for(task()) for s in f.symbols}


def test_test_file_contributes_only_through_a_matching_test():
    tiers = tier_of(tiers_for(task()))
    assert tiers["test_validate_login_ldap"] == "primary"
    assert tiers["make_request"] == "supporting"
    assert tiers["test_logout"] == "excluded"
    # test_other.py imports the handler and is reached by a call edge, but has no test about the task
    assert tiers["other_helper"] == "excluded" and tiers["test_banner"] == "excluded"
    paths = [f.path for f in contexts_for(task())]
    assert "tests/test_other.py" not in paths


def test_test_assertions_come_from_matching_tests():
    by_path = {f.path: f for f in contexts_for(task())}
    assertions = by_path["tests/test_auth.py"].test_assertions
    assert assertions == (
        "test_validate_login_ldap: assert result.success is True",
        "test_validate_login_ldap: assert result.token is not None",
    )
    assert by_path["src/auth/handler.py"].test_assertions is None


def test_rationale_comments_of_included_symbols_are_attached():
    handler = {f.path: f for f in contexts_for(task())}["src/auth/handler.py"]
    assert handler.rationale_comments == ("Workaround for legacy LDAP integration: remove after the migration",)


def test_primary_has_full_body_and_supporting_only_signature():
    symbols = {s.name: s for f in contexts_for(task()) for s in f.symbols}
    body = symbols["validate_login"].body
    assert body.splitlines()[0].strip().startswith("def validate_login") and "validate_ldap(request)" in body
    assert symbols["LoginHandler"].body is None and symbols["LoginHandler"].signature == "class LoginHandler:"
    assert symbols["hash_password"].body is None
    assert symbols["validate_login"].tokens > symbols["hash_password"].tokens


def test_file_contexts_follow_rank_and_tier_order():
    files = contexts_for(task())
    assert [f.relevance_rank for f in files] == sorted(f.relevance_rank for f in files)
    handler = files[0]
    assert [s.relevance for s in handler.symbols][:1] == ["primary"]


def test_with_nothing_matching_the_top_file_still_offers_its_definitions():
    query = TaskQuery(raw_description="the widget flickers", task_type="feature", keywords=("widget", "flicker"))
    tiers = tier_of(tiers_for(query))
    primaries = {name for name, tier in tiers.items() if tier == "primary"}
    assert primaries and primaries <= {"LoginHandler", "validate_login", "logout", "hash_password", "get"}


def test_a_dotted_hint_names_a_more_qualified_symbol():
    symbols = kb_symbols()
    symbols.loc[symbols["name"] == "validate_login", "qualified_name"] = "App.Auth.LoginHandler.validate_login"
    query = task(symbol_hints=("LoginHandler.validate_login",))
    ranked = _tiers(scope(), query, symbols, precision_terms(query, symbol_lexicon()), node="symbol_ranking")
    assert ranked["qualified_name"].iloc[0] == "App.Auth.LoginHandler.validate_login"
    assert ranked["mention"].iloc[0] == 1.0


TIER_NODES = {
    "primary": "primary_symbols",
    "supporting": "supporting_symbols",
    "type_context": "type_context_symbols",
    "outline": "outline_symbols",
}


@pytest.mark.parametrize(
    "query",
    [
        task(),
        task(symbol_hints=("LoginHandler", "validate_login")),
        TaskQuery(raw_description="the widget flickers", task_type="feature"),
    ],
)
def test_symbol_tiers_joins_the_four_tier_nodes(query):
    tiers = tier_node("symbol_tiers", query)
    chosen = {}
    for tier, node in TIER_NODES.items():
        got = tier_node(node, query)
        rows = tiers[tiers["tier"] == tier]
        assert sorted(got.index) == sorted(rows["symbol_id"]), tier
        assert dict(zip(rows["symbol_id"], rows["reason"])) == got.to_dict(), tier
        chosen |= dict.fromkeys(got.index)
    assert len(chosen) == sum(len(tier_node(n, query)) for n in TIER_NODES.values())  # each symbol in one tier only


def test_primary_and_supporting_nodes_name_their_reasons():
    primary, supporting = names(tier_node("primary_symbols", task())), names(tier_node("supporting_symbols", task()))
    assert primary["validate_login"].startswith("ranked #1 (score ")
    assert supporting["hash_password"] == "used by LoginHandler.validate_login"
    assert supporting["LoginHandler"] == "contains primary LoginHandler.validate_login"
    assert names(tier_node("type_context_symbols", task()))["Credentials"] == "type of LoginRequest"
    assert names(tier_node("outline_symbols", task()))["get"] == "outline of a top-5 file"


def test_a_matching_class_that_holds_a_primary_method_is_supporting(monkeypatch):
    monkeypatch.setattr(precision, "PRIMARY_CANDIDATES", 3)
    query = task(symbol_hints=("LoginHandler", "validate_login"))
    assert names(tier_node("symbol_matches", query))["LoginHandler"].startswith("ranked #3")
    assert "LoginHandler" not in names(tier_node("primary_symbols", query))
    supporting = names(tier_node("supporting_symbols", query))
    assert supporting["LoginHandler"] == "contains primary LoginHandler.validate_login"
    assert tier_of(tier_node("symbol_tiers", query))["LoginHandler"] == "supporting"


def test_only_test_files_with_a_matching_test_are_live():
    live = tier_node("live_test_files", task())
    assert list(live) == [3]  # tests/test_auth.py has test_validate_login_ldap; tests/test_other.py has none
    supporting = names(tier_node("supporting_symbols", task()))
    assert "make_request" in supporting and "other_helper" not in supporting
    reasons = dict(zip(tier_node("symbol_tiers", task())["symbol_id"], tier_node("symbol_tiers", task())["reason"]))
    assert reasons[13] == reasons[14] == "test file without a test matching the task"
