"""``expect_table_reidentification_risk_to_be_below``: one risk measure at most a limit."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from great_expectations.compatibility import pydantic

from reident_airflow.engine import (
    DEFAULT_RECORD_THRESHOLD,
    ClassSizes,
    Distributions,
)
from reident_airflow.gx import parameters as p
from reident_airflow.gx.expectations.base import (
    ClassSizeExpectation,
    format_number,
    preset_words,
    verdict,
)
from reident_airflow.gx.presets import DEFAULT_MEASURE, apply_risk_preset, check_preset

__all__ = ["ExpectTableReidentificationRiskToBeBelow"]

_POPULATION_WORDS = (
    ("population_size", "a population of $population_size"),
    ("sampling_fraction", "a sampling fraction of $sampling_fraction"),
    ("region", "the population of region $region"),
)


def _lookup(document: Mapping[str, Any], path: tuple[str, ...]) -> float | None:
    """The number at ``path`` of the assessment JSON; ``None`` where it is unavailable."""
    node: Any = document
    for part in path:
        if not isinstance(node, Mapping) or node.get(part) is None:
            return None
        node = node[part]
    return float(node)


class ExpectTableReidentificationRiskToBeBelow(ClassSizeExpectation):
    """Expect a re-identification risk measure of the table to be at most ``max_value``.

    The table's records are grouped on ``quasi_identifiers`` where the data is (a DataFrame, or
    one ``GROUP BY`` in the database) and assessed by reident-airflow's engine. ``measure`` is
    one of :data:`~reident_airflow.gx.parameters.MEASURES`, named by its path in the assessment
    JSON (``docs/contract.md`` §2): ``prosecutor.highest_risk``, ``prosecutor.average_risk``,
    ``prosecutor.records_at_risk``, ``journalist.*`` (the same three), ``marketer.risk``,
    ``uniqueness.sample_uniques``, and ``uniqueness.population.{dankar,pitman,zayatz,snb}.fraction``
    (population uniques, ``docs/metrics.md`` §4, which need ``population_size``,
    ``sampling_fraction`` or ``region``).

    Without a population register the journalist's measures equal the prosecutor's
    (``basis: "sample"``, as ARX). A measure the engine reports as unavailable (``null``, e.g.
    a Pitman fit that does not converge) fails the expectation: it shows nothing.

    ``result.observed_value`` is the measure's value (``None`` when unavailable);
    ``result.details`` holds the measure's name, the limit and, under ``assessment``, the
    ``reident.assessment/v1`` JSON that ``reident assess`` prints for the same options, plus
    the matching gate flag where the command line has one (``--max-highest-risk``,
    ``--max-average-risk``, ``--max-records-at-risk``). With
    ``rank_attributes=False`` (``--no-ranking``) only the class-size histogram is counted.
    """

    measure: str | None = pydantic.Field(
        default=None,
        description=(
            "The risk measure to gate: a dotted path into the assessment JSON "
            "(default: the preset's, else prosecutor.highest_risk)."
        ),
    )
    max_value: float | p.SuiteParameter | None = pydantic.Field(
        default=None,
        description="The highest acceptable value of the measure (default: the preset's).",
    )
    record_threshold: float | p.SuiteParameter = pydantic.Field(
        default=DEFAULT_RECORD_THRESHOLD,
        description="A record is at risk when its risk exceeds this threshold.",
    )
    population_size: int | p.SuiteParameter | None = pydantic.Field(
        default=None, description="Size N of the population the table was drawn from."
    )
    sampling_fraction: float | p.SuiteParameter | None = pydantic.Field(
        default=None, description="n / N, instead of population_size."
    )
    region: str | None = pydantic.Field(
        default=None, description="A population preset (e.g. 'usa'), instead of the size."
    )
    preset: str | None = pydantic.Field(
        default=None,
        description="A policy preset (e.g. 'ema-0070'): its measure and limit, unless given.",
    )

    args_keys = ("quasi_identifiers", "measure", "max_value")
    field_checks: ClassVar[Mapping[str, p.FieldCheck]] = {
        "measure": p.check_measure,
        "max_value": p.check_max_value,
        "record_threshold": p.check_record_threshold,
        "population_size": p.check_population_size,
        "sampling_fraction": p.check_sampling_fraction,
        "preset": check_preset,
    }
    cross_checks: ClassVar[tuple[p.CrossCheck, ...]] = (
        apply_risk_preset,
        p.check_max_value_for_measure,
        p.check_population,
        p.check_needs_population,
    )
    title: ClassVar[str] = "Expect table re-identification risk to be below"
    short_description: ClassVar[str] = (
        "Expect a re-identification risk measure to be at most a limit."
    )

    @classmethod
    def _requirement(cls, kwargs: Mapping[str, Any], qis: str, params: dict[str, Any]) -> str:
        measure = str(kwargs.get("measure") or DEFAULT_MEASURE)
        known = p.MEASURES.get(measure)
        label = known.label if known is not None else "risk measure $measure"
        if known is None:
            params["measure"] = measure
        params["max_value"] = kwargs.get("max_value")
        sentence = f"{label} on quasi-identifiers {qis} must be at most $max_value"
        template = sentence[:1].upper() + sentence[1:]
        if measure.endswith("records_at_risk"):
            params["record_threshold"] = kwargs.get("record_threshold", DEFAULT_RECORD_THRESHOLD)
            template += " (a record is at risk when its risk exceeds $record_threshold)"
        for key, words in _POPULATION_WORDS:
            if kwargs.get(key) is not None:
                params[key] = kwargs[key]
                template += f", assuming {words}"
        return template + preset_words(kwargs, params) + "."

    def _evaluate(self, counted: ClassSizes | Distributions) -> dict[str, Any]:
        measure = str(self.measure)  # resolved by apply_risk_preset
        limit = p.check_limit(measure, self.max_value)
        p.check_population(self.__dict__)
        assessment = self._assess(
            counted,
            record_threshold=self.record_threshold,  # suite parameters are resolved by now
            population_size=self.population_size,
            sampling_fraction=self.sampling_fraction,
            region=self.region,
            thresholds=p.gate(measure, limit),
            preset=self.preset,
        )
        document = assessment.to_dict()
        value = _lookup(document, p.MEASURES[measure].path)
        shown = "unavailable" if value is None else format_number(value)
        return verdict(
            value is not None and value <= limit,
            value,
            document,
            measure=measure,
            limit=limit,
            summary=f"{measure} = {shown} (limit: at most {format_number(limit)})",
            preset=self.preset,
        )
