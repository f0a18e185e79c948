"""Evaluation tables as files people open: Parquet bytes, and a horizontal bar chart when matplotlib is installed."""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd

from cra.drivers.common.output import write_bytes_atomic


def parquet_bytes(frame: pd.DataFrame) -> bytes:
    """The frame as a Parquet file's bytes (index dropped), for an atomic write."""
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    return buffer.getvalue()


def write_bar_chart(wide: pd.DataFrame, path: Path, title: str, xlabel: str | None = None) -> bool:
    """One bar group per row of `wide` (first row on top), one bar per column, on a 0-1 scale, as a PNG written
    atomically; False when matplotlib is not installed (it is an optional extra)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    ax = wide.iloc[::-1].plot.barh(figsize=(10, 0.35 * len(wide) * max(1, len(wide.columns) / 3) + 1.5), width=0.8)
    ax.set_xlim(0, 1)
    ax.set_title(title)
    if xlabel:
        ax.set_xlabel(xlabel)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    buffer = io.BytesIO()
    ax.figure.tight_layout()
    ax.figure.savefig(buffer, format="png", dpi=100)
    plt.close(ax.figure)
    write_bytes_atomic(path, buffer.getvalue())
    return True
