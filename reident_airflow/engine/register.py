"""Journalist and marketer risk against a population register (docs/metrics.md §3).

The register is a second table on the same QIs, covering the wider population the sample was
drawn from. Each sample class ``j`` (size ``f_j``) is matched to the register class with the
same QI values (size ``F_j``); a journalist re-identifies a record of class ``j`` with
probability ``1 / F_j`` (El Emam & Dankar 2008). The marketer's expected share of correct
matches is ``(1/n) * sum_j f_j / F_j`` (Dankar & El Emam 2010). ARX's journalist success rate
is ``max(u / sum_j F_j, mean over records of 1/F_j)``.

Values are matched on their text (``str(value)``, missing matching missing), so a register
read from a database matches a sample read from a CSV file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from reident_airflow.engine._arrays import IntArray
from reident_airflow.engine.classes import ClassTable
from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.engine.sample import RiskMeasures, validate_threshold

__all__ = ["RegisterRisk", "class_values", "match_register", "register_risk"]

_MISSING = "\x00<missing>"


def _decode(dictionary: Any, codes: IntArray) -> list[str]:
    if isinstance(dictionary, pa.Array):
        values = dictionary.take(pa.array(codes)).to_pylist()
    else:
        values = pd.Index(dictionary).take(codes).tolist()
    return [
        _MISSING if (v is None or (isinstance(v, float) and np.isnan(v)) or v is pd.NA) else str(v)
        for v in values
    ]


def class_values(table: ClassTable) -> pd.DataFrame:
    """One row per class with its QI values as text (for joins only; never for output)."""
    if table.dictionaries is None:
        raise InvalidInputError("this class table carries no values, so it cannot be matched")
    return pd.DataFrame(
        {
            q: _decode(table.dictionaries[i], table.codes[:, i])
            for i, q in enumerate(table.quasi_identifiers)
        }
    )


def match_register(sample: ClassTable, register: ClassTable) -> IntArray:
    """``F_j`` for every sample class ``j`` (aligned with ``sample.sizes``).

    Errors (aggregates only): the register lacks a QI, misses sample classes, or has a class
    smaller than the sample's.
    """
    missing = [q for q in sample.quasi_identifiers if q not in register.quasi_identifiers]
    if missing:
        raise InvalidInputError(
            f"population table lacks quasi-identifier(s) {', '.join(map(repr, missing))}"
        )
    qis = list(sample.quasi_identifiers)
    left = class_values(sample)
    left["__row"] = np.arange(sample.classes)
    values = class_values(register)[qis]
    values["__F"] = register.sizes
    right = values.groupby(qis, sort=False, dropna=False, as_index=False)["__F"].sum()
    merged = left.merge(right, on=qis, how="left", sort=False)
    merged = merged.sort_values("__row", kind="stable")
    big_f = merged["__F"].to_numpy(dtype=np.float64, na_value=np.nan)
    absent = np.isnan(big_f)
    if absent.any():
        recs = int(sample.sizes[absent].sum())
        raise InvalidInputError(
            f"the population table does not cover the sample: {int(absent.sum())} sample "
            f"class(es) ({recs} records) have no matching population class"
        )
    big_f_int = big_f.astype(np.int64)
    smaller = big_f_int < sample.sizes
    if smaller.any():
        raise InvalidInputError(
            f"the population table is smaller than the sample for {int(smaller.sum())} "
            "class(es): a register must contain every sampled record"
        )
    return big_f_int


@dataclass(frozen=True, kw_only=True)
class RegisterRisk(RiskMeasures):
    """Journalist measures on the register, and the marketer's risk."""

    success_rate: float
    marketer_risk: float
    matched_population_records: int

    def journalist_dict(self) -> dict[str, Any]:
        return {
            **self.to_dict(),
            "success_rate": self.success_rate,
            "basis": "population_table",
        }


def register_risk(f: IntArray, big_f: IntArray, record_threshold: float) -> RegisterRisk:
    """Journalist and marketer measures from sample sizes ``f_j`` and register sizes ``F_j``."""
    t = validate_threshold(record_threshold)
    n = int(f.sum())
    u = int(f.shape[0])
    risk = 1.0 / big_f.astype(np.float64)
    smallest = int(big_f.min())
    mean_record_risk = float((f * risk).sum() / n)
    return RegisterRisk(
        record_threshold=t,
        highest_risk=1.0 / smallest,
        lowest_risk=1.0 / int(big_f.max()),
        average_risk=mean_record_risk,
        records_at_risk=int(f[risk > t].sum()) / n,
        records_affected_by_highest_risk=int(f[big_f == smallest].sum()) / n,
        success_rate=max(u / int(big_f.sum()), mean_record_risk),
        marketer_risk=mean_record_risk,
        matched_population_records=int(big_f.sum()),
    )
