"""User errors: one message that names the problem and the fix; the CLI prints it and exits 2."""


class CraError(Exception):
    """Something the user can fix (missing KB, bad path, malformed file); never shown as a traceback."""


def exit_code(main, argv=None) -> int:
    """A driver's exit code: main(argv)'s, or 2 after printing a CraError as one `error:` line (no traceback)."""
    import sys

    try:
        return main(argv)
    except CraError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
