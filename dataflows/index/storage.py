"""What an index run stores while it runs, as interfaces the driver implements (`cra.drivers.kb.mapped`,
`cra.drivers.kb.resume`) and passes in as inputs: the nodes hand rows over and ask for rows back, the driver does the
file I/O. Two things cannot wait for the run's end: the contents table is written before the parse, so that the
driver lets go of the tree's texts and each parse worker (another process) reads only its own batch's texts; and each
parsed batch is saved as it comes, so that an interrupted run resumes where it stopped."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # (annotations only: `cra index` of an unchanged tree imports this module, not pandas)
    import pandas as pd
    import pyarrow as pa

BATCH_ROWS = 10_000  # rows of texts converted and written at once: all of OpenJDK's texts at once took 0.5 GB more


@dataclass(frozen=True)
class CarriedRows:
    """Rows start:stop of the previous KB's contents table, as they are (the same file ids, the same texts): what a
    store that `carries_previous` takes in place of their texts, and keeps where they already are."""

    start: int
    stop: int


class ContentsStore(ABC):
    """The run's contents table (file_id, text): written once, a batch of rows at a time, then read by file ids (a
    parse worker's batch) or whole (the KB's contents frame). Picklable: it travels to the parse workers."""

    carries_previous = False  # whether write() also takes CarriedRows (rows of the previous KB's table)

    @abstractmethod
    def write(self, batches: Iterable[pa.Table]) -> None:
        """Store the table from Arrow tables of its rows (the schema's columns and types), ordered by file_id, and
        where the store `carries_previous`, CarriedRows of the previous KB's table among them."""

    @abstractmethod
    def texts(self, file_ids) -> list[str]:
        """The texts of these file_ids, in their order (a KeyError when one is not stored)."""

    @abstractmethod
    def frame(self) -> pd.DataFrame:
        """The stored table as a frame (Arrow-backed columns: a view, not a copy, where the store allows)."""


class ParseCheckpoint(ABC):
    """Parsed batches saved by key (what the batch was made of), so that a run started again after an interruption
    takes them instead of parsing again. Picklable: it travels to the parse workers."""

    @abstractmethod
    def load(self, key: str):
        """The batch saved under key, or None (absent, cut short, or written by other code)."""

    @abstractmethod
    def save(self, key: str, batch) -> None:
        """Save a batch under key, whole or not at all."""
