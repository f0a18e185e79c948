"""git's ignore rules, exactly: read .gitignore-style files and decide whether a path is ignored.

Mirrors git's dir.c (line parsing, `!`, trailing `/`, anchoring, last matching pattern wins) and wildmatch.c
(byte-wise, WM_PATHNAME: `*`, `?` and `[...]` never match `/`, `**` only between slashes), so a scan that
prunes every ignored directory agrees with `git ls-files -co --exclude-standard`. Each ignore file becomes
a few regular expressions (name or path patterns, for files or directories) whose alternatives run from
the last pattern to the first: the first alternative that matches is git's "last matching pattern", and
its group number says which line that was and whether it negates. Not read here: core.excludesFile (a
user's global ignore file), so an index does not depend on who builds it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

_GLOB_SPECIAL = b"*?[\\"
_SLASH = ord("/")
_POSIX_CLASSES = {  # git's ctype is ASCII-only (sane_ctype), whatever the locale
    b"alnum": b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
    b"alpha": b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
    b"blank": b" \t",
    b"cntrl": bytes([*range(32), 127]),
    b"digit": b"0123456789",
    b"graph": bytes(range(33, 127)),
    b"lower": b"abcdefghijklmnopqrstuvwxyz",
    b"print": bytes(range(32, 127)),
    b"punct": b"!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~",
    b"space": b" \t\n\r",
    b"upper": b"ABCDEFGHIJKLMNOPQRSTUVWXYZ",
    b"xdigit": b"0123456789ABCDEFabcdef",
}


@dataclass(frozen=True)
class _Alternatives:
    """Patterns of one kind in one regex, last pattern first: group i says (line order, negated) of its pattern."""

    regex: re.Pattern[bytes]
    groups: tuple[tuple[int, bool], ...]

    def last_match(self, subject: bytes) -> tuple[int, bool] | None:
        """(line order, negated) of the last pattern that matches subject, None when none does."""
        match = self.regex.fullmatch(subject)
        return None if match is None else self.groups[match.lastindex - 1]


@dataclass(frozen=True)
class IgnoreRules:
    """The patterns of one ignore file, compiled: `base` is its directory relative to the root (b"" at the top).

    Patterns without a slash match a name at any depth and run on the last path component; the others run
    on the path below `base`. Directory-only patterns (trailing `/`) are left out of the file matchers.
    """

    base: bytes
    file_names: _Alternatives | None
    file_paths: _Alternatives | None
    dir_names: _Alternatives | None
    dir_paths: _Alternatives | None


def parse_ignore_file(data: bytes, base: bytes = b"") -> IgnoreRules | None:
    """The rules of one .gitignore / info/exclude file found in directory `base`; None when it has no pattern."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    patterns: list[tuple[int, bytes, bool, bool, bool]] = []  # (order, regex, negated, dir-only, name-only)
    for line in data.split(b"\n"):
        if not line or line.startswith(b"#"):
            continue
        line = line.split(b"\0", 1)[0]
        if line.endswith(b"\r"):
            line = line[:-1]
        parsed = _parse_pattern(_trim_trailing_spaces(line))
        if parsed is not None:
            patterns.append((len(patterns), *parsed))
    if not patterns:
        return None

    def alternatives(dirs: bool, names: bool) -> _Alternatives | None:
        chosen = [
            (order, rx, neg)
            for order, rx, neg, dir_only, name_only in reversed(patterns)
            if name_only == names and (dirs or not dir_only)
        ]
        if not chosen:
            return None
        regex = re.compile(b"|".join(b"(" + rx + b")" for _, rx, _ in chosen), re.DOTALL)
        return _Alternatives(regex, tuple((order, neg) for order, _, neg in chosen))

    return IgnoreRules(
        base,
        file_names=alternatives(False, True),
        file_paths=alternatives(False, False),
        dir_names=alternatives(True, True),
        dir_paths=alternatives(True, False),
    )


def is_ignored(rel: bytes, is_dir: bool, stack: Sequence[IgnoreRules]) -> bool:
    """git's verdict for `rel` (root-relative, no trailing slash) under the ignore files of its ancestors.

    `stack` runs from lowest to highest precedence: .git/info/exclude, the root .gitignore, then each
    deeper .gitignore on the way down to rel's directory. The deepest file with a matching pattern decides,
    and inside a file the last matching pattern does; a negated pattern re-includes. Parent directories are
    not checked here: a walk must not descend into a directory that is ignored.
    """
    name = rel[rel.rfind(b"/") + 1 :]
    for rules in reversed(stack):
        names, paths = (rules.dir_names, rules.dir_paths) if is_dir else (rules.file_names, rules.file_paths)
        hit = names.last_match(name) if names is not None else None
        if paths is not None:
            path_hit = paths.last_match(rel[len(rules.base) + 1 :] if rules.base else rel)
            if path_hit is not None and (hit is None or path_hit[0] > hit[0]):
                hit = path_hit
        if hit is not None:
            return not hit[1]
    return False


def _trim_trailing_spaces(line: bytes) -> bytes:
    """Drop trailing spaces unless escaped by a backslash (git's trim_trailing_spaces; tabs stay)."""
    if not line.endswith(b" "):
        return line
    last_space = None
    i = 0
    while i < len(line):
        char = line[i]
        if char == 0x20:
            if last_space is None:
                last_space = i
        elif char == 0x5C:  # a backslash escapes the next byte; a line ending in one is kept whole
            i += 1
            if i == len(line):
                return line
            last_space = None
        else:
            last_space = None
        i += 1
    return line if last_space is None else line[:last_space]


def _parse_pattern(line: bytes) -> tuple[bytes, bool, bool, bool] | None:
    """(regex, negated, directory-only, name-only); None if it never matches.

    A name-only pattern (no slash but a trailing one, or `**/` then no slash) matches the last path
    component at any depth; any other pattern matches the path relative to the ignore file's directory.
    """
    negated = line.startswith(b"!")
    if negated:
        line = line[1:]
    dir_only = line.endswith(b"/")
    if dir_only:
        line = line[:-1]
    if not line:
        return None
    if b"/" not in line:  # no slash: matches the name at any depth below the file's directory
        body = _translate(line, anchored_at=-1)
        return None if body is None else (body, negated, dir_only, True)
    if line.startswith(b"/"):
        line = line[1:]
    if line.startswith(b"**/") and b"/" not in line[3:]:  # `**/name` is `name` at any depth: match it on names
        body = _translate(line[3:], anchored_at=-1)
        return None if body is None else (body, negated, dir_only, True)
    prefix = next((i for i, c in enumerate(line) if c in _GLOB_SPECIAL), len(line))
    body = _translate(line, anchored_at=prefix)
    return None if body is None else (body, negated, dir_only, False)


def _translate(pattern: bytes, anchored_at: int) -> bytes | None:
    """wildmatch(pattern, WM_PATHNAME) as a regex body; None when the pattern can match nothing.

    git matches the literal prefix of a path pattern separately and hands wildmatch the rest, so a `**`
    right after that prefix counts as starting the pattern (`foo**/bar` matches `foox/y/bar`): that is
    what `anchored_at` (the prefix length, -1 for name patterns) reproduces.
    """
    out: list[bytes] = []
    n = len(pattern)
    i = 0
    while i < n:
        char = pattern[i]
        if char == 0x2A:  # '*'
            j = i
            while j < n and pattern[j] == 0x2A:
                j += 1
            left = i == 0 or i == anchored_at or pattern[i - 1] == _SLASH
            if j - i >= 2 and anchored_at >= 0 and left:
                if j == n:  # trailing `**`: everything below
                    out.append(b".*")
                    i = j
                    continue
                if pattern[j] == _SLASH:  # `**/`: zero or more whole directories
                    out.append(b"(?:.*/)?")
                    i = j + 1
                    continue
                if pattern[j : j + 2] == b"\\/":
                    out.append(b".*")
                    i = j
                    continue
            out.append(b"[^/]*")
            i = j
        elif char == 0x3F:  # '?'
            out.append(b"[^/]")
            i += 1
        elif char == 0x5B:  # '['
            parsed = _char_class(pattern, i)
            if parsed is None:
                return None
            members, i = parsed
            out.append(members)
        elif char == 0x5C:  # '\\': the next byte is literal; a trailing one never matches
            if i + 1 == n:
                return None
            out.append(re.escape(pattern[i + 1 : i + 2]))
            i += 2
        else:
            out.append(re.escape(pattern[i : i + 1]))
            i += 1
    return b"".join(out)


def _char_class(pattern: bytes, start: int) -> tuple[bytes, int] | None:
    """The bracket expression at pattern[start] as a regex over one byte (never `/`), and the index after it."""
    n = len(pattern)
    i = start + 1
    if i >= n:
        return None
    negated = pattern[i] in b"!^"
    if negated:
        i += 1
    members: set[int] = set()
    prev = 0
    first = True
    while True:
        if i >= n:
            return None
        char = pattern[i]
        if char == 0x5D and not first:  # ']' closes, except as the first member
            break
        first = False
        if char == 0x5C:
            i += 1
            if i >= n:
                return None
            char = pattern[i]
            members.add(char)
        elif char == 0x2D and prev and i + 1 < n and pattern[i + 1] != 0x5D:  # a range prev-hi
            i += 1
            high = pattern[i]
            if high == 0x5C:
                i += 1
                if i >= n:
                    return None
                high = pattern[i]
            members.update(range(prev, high + 1))
            char = 0
        elif char == 0x5B and i + 1 < n and pattern[i + 1] == 0x3A:  # '[:'
            end = pattern.find(b"]", i + 2)
            if end < 0:
                return None
            if end - (i + 2) - 1 < 0 or pattern[end - 1] != 0x3A:  # no ':]': a plain '['
                members.add(char)
            else:
                named = _POSIX_CLASSES.get(pattern[i + 2 : end - 1])
                if named is None:
                    return None
                members.update(named)
                char = 0
                i = end
        else:
            members.add(char)
        prev = char
        i += 1
    chosen = (set(range(256)) - members if negated else members) - {_SLASH}
    if not chosen:
        return b"(?!)", i + 1
    return b"[" + b"".join(_byte_ranges(sorted(chosen))) + b"]", i + 1


def _byte_ranges(values: list[int]) -> list[bytes]:
    """Sorted byte values as regex set items, runs written as ranges (`\\x30-\\x39`)."""
    items: list[bytes] = []
    start = prev = values[0]
    for value in [*values[1:], -1]:
        if value == prev + 1:
            prev = value
            continue
        items.append(b"\\x%02x" % start if start == prev else b"\\x%02x-\\x%02x" % (start, prev))
        start = prev = value
    return items
