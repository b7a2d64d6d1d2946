"""What every population model reads: a validated class-size histogram and ``N``.

The models of :mod:`reident_airflow.engine.population` (Pitman, Zayatz, SNB) see only the
histogram ``s -> c_s`` of the sample and the population size. :func:`model_input` checks both
once and derives what the models share (``n``, ``u``, ``c_1``, ``c_2``);
:class:`PopulationEstimate` is what each model returns.

An internal module of the engine: its names are imported by the engine's modules only.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numpy.typing import ArrayLike, NDArray

from reident_airflow.engine._arrays import FloatArray
from reident_airflow.engine.errors import EmptyDatasetError, InvalidInputError
from reident_airflow.engine.records import FieldRecord

__all__ = ["ModelInput", "PopulationEstimate", "as_int", "model_input"]


@dataclass(frozen=True)
class PopulationEstimate(FieldRecord):
    """Estimated number of population uniques and that number as a fraction of ``N``."""

    uniques: float
    fraction: float


def as_int(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InvalidInputError(f"{name} must be an integer, got {value!r}")
    return int(value)


@dataclass(frozen=True)
class ModelInput:
    """A validated class-size histogram and the population size."""

    sizes: NDArray[np.int64]  # distinct class sizes, ascending, counts > 0 only
    counts: NDArray[np.int64]
    n: int  # records
    u: int  # classes
    c1: int  # classes of size 1
    c2: int  # classes of size 2
    big_n: int  # population size

    @property
    def sf(self) -> float:
        return self.n / self.big_n

    @cached_property
    def non_singletons(self) -> tuple[FloatArray, FloatArray]:
        """Sizes ``s >= 2`` and their counts, as floats (the class terms of Pitman's score)."""
        big = self.sizes >= 2
        return self.sizes[big].astype(np.float64), self.counts[big].astype(np.float64)

    def estimate(self, uniques: float) -> PopulationEstimate:
        return PopulationEstimate(uniques=float(uniques), fraction=float(uniques) / self.big_n)


def model_input(sizes: ArrayLike, counts: ArrayLike, population_size: int) -> ModelInput:
    s = _int_vector(sizes, "sizes")
    c = _int_vector(counts, "counts")
    if s.shape != c.shape:
        raise InvalidInputError(
            f"sizes and counts must have the same length, got {s.size} and {c.size}"
        )
    if s.size and s.min() < 1:
        raise InvalidInputError(f"class sizes must be positive, got {int(s.min())}")
    if s.size > 1 and not bool(np.all(np.diff(s) > 0)):
        raise InvalidInputError("class sizes must be strictly ascending (one entry per size)")
    if c.size and c.min() < 0:
        raise InvalidInputError(f"class counts must be >= 0, got {int(c.min())}")
    keep = c > 0
    s, c = s[keep], c[keep]
    n = int(np.dot(s, c)) if s.size else 0
    if n == 0:
        raise EmptyDatasetError("the class-size histogram holds no record")
    big_n = as_int(population_size, "population_size")
    if big_n < n:
        raise InvalidInputError(
            f"population (N = {big_n}) is smaller than the sample (n = {n}): "
            "the population must contain every sampled record"
        )
    c1 = int(c[0]) if s[0] == 1 else 0
    at2 = np.flatnonzero(s == 2)
    c2 = int(c[at2[0]]) if at2.size else 0
    return ModelInput(s, c, n, int(c.sum()), c1, c2, big_n)


def _int_vector(values: ArrayLike, name: str) -> NDArray[np.int64]:
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{name} must be a one-dimensional array of integers") from exc
    if arr.ndim != 1:
        raise InvalidInputError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.number):
        raise InvalidInputError(f"{name} must hold integers, got dtype {arr.dtype}")
    if not np.issubdtype(arr.dtype, np.integer) and not (
        bool(np.all(np.isfinite(arr))) and bool(np.all(arr == np.round(arr)))
    ):
        raise InvalidInputError(f"{name} must hold whole numbers")
    return arr.astype(np.int64)
