"""Frame helpers the index node modules share (a helper module, not a Hamilton module: no driver lists it, so
its public functions are not nodes): schema conformance, the previous run's tables, stacking, symbol re-keying."""

from __future__ import annotations

import pandas as pd

from dataflows.index.schema import TABLES

NULLABLE_INTS = {("symbols", "parent_id"), ("comments", "symbol_id"), ("files", "last_commit_time")}


def conform(frame: pd.DataFrame, table: str) -> pd.DataFrame:
    """Exactly the schema's columns in order, ints as int32/int64 (nullable ones as Int32/Int64), index reset."""
    out = pd.DataFrame(index=range(len(frame)))
    for column, typ in TABLES[table].items():
        values = frame[column].reset_index(drop=True) if column in frame else pd.Series([None] * len(frame))
        name = str(typ)
        if name in ("int32", "int64"):
            nullable = (table, column) in NULLABLE_INTS
            target = name.capitalize() if nullable else name
            values = values if values.dtype == target else values.astype(target)
        elif name == "bool":
            values = values if values.dtype == bool else values.astype(bool)
        elif name == "string" and not (isinstance(values.dtype, pd.StringDtype) and not values.hasnans):
            values = values.astype(object)  # arrow-backed strings without nulls (reused rows) stay as they are
            if values.hasnans:
                values = values.where(values.notna(), None)
        out[column] = values
    return out


def previous_table(previous_kb: dict[str, pd.DataFrame] | None, table: str) -> pd.DataFrame:
    """One table of the last index, or an empty frame with the schema's columns."""
    if previous_kb and table in previous_kb:
        return previous_kb[table]
    return conform(pd.DataFrame(columns=list(TABLES[table])), table)


def stacked(frames: list[pd.DataFrame], columns: list[str]) -> pd.DataFrame:
    """Frames stacked (empty ones dropped), or an empty frame with these columns."""
    frames = [f for f in frames if len(f)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)


def old_to_new_symbol_ids(symbol_keys: pd.DataFrame) -> pd.Series:
    """new symbol_id by previous symbol_id, for the symbols of reused files (`symbol_keys` rows with old_id >= 0)."""
    reused = symbol_keys[symbol_keys["old_id"] >= 0]
    return pd.Series(reused["symbol_id"].to_numpy(), index=reused["old_id"].to_numpy())
