"""Individual risk from sampling weights (docs/metrics.md §6; sdcMicro-compatible).

A survey sample or trial cohort stands for a wider population. Each record's class has
``f_k`` records in the sample and an estimated ``F_k`` members in the population: the sum of
the sampling weights of its records (each weight is the number of population units the record
represents). The journalist, who links the release to the population, re-identifies a record
with the probability estimated by the Benedetti–Franconi individual risk (Benedetti &
Franconi 1998; Franconi & Polettini 2004, "Individual risk estimation in mu-Argus: a review"),
in the approximation that is sdcMicro's default (``indivRisk(method = "approx")``). With
``p = f_k / F_k``:

- ``f_k = 1``: ``p/(1-p) * ln(1/p)``
- ``f_k = 2``: ``p/(1-p) - (p/(1-p))^2 * ln(1/p)``
- ``f_k >= 3``: ``p / (f_k - (1 - p))``
- ``f_k = F_k`` (the class is its whole population): ``1 / f_k``

The global risk is the sum of the individual risks over records (the expected number of
re-identifications) and, divided by ``n``, the expected share. The arithmetic follows
sdcMicro 5.8.0's ``indivRisk`` operation by operation, so the per-record risks agree with it to
the last bit or two (``tests/engine/test_individual_risk.py``).

No population register is needed: this is the journalist's risk when the release is a sample
and only its design weights are known, which ARX does not offer (it falls back to the sample).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from reident_airflow.engine._arrays import FloatArray, IntArray
from reident_airflow.engine._exact import order_free_sum
from reident_airflow.engine.aggregates import ClassWeights, check_weight_sums
from reident_airflow.engine.errors import EmptyDatasetError, InvalidInputError
from reident_airflow.engine.sample import (
    DEFAULT_RECORD_THRESHOLD,
    RiskMeasures,
    validate_threshold,
)

__all__ = [
    "METHOD",
    "IndividualRisk",
    "benedetti_franconi",
    "individual_risk",
    "individual_risk_summary",
]


# Classes per block of the per-class formulas (a few temporaries that stay in the CPU cache).
_BLOCK = 1 << 15

#: How the risk is estimated (echoed in the JSON).
METHOD = "benedetti-franconi approximation (sdcMicro indivRisk, method 'approx')"


def benedetti_franconi(sizes: IntArray, weight_sums: FloatArray) -> FloatArray:
    """Per-class individual risk from sample sizes ``f_k`` and weight sums ``F_k``.

    ``F_k >= f_k`` is required (checked): ``p = f_k / F_k`` is a sampling fraction.
    """
    f = np.asarray(sizes, dtype=np.int64)
    big_f = np.asarray(weight_sums, dtype=np.float64)
    if f.shape != big_f.shape or f.ndim != 1:
        raise InvalidInputError("sizes and weight sums must be 1-D and aligned")
    if f.shape[0] == 0:
        raise EmptyDatasetError("the table has no records: there is nothing to assess")
    if (f <= 0).any():
        raise InvalidInputError("class sizes must be positive")
    check_weight_sums(f, ClassWeights("weight", big_f))
    return _benedetti_franconi(f, big_f)


def _benedetti_franconi(f: IntArray, big_f: FloatArray) -> FloatArray:
    """:func:`benedetti_franconi` on checked input."""
    risk = np.empty(f.shape[0], dtype=np.float64)
    # each class takes the formula of its size; the formulas are evaluated over blocks of
    # classes that stay in the CPU cache (every element as it would be alone)
    size = min(f.shape[0], _BLOCK)
    ff, p, q, odds, log_inv, term = (np.empty(size, dtype=np.float64) for _ in range(6))
    where = np.empty(size, dtype=np.bool_)
    with np.errstate(divide="ignore", invalid="ignore"):
        for start in range(0, f.shape[0], _BLOCK):
            stop = min(start + _BLOCK, f.shape[0])
            k = stop - start
            fb, big, out = f[start:stop], big_f[start:stop], risk[start:stop]
            fk, pk, qk, ok, lk, tk, wk = (a[:k] for a in (ff, p, q, odds, log_inv, term, where))
            np.copyto(fk, fb, casting="unsafe")
            np.divide(fk, big, out=pk)  # p = f / F
            np.subtract(1.0, pk, out=qk)
            np.subtract(fk, qk, out=out)
            np.divide(pk, out, out=out)  # f >= 3: p / (f - (1 - p))
            np.divide(pk, qk, out=ok)
            np.divide(1.0, pk, out=lk)
            np.log(lk, out=lk)
            np.multiply(ok, lk, out=tk)  # f = 1: p/(1-p) ln(1/p)
            np.equal(fb, 1, out=wk)
            np.copyto(out, tk, where=wk)
            np.multiply(ok, ok, out=tk)
            tk *= lk
            np.subtract(ok, tk, out=tk)  # f = 2: p/(1-p) - (p/(1-p))^2 ln(1/p)
            np.equal(fb, 2, out=wk)
            np.copyto(out, tk, where=wk)
            np.equal(fk, big, out=wk)  # the class is its whole population (p = 1)
            np.divide(1.0, fk, out=tk)
            np.copyto(out, tk, where=wk)
    return risk


@dataclass(frozen=True)
class IndividualRisk:
    """Individual risk of a table (per class in :attr:`risk`) and its summaries.

    ``global_risk`` is the expected number of re-identifications (sdcMicro's
    ``global_risk_ER``), ``global_risk_share`` that number over ``n`` (sdcMicro's
    ``global_risk``). ``records_above_threshold`` is the share of records whose risk is
    strictly greater than ``record_threshold``.
    """

    weight: str
    records: int
    record_threshold: float
    global_risk: float
    global_risk_share: float
    highest: float
    lowest: float
    records_above_threshold: float
    records_affected_by_highest: float
    estimated_population: float
    risk: FloatArray = field(repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The ``individual_risk`` object of the assessment JSON (docs/contract.md)."""
        return {
            "weight": self.weight,
            "global_risk": self.global_risk,
            "global_risk_share": self.global_risk_share,
            "highest": self.highest,
            "lowest": self.lowest,
            "records_above_threshold": self.records_above_threshold,
            "record_threshold": self.record_threshold,
            "estimated_population": self.estimated_population,
            "method": METHOD,
        }

    def journalist_dict(self) -> dict[str, Any]:
        """The journalist's measures estimated from the weights (``basis: sampling_weights``)."""
        measures = RiskMeasures(
            record_threshold=self.record_threshold,
            highest_risk=self.highest,
            lowest_risk=self.lowest,
            average_risk=self.global_risk_share,
            records_at_risk=self.records_above_threshold,
            records_affected_by_highest_risk=self.records_affected_by_highest,
        )
        return {**measures.to_dict(), "basis": "sampling_weights", "weight": self.weight}


def individual_risk(
    sizes: IntArray,
    weights: ClassWeights,
    *,
    record_threshold: float = DEFAULT_RECORD_THRESHOLD,
) -> IndividualRisk:
    """Individual risk of every class and the table's global risk (docs/metrics.md §6).

    The sums are checked against ``sizes`` here (a finite ``F_k >= f_k`` per class): one
    comparison per class, whoever built them.
    """
    t = validate_threshold(record_threshold)
    f = np.asarray(sizes, dtype=np.int64)
    risk = benedetti_franconi(f, weights.sums)
    # the same classes give the same totals whatever their order (a database and a file list
    # classes differently)
    return individual_risk_summary(
        weights.column,
        f,
        risk,
        record_threshold=t,
        global_risk=order_free_sum(f * risk),
        estimated_population=order_free_sum(weights.sums),
    )


def individual_risk_summary(
    weight: str,
    records: IntArray,
    risk: FloatArray,
    *,
    record_threshold: float,
    global_risk: float,
    estimated_population: float,
) -> IndividualRisk:
    """The :class:`IndividualRisk` of groups of records, ``records[j]`` of them at ``risk[j]``.

    A group is a class, or several classes of equal ``(f_k, F_k)`` that a source counted as
    one (their records added up). ``global_risk`` (the sum of the risks over records) and
    ``estimated_population`` (the sum of the weights) are the caller's, summed so that the
    same classes give the same totals in any order; ``record_threshold`` as
    :func:`~reident_airflow.engine.sample.validate_threshold` returns it.
    """
    n = int(records.sum())
    highest = float(risk.max())
    return IndividualRisk(
        weight=weight,
        records=n,
        record_threshold=record_threshold,
        global_risk=global_risk,
        global_risk_share=global_risk / n,
        highest=highest,
        lowest=float(risk.min()),
        records_above_threshold=int(np.sum(records, where=risk > record_threshold)) / n,
        records_affected_by_highest=int(np.sum(records, where=risk == highest)) / n,
        estimated_population=estimated_population,
        risk=risk,
    )
