"""One assessment of a table: every measure of metrics.md §2-§5 and the release gate.

:func:`assess` takes a :class:`~reident_airflow.engine.classes.ClassTable` (however it was
counted: DataFrame, file, database) and returns an :class:`Assessment` whose ``to_dict()`` is
the ``reident.assessment/v1`` JSON of contract.md. Nothing here touches rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from reident_airflow.engine.attributes import AttributeRisk, attribute_risks
from reident_airflow.engine.classes import ClassTable
from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.engine.population import (
    PopulationUniqueness,
    population_uniqueness,
    resolve_population_size,
)
from reident_airflow.engine.register import RegisterRisk, match_register, register_risk
from reident_airflow.engine.sample import (
    DEFAULT_RECORD_THRESHOLD,
    RiskBand,
    SampleRisk,
    risk_distribution,
    sample_risk,
    validate_threshold,
)

__all__ = ["SCHEMA", "Assessment", "Breach", "JournalistRisk", "Thresholds", "assess"]

SCHEMA = "reident.assessment/v1"


@dataclass(frozen=True)
class Breach:
    """One gate threshold that the table breaches."""

    metric: str
    observed: float
    limit: float

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "observed": self.observed, "limit": self.limit}

    def describe(self) -> str:
        bound = "at least" if self.metric == "k" else "at most"
        return f"{self.metric} = {_fmt(self.observed)} (limit: {bound} {_fmt(self.limit)})"


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.6g}"


@dataclass(frozen=True)
class Thresholds:
    """The release gate: each limit is optional; ``None`` means "not checked".

    Risk limits are shares in ``(0, 1]`` and apply to the prosecutor model, which is never
    below the journalist's (El Emam & Dankar 2008), so a table that passes is safe for both.
    """

    max_highest_risk: float | None = None
    max_average_risk: float | None = None
    max_records_at_risk: float | None = None
    min_k: int | None = None

    def __post_init__(self) -> None:
        for name in ("max_highest_risk", "max_average_risk"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, validate_threshold(value, name))
        if self.max_records_at_risk is not None:
            try:
                v = float(self.max_records_at_risk)
            except (TypeError, ValueError):
                got = self.max_records_at_risk
                raise InvalidInputError(
                    f"max_records_at_risk must be a share in [0, 1], got {got!r}"
                ) from None
            if not (0.0 <= v <= 1.0):
                raise InvalidInputError(f"max_records_at_risk must be in [0, 1], got {v!r}")
            object.__setattr__(self, "max_records_at_risk", v)
        if self.min_k is not None:
            k = self.min_k
            if isinstance(k, bool) or not isinstance(k, int | float) or not float(k).is_integer():
                raise InvalidInputError(f"min_k must be a whole number >= 1, got {k!r}")
            if int(k) < 1:
                raise InvalidInputError(f"min_k must be >= 1, got {int(k)}")
            object.__setattr__(self, "min_k", int(k))

    def to_dict(self) -> dict[str, Any]:
        return {
            name: getattr(self, name)
            for name in ("max_highest_risk", "max_average_risk", "max_records_at_risk", "min_k")
            if getattr(self, name) is not None
        }

    def check(self, prosecutor: SampleRisk, k: int) -> tuple[Breach, ...]:
        out: list[Breach] = []
        pairs = (
            ("prosecutor.highest_risk", prosecutor.highest_risk, self.max_highest_risk),
            ("prosecutor.average_risk", prosecutor.average_risk, self.max_average_risk),
            ("prosecutor.records_at_risk", prosecutor.records_at_risk, self.max_records_at_risk),
        )
        for metric, observed, limit in pairs:
            if limit is not None and observed > limit:
                out.append(Breach(metric, observed, limit))
        if self.min_k is not None and k < self.min_k:
            out.append(Breach("k", float(k), float(self.min_k)))
        return tuple(out)


@dataclass(frozen=True)
class JournalistRisk:
    """Journalist measures and what they rest on.

    ``basis="sample"``: no population register was given, so, as ARX does, the journalist's
    measures fall back to the sample's (equal to the prosecutor's). Population estimates,
    when a population size was given, are in ``Assessment.population``.
    ``basis="population_table"``: measured on the register's class sizes (``register``).
    """

    measures: SampleRisk
    basis: str
    register: RegisterRisk | None = None

    def to_dict(self) -> dict[str, Any]:
        if self.register is not None:
            return self.register.journalist_dict()
        return {**self.measures.to_dict(), "basis": self.basis}


@dataclass(frozen=True)
class Assessment:
    """The result of :func:`assess`; inputs (QIs, threshold, population, gate) are echoed."""

    quasi_identifiers: tuple[str, ...]
    records: int
    classes: int
    k: int
    excluded_records: int
    class_size_histogram: tuple[tuple[int, int], ...]
    prosecutor: SampleRisk
    journalist: JournalistRisk
    marketer_risk: float
    sample_uniques: float
    population: PopulationUniqueness | None
    risk_distribution: tuple[RiskBand, ...]
    attributes: tuple[AttributeRisk, ...]
    thresholds: Thresholds = field(default_factory=Thresholds)
    breaches: tuple[Breach, ...] = ()

    @property
    def passed(self) -> bool:
        return not self.breaches

    def to_dict(self) -> dict[str, Any]:
        """The ``reident.assessment/v1`` JSON (plain Python types, aggregates only)."""
        return {
            "schema": SCHEMA,
            "quasi_identifiers": list(self.quasi_identifiers),
            "records": self.records,
            "classes": self.classes,
            "k": self.k,
            "excluded_records": self.excluded_records,
            "class_size_histogram": [[s, c] for s, c in self.class_size_histogram],
            "prosecutor": self.prosecutor.to_dict(),
            "journalist": self.journalist.to_dict(),
            "marketer": {"risk": self.marketer_risk},
            "uniqueness": {
                "sample_uniques": self.sample_uniques,
                "population": None if self.population is None else self.population.to_dict(),
            },
            "risk_distribution": [b.to_dict() for b in self.risk_distribution],
            "attributes": [a.to_dict() for a in self.attributes],
            "individual_risk": None,
            "l_diversity": None,
            "suda": None,
            "thresholds": self.thresholds.to_dict(),
            "breaches": [b.to_dict() for b in self.breaches],
            "passed": self.passed,
        }


def assess(
    table: ClassTable,
    *,
    record_threshold: float = DEFAULT_RECORD_THRESHOLD,
    population_size: int | None = None,
    sampling_fraction: float | None = None,
    region: str | None = None,
    thresholds: Thresholds | None = None,
    attributes: bool = True,
    max_subset_size: int | None = None,
    population_table: ClassTable | None = None,
) -> Assessment:
    """Assess a class table: sample risks, attacker models, population models, QI ranking.

    ``population_size`` / ``sampling_fraction`` / ``region`` (at most one) describe the
    population the table was drawn from; without them no population model is reported.
    ``population_table`` is a register of that population on the same QIs: the journalist
    and marketer are then measured against it (``basis: "population_table"``), and, unless a
    population size is given, its number of records is taken as ``N``.
    """
    sizes, counts = table.histogram()
    prosecutor = sample_risk(sizes, counts, record_threshold)
    n = prosecutor.records
    register = None
    if population_table is not None:
        big_f = match_register(table, population_table)
        register = register_risk(table.sizes, big_f, record_threshold)
    no_size = population_size is None and sampling_fraction is None and region is None
    if population_table is not None and no_size:  # the register is the population: N
        population_size = population_table.records
    big_n = resolve_population_size(
        n, population_size=population_size, sampling_fraction=sampling_fraction, region=region
    )
    population = None if big_n is None else population_uniqueness(sizes, counts, big_n)
    gate = thresholds if thresholds is not None else Thresholds()
    k = int(sizes[0])
    ranking = attribute_risks(table, max_subset_size) if attributes else ()
    return Assessment(
        quasi_identifiers=table.quasi_identifiers,
        records=n,
        classes=prosecutor.classes,
        k=k,
        excluded_records=table.excluded_records,
        class_size_histogram=tuple(
            (int(s), int(c)) for s, c in zip(sizes.tolist(), counts.tolist(), strict=True)
        ),
        prosecutor=prosecutor,
        journalist=JournalistRisk(
            measures=prosecutor,
            basis="sample" if register is None else "population_table",
            register=register,
        ),
        marketer_risk=prosecutor.classes / n if register is None else register.marketer_risk,
        sample_uniques=prosecutor.sample_uniques,
        population=population,
        risk_distribution=risk_distribution(sizes, counts),
        attributes=ranking,
        thresholds=gate,
        breaches=gate.check(prosecutor, k),
    )
