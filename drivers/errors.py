"""User errors: one message that names the problem and the fix; the CLI prints it and exits 2."""


class CraError(Exception):
    """Something the user can fix (missing KB, bad path, malformed file); never shown as a traceback."""
