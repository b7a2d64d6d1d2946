"""The bundled sample and the staging step shared by the example DAGs (``dags/``).

The sample is UCI Adult as distributed with ARX (30,162 records, ``;``-separated). Staging
writes it, optionally coarsened, into a table of a database connection: that is the embedded
default's stand-in for a team's own load step.
"""

from __future__ import annotations

from importlib.resources import files

import pandas as pd

__all__ = ["SAMPLE_SEP", "drop_small_classes", "load_sample", "stage_sample"]

SAMPLE_SEP = ";"


def load_sample(*, age_band: int | None = None) -> pd.DataFrame:
    """The bundled sample as text; with ``age_band`` ages become bands such as ``30-39``."""
    resource = files("reident_airflow").joinpath("data/adult.csv")
    with resource.open("r", encoding="utf-8") as fh:
        frame = pd.read_csv(fh, sep=SAMPLE_SEP, dtype=str, keep_default_na=False)
    if age_band:
        low = frame["age"].astype(int) // age_band * age_band
        frame["age"] = low.astype(str) + "-" + (low + age_band - 1).astype(str)
    return frame


def drop_small_classes(frame: pd.DataFrame, qis: list[str], k: int) -> pd.DataFrame:
    """Suppress the records of classes smaller than ``k`` (the simplest anonymization)."""
    sizes = frame.groupby(qis, dropna=False)[qis[0]].transform("size")
    return frame[sizes >= k]


def stage_sample(
    conn_id: str,
    table: str,
    *,
    age_band: int | None = None,
    suppress_below_k: int = 0,
    quasi_identifiers: list[str] | None = None,
) -> int:
    """Write the (coarsened) sample into ``table`` of an Airflow connection; return its rows."""
    from reident_airflow.connections import sqlalchemy_engine

    frame = load_sample(age_band=age_band)
    if suppress_below_k:
        frame = drop_small_classes(
            frame, quasi_identifiers or ["sex", "age", "race"], suppress_below_k
        )
    engine = sqlalchemy_engine(conn_id)
    try:
        frame.to_sql(table, engine, if_exists="replace", index=False, chunksize=5000)
    finally:
        engine.dispose()
    return len(frame)
