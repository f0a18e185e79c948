"""A small multi-language git repository built inside a test (Python, TypeScript, Go; history with co-changes)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

FILES = {
    ".gitignore": "secret.env\nbuild/\n",
    "secret.env": "TOKEN=abc\n",
    "build/out.py": "def generated():\n    return 1\n",
    "README.md": "# Demo app\n\nA login service with billing.\n",
    "scripts/deploy.sh": "#!/bin/sh\necho deploying\n",
    "app/__init__.py": "",
    "app/auth/__init__.py": "",
    "app/auth/types.py": '''"""Request and result types of the login flow."""
from dataclasses import dataclass


@dataclass
class LoginRequest:
    username: str
    password: str
    source: str = "default"


@dataclass
class AuthResult:
    success: bool
    token: str | None = None
    error: str | None = None
''',
    "app/auth/ldap.py": '''from app.auth.types import AuthResult, LoginRequest


def validate_ldap(request: LoginRequest) -> AuthResult:
    """Check credentials against the LDAP directory."""
    return AuthResult(success=request.username != "", token="ldap")
''',
    "app/auth/handler.py": '''"""Authentication request handler."""
from app.auth.types import AuthResult, LoginRequest
from .ldap import validate_ldap


def validate_login(request: LoginRequest) -> AuthResult:
    """Validate credentials and return an auth token."""
    # Workaround for the legacy LDAP integration: remove after the directory migration
    if request.source == "ldap":
        return validate_ldap(request)
    if not _check_password(request.password):
        return AuthResult(success=False, error="invalid password")
    return AuthResult(success=True, token="t-" + request.username)


def _check_password(password: str) -> bool:
    return len(password) >= 8


def logout(token: str) -> None:
    """End a session."""
    return None
''',
    "app/billing/__init__.py": "",
    "app/billing/invoice.py": '''"""Invoices."""


class Invoice:
    def __init__(self, items):
        self.items = items

    def total_amount(self) -> float:
        return sum(price for _, price in self.items)


def format_currency(value: float) -> str:
    return f"${value:.2f}"
''',
    "app/utils.py": """def slugify(text: str) -> str:
    return "-".join(text.lower().split())
""",
    "app/broken.py": "def oops(:\n    pass\n",
    "tests/test_auth.py": """from app.auth.handler import validate_login
from app.auth.types import LoginRequest


def test_valid_login_returns_token():
    result = validate_login(LoginRequest("ann", "longpassword"))
    assert result.success is True
    assert result.token is not None


def test_invalid_password_returns_error():
    result = validate_login(LoginRequest("ann", "short"))
    assert result.success is False
""",
    "tests/test_billing.py": """from app.billing.invoice import Invoice
from app.auth.handler import logout


def test_total_amount():
    assert Invoice([("a", 1.0), ("b", 2.0)]).total_amount() == 3.0
""",
    "web/src/api.ts": """export interface Session {
  token: string;
}

export function fetchSession(user: string): Session {
  return { token: user };
}
""",
    "web/src/login.ts": """import { fetchSession, Session } from "./api";

export class LoginForm {
  submit(user: string): Session {
    return fetchSession(user);
  }
}
""",
    "web/src/index.ts": 'export { LoginForm } from "./login";\n',
    "go.mod": "module example.com/demo\n\ngo 1.21\n",
    "server/main.go": """package server

// Serve starts the HTTP server.
func Serve(port int) error {
	return listen(port)
}
""",
    "server/util.go": """package server

func listen(port int) error {
	return nil
}
""",
}

# later commits: (message, {path: appended text}); handler + ldap change together three times
HISTORY = [
    ("Fix LDAP login fallback", {"app/auth/handler.py": "\n", "app/auth/ldap.py": "\n"}),
    ("Handle empty LDAP user names", {"app/auth/handler.py": "\n", "app/auth/ldap.py": "\n"}),
    ("Log LDAP failures", {"app/auth/handler.py": "\n", "app/auth/ldap.py": "\n"}),
    ("Invoice currency formatting", {"app/billing/invoice.py": "\n"}),
]


def commit_git(repo: Path, *args: str, when: int) -> None:
    date = f"{1_700_000_000 + when * 86_400} +0000"
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Dev",
        "GIT_AUTHOR_EMAIL": "dev@example.com",
        "GIT_COMMITTER_NAME": "Dev",
        "GIT_COMMITTER_EMAIL": "dev@example.com",
        "GIT_AUTHOR_DATE": date,
        "GIT_COMMITTER_DATE": date,
    }
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def make_repo(root: Path, git: bool = True) -> Path:
    """Write the fixture files (and, with git, an initial commit plus HISTORY); returns the repo root."""
    root.mkdir(parents=True, exist_ok=True)
    for rel, text in FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (root / "app" / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00binary")
    if not git:
        return root
    commit_git(root, "init", "-q", "-b", "main", when=0)
    commit_git(root, "add", "-A", when=0)
    commit_git(root, "commit", "-q", "-m", "Initial import", when=0)
    for i, (message, changes) in enumerate(HISTORY, start=1):
        for rel, extra in changes.items():
            with open(root / rel, "a") as handle:
                handle.write(extra)
        commit_git(root, "commit", "-q", "-am", message, when=i)
    return root
