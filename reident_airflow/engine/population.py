"""Population uniqueness (docs/metrics.md §4), estimated from the class-size histogram alone.

Every estimator here sees only the histogram ``s -> c_s`` of the sample (``sizes`` ascending,
``counts[i]`` classes of size ``sizes[i]``), the sample size ``n = sum(s * c_s)``, the number of
classes ``u = sum(c_s)`` and the population size ``N`` (sampling fraction ``sf = n / N``). Each
returns the estimated number of population uniques and that number as a fraction **of N**
(ARX's convention), or ``None`` when the model cannot be fitted ("unavailable"; ARX reports 0).

- :func:`pitman` -- Pitman sampling formula fitted by maximum likelihood (Hoshino 2001).
- :func:`zayatz` -- hypergeometric equivalence-class model (Zayatz 1991).
- :func:`snb` -- slide negative binomial model (Chen & Keller-McNulty 1998), fitted by the
  method of moments; not ARX's implementation, which is broken (see its docstring).
- :func:`population_uniqueness` -- all three plus Dankar et al.'s (2012) decision rule.

If the sample has no unique (``c_1 = 0``) every estimate is 0 and, as ARX does, Dankar's rule
reports the model ``"dankar"`` (no model was needed to conclude).

Pitman and Zayatz reproduce ARX 3.9.2 (``ModelPitman``, ``ModelZayatz``) to ``rel 1e-8`` and so
does Dankar's rule for ``sf <= 0.1``; above it ARX's SNB is never available for ``sf < 1`` and
the rule may pick SNB where ARX picks Zayatz.

The models live in their own modules (:mod:`~reident_airflow.engine.population_pitman`,
:mod:`~reident_airflow.engine.population_zayatz`,
:mod:`~reident_airflow.engine.population_snb`); this one resolves ``N``, runs them and applies
Dankar's rule. No pandas, no Airflow: numpy and scipy only."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from reident_airflow.engine._model_input import PopulationEstimate, as_int, model_input
from reident_airflow.engine.defaults import REGIONS
from reident_airflow.engine.errors import EmptyDatasetError, InvalidInputError
from reident_airflow.engine.population_pitman import pitman, pitman_estimate
from reident_airflow.engine.population_snb import snb, snb_estimate
from reident_airflow.engine.population_zayatz import zayatz, zayatz_estimate
from reident_airflow.engine.records import FieldRecord

__all__ = [
    "DANKAR_THRESHOLD",
    "REGIONS",
    "DankarEstimate",
    "PopulationEstimate",
    "PopulationUniqueness",
    "pitman",
    "population_uniqueness",
    "resolve_population_size",
    "snb",
    "zayatz",
]


DankarModel = Literal["pitman", "zayatz", "snb", "dankar"]
#: Dankar et al.'s rule uses Pitman up to this sampling fraction (inclusive), Zayatz/SNB above.
DANKAR_THRESHOLD = 0.1


@dataclass(frozen=True)
class DankarEstimate(FieldRecord):
    """Dankar et al.'s estimate and the model that produced it.

    ``model`` is ``"pitman"``, ``"zayatz"`` or ``"snb"``; it is ``"dankar"`` when the sample has
    no unique (``c_1 = 0``): the estimate is then 0 without consulting any model (ARX's
    convention).
    """

    uniques: float
    fraction: float
    model: DankarModel


@dataclass(frozen=True)
class PopulationUniqueness(FieldRecord):
    """Every population model for one sample; ``None`` marks an unavailable estimate.

    Its JSON is the ``uniqueness.population`` object of the assessment (docs/contract.md).
    """

    population_size: int
    sampling_fraction: float
    pitman: PopulationEstimate | None
    zayatz: PopulationEstimate | None
    snb: PopulationEstimate | None
    dankar: DankarEstimate | None


def resolve_population_size(
    records: int,
    *,
    population_size: int | None = None,
    sampling_fraction: float | None = None,
    region: str | None = None,
) -> int | None:
    """The population size ``N`` from at most one of its three descriptions.

    - ``population_size``: ``N`` itself, an integer no smaller than ``records``;
    - ``sampling_fraction``: ``sf`` in ``(0, 1]``, then ``N = round(records / sf)`` (halves
      rounded up);
    - ``region``: a preset of :data:`REGIONS` (case-insensitive), e.g. ``"usa"``.

    Returns ``None`` when none is given (no population model is then computed). Raises
    :class:`InvalidInputError` when more than one is given or the one given is unusable.
    """
    described = {
        "population_size": population_size,
        "sampling_fraction": sampling_fraction,
        "region": region,
    }
    given = [name for name, value in described.items() if value is not None]
    if len(given) > 1:
        raise InvalidInputError(
            "give at most one of population_size, sampling_fraction and region; got "
            + " and ".join(given)
        )
    n = as_int(records, "records")
    if n < 0:
        raise InvalidInputError(f"records must be >= 0, got {n}")
    if population_size is not None:
        return _given_size(n, population_size)
    if sampling_fraction is not None:
        return _size_from_fraction(n, sampling_fraction)
    if region is not None:
        return _size_of_region(n, region)
    return None


def _given_size(n: int, population_size: int) -> int:
    """``N`` given as such: an integer no smaller than the sample."""
    big_n = as_int(population_size, "population_size")
    if big_n < n:
        raise InvalidInputError(
            f"population (N = {big_n}) is smaller than the sample (n = {n}): "
            "the population must contain every sampled record"
        )
    if big_n <= 0:
        raise InvalidInputError(f"population_size must be positive, got {big_n}")
    return big_n


def _size_from_fraction(n: int, sampling_fraction: float) -> int:
    """``N = round(n / sf)`` (halves rounded up) for ``sf`` in ``(0, 1]``."""
    if isinstance(sampling_fraction, bool):
        raise InvalidInputError(
            f"sampling_fraction must be a number in (0, 1], got {sampling_fraction!r}"
        )
    try:
        sf = float(sampling_fraction)
    except (TypeError, ValueError):
        raise InvalidInputError(
            f"sampling_fraction must be a number in (0, 1], got {sampling_fraction!r}"
        ) from None
    if not 0.0 < sf <= 1.0:  # also rejects NaN
        raise InvalidInputError(f"sampling_fraction must be in (0, 1], got {sf!r}")
    if n == 0:
        raise EmptyDatasetError("no records: a population size cannot be derived from sf")
    return math.floor(n / sf + 0.5)  # >= n since sf <= 1


def _size_of_region(n: int, region: str) -> int:
    """``N`` of a preset of :data:`REGIONS` (case-insensitive)."""
    key = str(region).strip().lower()
    if key not in REGIONS:
        known = ", ".join(sorted(REGIONS))
        raise InvalidInputError(f"unknown region {region!r}; known regions: {known}")
    big_n = REGIONS[key]
    if big_n < n:
        raise InvalidInputError(
            f"population of region {key!r} (N = {big_n}) is smaller than the sample (n = {n})"
        )
    return big_n


def population_uniqueness(
    sizes: NDArray[np.int64], counts: NDArray[np.int64], population_size: int
) -> PopulationUniqueness:
    """Pitman, Zayatz and SNB estimates and Dankar et al.'s choice among them.

    Dankar, F.K., El Emam, K., Neisa, A., Roffey, T. (2012) "Estimating the re-identification
    risk of clinical data sets", BMC Medical Informatics and Decision Making 12:66. The rule,
    as ARX's ``RiskModelPopulationUniqueness`` applies it:

    - ``sf <= 0.1``: Pitman; Zayatz when Pitman is unavailable;
    - ``sf > 0.1``: the smaller of Zayatz and SNB (SNB on a tie); Zayatz when SNB is
      unavailable;
    - no sample unique (``c_1 = 0``): every estimate is 0 and the model is ``"dankar"``.
    """
    h = model_input(sizes, counts, population_size)
    estimates: tuple[PopulationEstimate | None, ...]
    if h.c1 == 0:  # no sample unique: no model is needed to conclude
        estimates = (h.estimate(0.0),) * 3
        dankar: DankarEstimate | None = DankarEstimate(0.0, 0.0, "dankar")
    else:
        estimates = (pitman_estimate(h), zayatz_estimate(h), snb_estimate(h))
        dankar = _dankar(h.sf, *estimates)
    return PopulationUniqueness(
        population_size=h.big_n,
        sampling_fraction=h.sf,
        pitman=estimates[0],
        zayatz=estimates[1],
        snb=estimates[2],
        dankar=dankar,
    )


def _dankar(
    sf: float,
    est_pitman: PopulationEstimate | None,
    est_zayatz: PopulationEstimate | None,
    est_snb: PopulationEstimate | None,
) -> DankarEstimate | None:
    model: DankarModel
    est: PopulationEstimate | None
    if sf <= DANKAR_THRESHOLD:
        model, est = ("pitman", est_pitman) if est_pitman is not None else ("zayatz", est_zayatz)
    elif est_snb is None or (est_zayatz is not None and est_zayatz.uniques < est_snb.uniques):
        model, est = "zayatz", est_zayatz
    else:  # SNB when smaller or equal (ARX keeps SNB on a tie)
        model, est = "snb", est_snb
    if est is None:
        return None
    return DankarEstimate(est.uniques, est.fraction, model)
