"""Where `cra index` parses: this machine, or a Dask or Ray cluster (`--engine`, `--address`). Light to import: the
options are checked here before anything heavy loads; `cra.drivers.index.clusters` opens the cluster."""

from __future__ import annotations

from dataclasses import dataclass
from importlib.util import find_spec

from cra.drivers.common.errors import CraError

ENGINES = ("local", "dask", "ray")
NEEDS = {"dask": ("distributed", "dask"), "ray": ("ray", "ray")}  # engine: (module it imports, cra-engine extra)


@dataclass(frozen=True)
class Engine:
    """Where the parse runs: "local" (this machine's process pool), "dask" or "ray"; address: the cluster's
    scheduler (None: a local Dask cluster started for the run / a local Ray instance); workers: its size then."""

    name: str = "local"
    address: str | None = None
    workers: int | None = None

    @property
    def remote(self) -> bool:
        return self.name != "local"


def engine_of(name: str, address: str | None, workers: int | None) -> Engine:
    """The engine the options of `cra index` ask for; a combination that cannot work is one CraError."""
    if name not in ENGINES:
        raise CraError(f"--engine must be one of {', '.join(ENGINES)} (got {name!r}).")
    if name == "local" and address:
        raise CraError("--address names a Dask or Ray scheduler: pass --engine dask or --engine ray with it.")
    if name != "local" and address and workers is not None:
        raise CraError(
            f"--workers sizes a cluster started for the run; the {name} cluster at {address} has its own workers. "
            "Drop --workers, or drop --address to start a local cluster of that many workers."
        )
    if name in NEEDS and find_spec(NEEDS[name][0]) is None:
        raise CraError(
            f"--engine {name} needs the {NEEDS[name][0]!r} package, which is not installed: "
            f"pip install 'cra-engine[{NEEDS[name][1]}]'."
        )
    return Engine(name, address or None, workers)
