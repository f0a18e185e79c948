"""The `cra` command: one parser and one command table."""
