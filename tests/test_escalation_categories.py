"""Error categories over real-world messages, a user's table, and the four failure patterns."""

import pandas as pd
import pytest

from cra.dataflows.escalation import analysis
from cra.drivers.cli.main import main
from cra.drivers.escalation.attempts import categorise

# (message as real tools print it, the category a person would give it)
MESSAGES = [
    # network: Python exceptions, errno, HTTP, gRPC, database and shell clients
    (
        "requests.exceptions.ConnectionError: HTTPSConnectionPool(host='api.github.com', port=443): Max retries exceeded "
        "with url: /repos (Caused by NewConnectionError('<urllib3.connection.HTTPSConnection object at 0x7f3c>: Failed to "
        "establish a new connection: [Errno 111] Connection refused'))",
        "network",
    ),
    ("ConnectionRefusedError: [Errno 111] Connection refused", "network"),
    ("socket.gaierror: [Errno -2] Name or service not known", "network"),
    (
        "urllib3.exceptions.ReadTimeoutError: HTTPConnectionPool(host='localhost', port=8080): Read timed out. (read timeout=30)",
        "network",
    ),
    ("HTTP/1.1 503 Service Unavailable", "network"),
    ("upstream responded 502 Bad Gateway", "network"),
    (
        "grpc._channel._InactiveRpcError: <_InactiveRpcError of RPC that terminated with: status = StatusCode.UNAVAILABLE "
        'details = "failed to connect to all addresses">',
        "network",
    ),
    ("rpc error: code = DeadlineExceeded desc = context deadline exceeded", "network"),
    ("Error: connect ECONNREFUSED 127.0.0.1:5432", "network"),
    ("OSError: [Errno 101] Network is unreachable", "network"),
    ("curl: (6) Could not resolve host: api.example.com", "network"),
    (
        'psycopg2.OperationalError: could not connect to server: Connection refused\n\tIs the server running on host "db" '
        "(172.18.0.2) and accepting TCP/IP connections on port 5432?",
        "network",
    ),
    ("Error: socket hang up", "network"),
    ("asyncio.exceptions.TimeoutError", "network"),
    # authentication
    (
        "requests.exceptions.HTTPError: 401 Client Error: Unauthorized for url: https://api.github.com/user",
        "authentication",
    ),
    ("PermissionError: [Errno 13] Permission denied: '/var/log/app.log'", "authentication"),
    ("HTTP/1.1 403 Forbidden", "authentication"),
    (
        'status = StatusCode.UNAUTHENTICATED details = "Request had invalid authentication credentials."',
        "authentication",
    ),
    ('psycopg2.OperationalError: FATAL:  password authentication failed for user "postgres"', "authentication"),
    (
        "pymysql.err.OperationalError: (1045, \"Access denied for user 'root'@'localhost' (using password: YES)\")",
        "authentication",
    ),
    ("botocore.exceptions.NoCredentialsError: Unable to locate credentials", "authentication"),
    ("jwt.exceptions.ExpiredSignatureError: Signature has expired", "authentication"),
    ("fatal: Authentication failed for 'https://github.com/org/repo.git/'", "authentication"),
    ("rpc error: code = PermissionDenied desc = caller does not have permission", "authentication"),
    # validation
    ("ValueError: invalid literal for int() with base 10: 'abc'", "validation"),
    ("json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)", "validation"),
    (
        "pydantic_core._pydantic_core.ValidationError: 1 validation error for User\nage\n  Input should be a valid integer",
        "validation",
    ),
    ("TypeError: unsupported operand type(s) for +: 'int' and 'str'", "validation"),
    ("HTTP 422 Unprocessable Entity", "validation"),
    ("sqlite3.IntegrityError: UNIQUE constraint failed: users.email", "validation"),
    ('psycopg2.errors.UniqueViolation: duplicate key value violates unique constraint "users_pkey"', "validation"),
    ("FileNotFoundError: [Errno 2] No such file or directory: 'config.yaml'", "validation"),
    ("yaml.scanner.ScannerError: mapping values are not allowed here", "validation"),
    ("400 Bad Request: missing required field 'name'", "validation"),
    ("rpc error: code = InvalidArgument desc = invalid page token", "validation"),
    # resource
    ("MemoryError", "resource"),
    ("OSError: [Errno 28] No space left on device", "resource"),
    ("OSError: [Errno 24] Too many open files", "resource"),
    ("HTTP/1.1 429 Too Many Requests", "resource"),
    ("status = StatusCode.RESOURCE_EXHAUSTED details = \"Quota exceeded for quota metric 'Requests'\"", "resource"),
    ("sqlite3.OperationalError: database is locked", "resource"),
    ("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB", "resource"),
    ("ERROR 1205 (HY000): Lock wait timeout exceeded; try restarting transaction", "resource"),
    ("FATAL: remaining connection slots are reserved for non-replication superuser connections", "resource"),
    ("container exceeded its memory limit and was OOMKilled", "resource"),
    # logic
    ("AttributeError: 'NoneType' object has no attribute 'split'", "logic"),
    ("KeyError: 'user_id'", "logic"),
    ("IndexError: list index out of range", "logic"),
    ("AssertionError: assert 3 == 4", "logic"),
    ("ZeroDivisionError: division by zero", "logic"),
    ("RecursionError: maximum recursion depth exceeded while calling a Python object", "logic"),
    ('java.lang.NullPointerException: Cannot invoke "String.length()" because "s" is null', "logic"),
    ("panic: runtime error: invalid memory address or nil pointer dereference", "logic"),
    ("HTTP/1.1 500 Internal Server Error", "logic"),
    # unknown
    ("Task failed", "unknown"),
    ("something went wrong", "unknown"),
    ("Process exited with code 1", "unknown"),
]


def test_real_world_messages_get_the_category_a_person_would_give():
    assert len(MESSAGES) >= 40
    got = categorise([m for m, _ in MESSAGES])
    wrong = [(m[:70], want, have) for (m, want), have in zip(MESSAGES, got) if want != have]
    assert not wrong


@pytest.mark.parametrize("message", ["runtime output was empty", "port 4013 opened", "HTTP client ready (5 workers)"])
def test_words_and_numbers_that_only_look_like_rules_do_not_match(message):
    assert categorise([message]) == ["unknown"]


def test_a_user_table_adds_categories_and_its_rules_win(tmp_path, capsys):
    user = {
        "categories": {
            "dependency": {
                "exceptions": ["ModuleNotFoundError"],
                "patterns": ["no matching distribution"],
                "cause": "a package is missing",
                "interventions": ["Install the missing package"],
            },
        }
    }
    got = categorise(
        [
            "ModuleNotFoundError: No module named 'yaml'",
            "ERROR: No matching distribution found for torch==9.9",
            "KeyError: 'x'",
        ],
        user,
    )
    assert got == ["dependency", "dependency", "logic"]
    assert categorise(["ModuleNotFoundError: No module named 'yaml'"]) == ["validation"]  # the default without it

    table = tmp_path / "mine.toml"
    table.write_text(
        '[categories.dependency]\nexceptions = ["ModuleNotFoundError"]\ncause = "a package is missing"\n'
        'interventions = ["Install the missing package"]\n'
    )
    db = str(tmp_path / "e.db")
    assert (
        main(
            [
                "attempt",
                "t",
                "--error",
                "ModuleNotFoundError: No module named 'yaml'",
                "--max-retries",
                "1",
                "--categories",
                str(table),
                "--db",
                db,
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["report", "t", "--db", db]) == 0
    report = capsys.readouterr().out
    assert "Type: dependency" in report and "1. Install the missing package" in report
    assert "suggests a package is missing" in report


def test_a_malformed_user_table_is_one_line_and_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text('[categories.x]\npatterns = ["(unclosed"]\n')
    typo = tmp_path / "typo.toml"
    typo.write_text('[categories.x]\nexeptions = ["E"]\n')
    for table in (bad, typo, tmp_path / "missing.toml"):
        capsys.readouterr()
        assert (
            main(["attempt", "t", "--error", "boom", "--categories", str(table), "--db", str(tmp_path / "e.db")]) == 2
        )
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and str(table) in err


def _attempts(*tasks):
    rows = [
        {"task_id": task, "attempt_number": i, "error_type": category}
        for task, cats in tasks
        for i, category in enumerate(cats, 1)
    ]
    frame = pd.DataFrame(rows)
    return frame, frame["error_type"]


def test_each_failure_pattern():
    frame, cats = _attempts(
        ("one", ["network"]),
        ("same", ["validation"] * 3),
        ("all-network", ["network"] * 4),
        ("mostly-network", ["network", "validation", "network"]),
        ("half-network", ["network", "validation"]),
        ("mixed", ["network", "validation", "logic", "logic"]),
    )
    patterns = analysis.failure_patterns(frame, cats)
    assert patterns.to_dict() == {
        "one": "single_failure",
        "same": "consistent",
        "all-network": "consistent",
        "mostly-network": "intermittent_network",
        "half-network": "varied",
        "mixed": "varied",
    }


def test_dominant_category_is_the_most_frequent_and_ties_go_to_the_latest():
    frame, cats = _attempts(("a", ["logic", "network", "logic"]), ("b", ["network", "validation"]))
    dominant = analysis.dominant_categories(analysis.category_counts(frame, cats))
    assert dominant.to_dict() == {"a": "logic", "b": "validation"}
