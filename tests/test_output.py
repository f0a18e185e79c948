"""Writing results atomically without surprising the user: the old file or the new one, with the expected mode."""

import os

from cra.drivers.common.output import write_text_atomic


def test_atomic_writes_keep_the_mode_a_plain_write_would_give(tmp_path):
    new = tmp_path / "context.md"
    write_text_atomic(new, "a")
    assert new.stat().st_mode & 0o777 == 0o666 & ~_umask()  # not mkstemp's 0600
    new.chmod(0o640)
    write_text_atomic(new, "b")
    assert new.stat().st_mode & 0o777 == 0o640 and new.read_text() == "b"  # a replaced file keeps its mode


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
