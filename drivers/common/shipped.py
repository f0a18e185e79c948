"""The defaults shipped with cra (weights, the learned ranker, conventions, error categories, the embedding model):
files of the data package, found through importlib.resources, so an installed wheel reads them as a checkout does."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from cra.drivers.common.errors import CraError

DATA_PACKAGE = "cra.data"  # the repository's data/, mapped in pyproject.toml


def shipped_path(*parts: str) -> Path:
    """The shipped file or folder data/<parts>; a missing one is an error naming it (cra never runs on without it)."""
    name = "/".join(parts) or "data"
    try:
        resource = files(DATA_PACKAGE).joinpath(*parts)
    except ModuleNotFoundError:
        resource = None
    if resource is None or not (resource.is_file() or resource.is_dir()):
        raise CraError(
            f"The shipped data file {name} is missing from this installation of cra ({DATA_PACKAGE}). "
            "Reinstall it: pip install --force-reinstall cra-engine."
        )
    return Path(str(resource))
