"""What a review finding holds beyond its text and repository: the fixed severities and the defaults that `cra findings
add` and `cra findings import` both apply (light: the CLI's help reads them without loading the store)."""

SEVERITIES = ("critical", "major", "minor", "nit")
DEFAULTS = {"severity": "minor", "category": "correctness", "file_path": "-", "outcome": "accepted"}  # "-": no file
