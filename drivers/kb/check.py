"""Whether a KB version is intact, cheaply: what `cra index` checks before it reuses the live version, and what a
request checks when it loads one. Light to import (no pandas, no pyarrow): an unchanged tree's `cra index` pays a
few small reads, not the 0.45 s of importing Arrow.

A version's metadata records, for every file the version holds (tables, lexicons, word tables), its size and a
digest of its footer: Parquet and Arrow IPC files both end in [footer][4-byte footer length][magic], the footer
holding the schema, the row groups or record batches and their row counts. A file of the recorded size whose footer
is the one written opens and has the rows it was written with; a truncated, emptied, overwritten or appended file
does not pass. Damage inside a file's data pages is found when a request reads them: the reader then marks the
version damaged (`mark_damaged`), so the next `cra index` rebuilds it instead of answering "nothing changed".
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from cra.drivers.common.errors import CraError
from cra.drivers.kb.location import KB_DIRNAME, live_version

METADATA = "metadata.json"
INVENTORY_KEY = "table_files"  # in metadata.json: file name -> [bytes, footer bytes digested, sha1 of them]
DAMAGED_FILE = "damaged.json"  # in a KB directory: {"version": ..., "reason": ...} left by a read that failed
_MAGIC = {".parquet": b"PAR1", ".arrow": b"ARROW1"}


class KbDamaged(CraError):
    """A KB version that cannot be read as written; the message names the fix (`cra index ... --rebuild`)."""

    def __init__(self, kb_dir: Path, version: str | None, reason: str):
        reason = " ".join(str(reason).split())  # (Arrow's messages span lines)
        self.kb_dir, self.version, self.reason = Path(kb_dir), version, reason
        super().__init__(
            f"The knowledge base at {kb_dir} is damaged ({reason}). Run `{rebuild_command(kb_dir)}` "
            "to rebuild it from the source tree."
        )


def rebuild_command(kb_dir: Path) -> str:
    """The `cra index ... --rebuild` command line that rebuilds the KB at kb_dir."""
    kb_dir = Path(kb_dir)
    try:
        repo = json.loads((live_version(kb_dir) / METADATA).read_text()).get("repo_root")
    except (OSError, TypeError, ValueError, AttributeError):
        repo = None
    if repo is None and kb_dir.name == KB_DIRNAME:
        repo = str(kb_dir.parent)
    default = repo is not None and Path(repo) / KB_DIRNAME == kb_dir
    return f"cra index {repo or 'REPO'} --rebuild" + ("" if default else f" --kb {kb_dir}")


def _footer(path: Path, size: int) -> tuple[int, str] | None:
    """(footer bytes, sha1 of them) of a Parquet or Arrow IPC file: its footer, footer length and end magic;
    None when the file does not end as one of these formats does."""
    magic = _MAGIC.get(path.suffix)
    if magic is None or size < len(magic) + 4:
        return None
    with open(path, "rb") as fh:
        fh.seek(size - len(magic) - 4)
        trailer = fh.read()
        if trailer[4:] != magic:
            return None
        length = int.from_bytes(trailer[:4], "little", signed=True) + len(magic) + 4
        if not 0 < length <= size:
            return None
        fh.seek(size - length)
        footer = fh.read(length)
        fh.seek(0)
        if fh.read(len(magic)) != magic:  # both formats also begin with their magic
            return None
    return length, hashlib.sha1(footer).hexdigest()


def inventory(version: Path) -> dict[str, list]:
    """What `version_damage` checks later, for every Parquet and Arrow file of a freshly written version."""
    found = {}
    for path in sorted(Path(version).iterdir()):
        if path.suffix in _MAGIC and path.is_file():
            size = path.stat().st_size
            footer = _footer(path, size)
            found[path.name] = [size, *(footer or (0, ""))]
    return found


def version_damage(version: Path, metadata: dict) -> str | None:
    """What is wrong with a version's files (the first problem found), None when each has its recorded size and
    footer (or the version predates the record: nothing to check against)."""
    recorded = metadata.get(INVENTORY_KEY)
    if not isinstance(recorded, dict):
        return None
    for name, (size, length, digest) in recorded.items():
        path = Path(version) / name
        try:
            actual = os.stat(path).st_size
            if actual != size:
                return f"{name} has {actual} bytes, written with {size}"
            if length and _footer(path, size) != (length, digest):
                return f"the footer of {name} is not the one written"
        except FileNotFoundError:
            return f"{name} is missing"
        except OSError as exc:
            return f"{name} cannot be read: {exc.strerror or exc}"
    return None


def live_damage(kb_dir: Path) -> str | None:
    """What is wrong with the live version of a KB: a damage a reader recorded, an unreadable metadata file, or
    files that fail `version_damage`; None when it is intact or there is no KB."""
    kb_dir = Path(kb_dir)
    version = live_version(kb_dir)
    if version is None:
        return None
    try:
        marked = json.loads((kb_dir / DAMAGED_FILE).read_text())
        if isinstance(marked, dict) and marked.get("version") == version.name:
            return str(marked.get("reason") or "a request could not read it")
    except (OSError, ValueError):
        pass  # no mark, or one that cannot be read: the footer check alone decides (deliberate)
    try:
        metadata = json.loads((version / METADATA).read_text())
    except (OSError, ValueError) as exc:
        return f"{METADATA} cannot be read: {exc}"
    return version_damage(version, metadata) if isinstance(metadata, dict) else f"{METADATA} is not an object"


def mark_damaged(kb_dir: Path, reason: str) -> KbDamaged:
    """Record that the live version could not be read (the next `cra index` rebuilds it); the error to raise.
    A KB directory that cannot be written keeps no record: `cra index` could not rebuild it there either."""
    from cra.drivers.common.output import write_text_atomic

    kb_dir, reason = Path(kb_dir), " ".join(str(reason).split())
    version = live_version(kb_dir)
    if version is not None:
        try:
            write_text_atomic(kb_dir / DAMAGED_FILE, json.dumps({"version": version.name, "reason": reason}) + "\n")
        except OSError:
            pass  # best effort: the request already reports the damage; a read-only KB just cannot remember it
    return KbDamaged(kb_dir, version.name if version is not None else None, reason)


def clear_damage(kb_dir: Path) -> None:
    """Forget a damage record (a new version was written)."""
    (Path(kb_dir) / DAMAGED_FILE).unlink(missing_ok=True)
