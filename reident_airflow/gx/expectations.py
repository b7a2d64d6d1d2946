"""Great Expectations expectations for re-identification risk.

Four batch expectations, each a thin adapter: a metric counts where the data is
(:mod:`reident_airflow.gx.metrics`), the engine does all the arithmetic, and the
``observed_value`` of the result is the JSON the command line prints.

``ExpectTableReidentificationRiskToBeBelow``
    One risk measure of :data:`MEASURES` (a path into the ``reident.assessment/v1`` JSON) is at
    most ``max_value``. ``observed_value`` is ``reident assess --qi ... --json -`` with the same
    record threshold and population options, plus the matching gate flag where the command line
    has one (``--max-highest-risk``, ``--max-average-risk``, ``--max-records-at-risk``).
``ExpectTableToBeKAnonymous``
    Every class has at least ``k`` records; ``observed_value`` is ``reident assess --min-k K``.
``ExpectTableDirectMatchProtectionToBeAbove``
    Column Direct Match Protection of the batch (the released table) against ``original_table``
    is at least ``target``; ``observed_value`` is the ``reident.direct_match/v1`` JSON.

``ExpectTableToBeLDiverse``
    Every class holds at least ``l`` distinct values of each sensitive column (or has entropy
    or recursive (c, l)-diversity of at least ``l``: ``measure``); ``observed_value`` is
    ``reident assess --sensitive COLS --recursive-c C`` (with ``--min-l L`` for ``distinct``).

The three assessing expectations rank the QI subsets (the ``attributes`` section) as
``reident assess`` does, which needs the class table. ``rank_attributes=False`` skips the
ranking, as ``--no-ranking`` does (and as the operator's ``rank_attributes=False``): the risk
and k-anonymity expectations then read only the class-size histogram metric, which is all their
verdicts need.

Parameters that can be checked without data (a misspelt measure, ``k < 1``, a limit out of
range) fail when the expectation is built, as GE 1.x's own expectations do (a pydantic
``ValidationError`` with a readable message). Problems only the data can reveal (an unknown
column, an empty table) give a failed validation result whose ``exception_info`` carries the
engine's message. Messages and results carry aggregates only, never a record's values.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from great_expectations.compatibility import pydantic
from great_expectations.expectations.expectation import (
    BatchExpectation,
    render_suite_parameter_string,
)
from great_expectations.render.components import (
    AtomicDiagnosticRendererType,
    LegacyDiagnosticRendererType,
    LegacyRendererType,
    RenderedAtomicContent,
    RenderedStringTemplateContent,
    renderedAtomicValueSchema,
)
from great_expectations.render.renderer.renderer import renderer
from great_expectations.render.renderer_configuration import RendererConfiguration

from reident_airflow.engine.aggregates import ClassAggregates
from reident_airflow.engine.assessment import Thresholds, assess
from reident_airflow.engine.classes import ClassSizes, ClassTable, validate_quasi_identifiers
from reident_airflow.engine.diversity import DEFAULT_RECURSIVE_C, validate_recursive_c
from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.engine.population import REGIONS
from reident_airflow.engine.sample import DEFAULT_RECORD_THRESHOLD, validate_threshold
from reident_airflow.gx.metrics import (
    CLASS_TABLE_METRIC,
    DIRECT_MATCH_METRIC,
    HISTOGRAM_METRIC,
    SENSITIVE_COUNTS_METRIC,
    MetricError,
)

__all__ = [
    "L_DIVERSITY_MEASURES",
    "MEASURES",
    "ExpectTableDirectMatchProtectionToBeAbove",
    "ExpectTableReidentificationRiskToBeBelow",
    "ExpectTableToBeKAnonymous",
    "ExpectTableToBeLDiverse",
    "Measure",
]


@dataclass(frozen=True)
class Measure:
    """A risk measure: where it sits in the assessment JSON and how it reads in Data Docs.

    ``gate`` names the :class:`~reident_airflow.engine.assessment.Thresholds` field (and
    command-line flag) that gates the same number, if there is one.
    """

    path: tuple[str, ...]
    label: str
    gate: str | None = None
    needs_population: bool = False


def _population(model: str) -> Measure:
    return Measure(
        ("uniqueness", "population", model, "fraction"),
        f"estimated share of population uniques ({model} model)",
        needs_population=True,
    )


#: The measures ``ExpectTableReidentificationRiskToBeBelow`` can gate, by name. A name is the
#: dotted path of the number in the ``reident.assessment/v1`` JSON (contract.md).
MEASURES: Mapping[str, Measure] = {
    "prosecutor.highest_risk": Measure(
        ("prosecutor", "highest_risk"),
        "highest prosecutor re-identification risk",
        gate="max_highest_risk",
    ),
    "prosecutor.average_risk": Measure(
        ("prosecutor", "average_risk"),
        "average prosecutor re-identification risk",
        gate="max_average_risk",
    ),
    "prosecutor.records_at_risk": Measure(
        ("prosecutor", "records_at_risk"),
        "share of records at risk (prosecutor)",
        gate="max_records_at_risk",
    ),
    "journalist.highest_risk": Measure(
        ("journalist", "highest_risk"), "highest journalist re-identification risk"
    ),
    "journalist.average_risk": Measure(
        ("journalist", "average_risk"), "average journalist re-identification risk"
    ),
    "journalist.records_at_risk": Measure(
        ("journalist", "records_at_risk"), "share of records at risk (journalist)"
    ),
    "marketer.risk": Measure(("marketer", "risk"), "marketer re-identification risk"),
    "uniqueness.sample_uniques": Measure(
        ("uniqueness", "sample_uniques"), "share of records unique in the table"
    ),
    "uniqueness.population.dankar.fraction": _population("dankar"),
    "uniqueness.population.pitman.fraction": _population("pitman"),
    "uniqueness.population.zayatz.fraction": _population("zayatz"),
    "uniqueness.population.snb.fraction": _population("snb"),
}

_SUPPORTED_DATA_SOURCES = ["Pandas", "SQLite", "PostgreSQL", "MySQL"]

#: A suite parameter (``{"$PARAMETER": "name"}``), GE's ``_Param``.
_Param = dict[str, Any]


# ------------------------------------------------------------------------------ parameter checks
def _is_parameter(value: Any) -> bool:
    """A suite parameter (``{"$PARAMETER": ...}``): checked when validating, once resolved."""
    return isinstance(value, dict)


def _check_qis(value: Any) -> list[str]:
    if isinstance(value, str) or not isinstance(value, list | tuple):
        raise ValueError("quasi_identifiers must be a list of column names")
    names = [str(v) for v in value]
    validate_quasi_identifiers(names, names)  # non-empty, no blanks, no duplicates
    return names


def _check_measure(value: Any) -> str:
    if value in MEASURES:
        return str(value)
    close = difflib.get_close_matches(str(value), list(MEASURES), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise ValueError(
        f"unknown measure {value!r}{hint}; choose one of: {', '.join(repr(m) for m in MEASURES)}"
    )


def _check_share(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInputError(f"{name} must be a number in [0, 1], got {value!r}")
    v = float(value)
    if not (0.0 <= v <= 1.0):  # also rejects NaN
        raise InvalidInputError(f"{name} must be in [0, 1], got {v!r}")
    return v


def _check_whole(value: Any, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInputError(f"{name} must be a whole number >= {minimum}, got {value!r}")
    if not (math.isfinite(value) and float(value).is_integer()):
        raise InvalidInputError(f"{name} must be a whole number >= {minimum}, got {value!r}")
    if int(value) < minimum:
        raise InvalidInputError(f"{name} must be >= {minimum}, got {int(value)}")
    return int(value)


def _gate(measure: str, limit: float) -> Thresholds | None:
    """The command line's gate for the measure (``--max-highest-risk`` ...), if it has one."""
    field = MEASURES[measure].gate
    if field is None:
        return None
    kwargs: dict[str, Any] = {field: limit}
    return Thresholds(**kwargs)


def _check_limit(measure: str, value: Any) -> float:
    """``max_value`` for a measure: a share in [0, 1] (and what the gate flag accepts)."""
    limit = _check_share(value, "max_value")
    if limit == 0.0 and MEASURES[measure].gate in {"max_highest_risk", "max_average_risk"}:
        raise InvalidInputError(
            f"max_value for {measure} must be in (0, 1], got 0.0: no table has that risk at 0"
        )
    _gate(measure, limit)
    return limit


def _check_target(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInputError(f"target must be a number between 0 and 100, got {value!r}")
    v = float(value)
    if not (0.0 <= v <= 100.0):
        raise InvalidInputError(f"target must be between 0 and 100, got {v!r}")
    return v


def _check_population(values: Mapping[str, Any]) -> None:
    given = [
        k for k in ("population_size", "sampling_fraction", "region") if values.get(k) is not None
    ]
    if len(given) > 1:
        raise InvalidInputError(
            f"give at most one of population_size, sampling_fraction, region (got {given})"
        )
    size = values.get("population_size")
    if size is not None and not _is_parameter(size):
        _check_whole(size, "population_size", 1)
    fraction = values.get("sampling_fraction")
    if fraction is not None and not _is_parameter(fraction):
        validate_threshold(fraction, "sampling_fraction")
    region = values.get("region")
    if region is not None and str(region).lower() not in REGIONS:
        raise InvalidInputError(
            f"unknown region {region!r}; known regions: {', '.join(sorted(REGIONS))}"
        )


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _fmt(value: Any) -> str:
    if not _is_number(value):
        return str(value)
    return str(int(value)) if float(value).is_integer() else f"{value:.6g}"


def _lookup(document: Mapping[str, Any], path: tuple[str, ...]) -> float | None:
    node: Any = document
    for part in path:
        if not isinstance(node, Mapping) or node.get(part) is None:
            return None
        node = node[part]
    return float(node)


def _qis_field(cls: Any, value: Any) -> list[str]:
    return _check_qis(value)


def _max_subset_size_field(cls: Any, value: Any) -> Any:
    return None if value is None else _check_whole(value, "max_subset_size", 1)


def _rank_attributes_field(cls: Any, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"rank_attributes must be true or false, got {value!r}")
    return value


def _check_ranking(values: Mapping[str, Any]) -> None:
    """``max_subset_size`` sizes the QI ranking: without the ranking it is a mistake.

    As ``reident assess --max-subset-size S --no-ranking`` is an error.
    """
    if not values.get("rank_attributes", True) and values.get("max_subset_size") is not None:
        raise ValueError("max_subset_size sizes the QI ranking, which rank_attributes=False skips")


# The validators of fields several expectations share (pydantic reuses one function).
_QIS_VALIDATOR = pydantic.validator("quasi_identifiers", pre=True, allow_reuse=True)(_qis_field)
_MAX_SUBSET_SIZE_VALIDATOR = pydantic.validator("max_subset_size", pre=True, allow_reuse=True)(
    _max_subset_size_field
)
_RANK_ATTRIBUTES_VALIDATOR = pydantic.validator("rank_attributes", pre=True, allow_reuse=True)(
    _rank_attributes_field
)


# ------------------------------------------------------------------------------- rendering
def _qi_template(qis: Any, params: dict[str, Any]) -> str:
    if not isinstance(qis, list | tuple) or not qis:
        return "(no quasi-identifiers given)"
    for i, q in enumerate(qis):
        params[f"qi_{i}"] = q
    return ", ".join(f"$qi_{i}" for i in range(len(qis)))


def _legacy_prescriptive(
    template: str, params: dict[str, Any], runtime_configuration: dict[str, Any] | None
) -> list[RenderedStringTemplateContent]:
    styling = runtime_configuration.get("styling", {}) if runtime_configuration else {}
    return [
        RenderedStringTemplateContent(
            content_block_type="string_template",
            string_template={"template": template, "params": params, "styling": styling},
        )
    ]


def _atomic_template(
    renderer_configuration: RendererConfiguration[Any], template: str, params: dict[str, Any]
) -> RendererConfiguration[Any]:
    for name, value in params.items():
        renderer_configuration.add_param(name=name, value=value)
    renderer_configuration.template_str = template
    return renderer_configuration


def _observed_summary(result: Any) -> str:
    """One line for the "observed value" column of Data Docs (the full JSON is in the result)."""
    if result is None:
        return "--"
    body = getattr(result, "result", None) or {}
    details = body.get("details") if isinstance(body, Mapping) else None
    if not isinstance(details, Mapping) or "summary" not in details:
        return "--"
    return str(details["summary"])


def _atomic_observed(result: Any, configuration: Any, runtime_configuration: Any) -> Any:
    renderer_configuration: RendererConfiguration[Any] = RendererConfiguration(
        configuration=configuration, result=result, runtime_configuration=runtime_configuration
    )
    renderer_configuration.add_param(name="observed_value", value=_observed_summary(result))
    value_obj = renderedAtomicValueSchema.load(
        {
            "template": "$observed_value",
            "params": renderer_configuration.params.dict(),
            "schema": {"type": "com.superconductive.rendered.string"},
        }
    )
    return RenderedAtomicContent(
        name=AtomicDiagnosticRendererType.OBSERVED_VALUE,
        value=value_obj,
        value_type="StringValueType",
    )


def _kwargs_of(configuration: Any) -> dict[str, Any]:
    if configuration is None:
        return {}
    kwargs = getattr(configuration, "kwargs", None)
    if kwargs is None and isinstance(configuration, Mapping):
        kwargs = configuration.get("kwargs")
    return dict(kwargs or {})


def _schema_extra(
    schema: dict[str, Any], model: type[BatchExpectation], short_description: str
) -> None:
    """GE's JSON schema of an expectation, with its Data Docs metadata."""
    BatchExpectation.Config.schema_extra(schema, model)
    schema["properties"]["metadata"]["properties"].update(
        {
            "short_description": {
                "title": "Short Description",
                "type": "string",
                "const": short_description,
            },
            "supported_data_sources": {
                "title": "Supported Data Sources",
                "type": "array",
                "const": _SUPPORTED_DATA_SOURCES,
            },
        }
    )


class _ReidentExpectation(BatchExpectation):
    """Shared plumbing: renderers that read naturally; subclasses supply the sentence."""

    library_metadata: ClassVar[dict[str, str | list[str] | bool]] = {
        "maturity": "experimental",
        "tags": ["privacy", "re-identification", "table expectation"],
        "contributors": ["reident-airflow"],
        "requirements": ["reident-airflow"],
        "has_full_test_suite": True,
        "manually_reviewed_code": True,
    }

    @classmethod
    def _sentence(cls, kwargs: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        raise NotImplementedError

    def _evaluate(self, counted: Any) -> dict[str, Any]:
        raise NotImplementedError

    def _metric(self) -> str:
        """The one metric this expectation reads, of its ``metric_dependencies``."""
        return self.metric_dependencies[0]

    def get_validation_dependencies(
        self,
        execution_engine: Any = None,
        runtime_configuration: dict[str, Any] | None = None,
    ) -> Any:
        """GE's dependencies on ``metric_dependencies``, less those this configuration skips.

        An expectation that can be answered from the class-size histogram lists it beside the
        class table; only the one :meth:`_metric` names is computed.
        """
        dependencies = super().get_validation_dependencies(
            execution_engine=execution_engine, runtime_configuration=runtime_configuration
        )
        for name in self.metric_dependencies:
            if name != self._metric():
                dependencies.remove_metric_configuration(name)
        return dependencies

    def _validate(
        self,
        metrics: dict[str, Any],
        runtime_configuration: dict[str, Any] | None = None,
        execution_engine: Any = None,
    ) -> dict[str, Any]:
        """The outcome of the expectation's one metric (see :meth:`_metric`)."""
        return self._outcome(metrics[self._metric()])

    def _outcome(self, value: Any) -> dict[str, Any]:
        """Evaluate the metric's value; an input error becomes a failed result, not a crash.

        The result then carries GE's ``exception_info`` with the engine's message (names and
        counts only) and no stack trace: there is nothing to debug, only a parameter to fix.
        """
        kind = "InvalidInputError"
        if isinstance(value, MetricError):
            message = value.message
        else:
            try:
                return self._evaluate(value)
            except InvalidInputError as exc:
                message, kind = str(exc), type(exc).__name__
        return {
            "success": False,
            "result": {
                "observed_value": None,
                "details": {"error": message, "summary": f"not evaluated: {message}"},
            },
            "exception_info": {
                "raised_exception": True,
                "exception_message": message,
                # Data Docs shows this under "Show exception traceback": one line, no stack
                "exception_traceback": f"{kind}: {message}",
            },
        }

    @classmethod
    def _rendered_sentence(cls, kwargs: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        template, params = cls._sentence(kwargs)
        return template, {k: _fmt(v) if _is_number(v) else v for k, v in params.items()}

    @classmethod
    def _prescriptive_template(
        cls, renderer_configuration: RendererConfiguration[Any]
    ) -> RendererConfiguration[Any]:
        template, params = cls._rendered_sentence(renderer_configuration.kwargs)
        return _atomic_template(renderer_configuration, template, params)

    @classmethod
    @renderer(renderer_type=LegacyRendererType.PRESCRIPTIVE)
    @render_suite_parameter_string
    def _prescriptive_renderer(
        cls,
        configuration: Any = None,
        result: Any = None,
        runtime_configuration: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> list[RenderedStringTemplateContent]:
        if configuration is None and result is not None:
            configuration = getattr(result, "expectation_config", None)
        template, params = cls._rendered_sentence(_kwargs_of(configuration))
        return _legacy_prescriptive(template, params, runtime_configuration)

    @classmethod
    @renderer(renderer_type=LegacyDiagnosticRendererType.OBSERVED_VALUE)
    def _diagnostic_observed_value_renderer(
        cls,
        configuration: Any = None,
        result: Any = None,
        runtime_configuration: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> str:
        return _observed_summary(result)

    @classmethod
    @renderer(renderer_type=AtomicDiagnosticRendererType.OBSERVED_VALUE)
    def _atomic_diagnostic_observed_value(
        cls,
        configuration: Any = None,
        result: Any = None,
        runtime_configuration: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> Any:
        return _atomic_observed(result, configuration, runtime_configuration)


# ------------------------------------------------------------------------------- risk below
class ExpectTableReidentificationRiskToBeBelow(_ReidentExpectation):
    """Expect a re-identification risk measure of the table to be at most ``max_value``.

    The table's records are grouped on ``quasi_identifiers`` where the data is (a DataFrame, or
    one ``GROUP BY`` in the database) and assessed by reident-airflow's engine. ``measure`` is
    one of :data:`MEASURES`, named by its path in the assessment JSON:
    ``prosecutor.highest_risk``, ``prosecutor.average_risk``, ``prosecutor.records_at_risk``,
    ``journalist.*`` (the same three), ``marketer.risk``, ``uniqueness.sample_uniques``, and
    ``uniqueness.population.{dankar,pitman,zayatz,snb}.fraction`` (population uniques, which
    need ``population_size``, ``sampling_fraction`` or ``region``).

    Without a population register the journalist's measures equal the prosecutor's
    (``basis: "sample"``, as ARX). A measure the engine reports as unavailable (``null``, e.g.
    a Pitman fit that does not converge) fails the expectation: it shows nothing.

    ``result.observed_value`` is the ``reident.assessment/v1`` JSON that ``reident assess``
    prints for the same options; ``result.details`` holds the measure, its value and the limit.
    With ``rank_attributes=False`` (``--no-ranking``) only the class-size histogram is counted.
    """

    quasi_identifiers: list[str] = pydantic.Field(
        description="The columns an attacker may know (quasi-identifiers), as in the header."
    )
    measure: str = pydantic.Field(
        default="prosecutor.highest_risk",
        description="The risk measure to gate: a dotted path into the assessment JSON.",
    )
    max_value: float | _Param = pydantic.Field(
        description="The highest acceptable value of the measure (a share in [0, 1])."
    )
    record_threshold: float | _Param = pydantic.Field(
        default=DEFAULT_RECORD_THRESHOLD,
        description="A record is at risk when its risk exceeds this threshold.",
    )
    population_size: int | _Param | None = pydantic.Field(
        default=None, description="Size N of the population the table was drawn from."
    )
    sampling_fraction: float | _Param | None = pydantic.Field(
        default=None, description="n / N, instead of population_size."
    )
    region: str | None = pydantic.Field(
        default=None, description="A population preset (e.g. 'usa'), instead of the size."
    )
    max_subset_size: int | None = pydantic.Field(
        default=None, description="Largest QI subset ranked in the 'attributes' section."
    )
    rank_attributes: bool = pydantic.Field(
        default=True,
        description="Rank the QI subsets in the 'attributes' section (which columns re-identify)."
        " With false the verdict needs only the class-size histogram.",
    )

    metric_dependencies = (HISTOGRAM_METRIC, CLASS_TABLE_METRIC)
    success_keys = (
        "quasi_identifiers",
        "measure",
        "max_value",
        "record_threshold",
        "population_size",
        "sampling_fraction",
        "region",
        "max_subset_size",
        "rank_attributes",
    )
    args_keys = ("quasi_identifiers", "measure", "max_value")

    class Config:
        title = "Expect table re-identification risk to be below"

        @staticmethod
        def schema_extra(
            schema: dict[str, Any],
            model: type[ExpectTableReidentificationRiskToBeBelow],
        ) -> None:
            _schema_extra(
                schema, model, "Expect a re-identification risk measure to be at most a limit."
            )

    _validate_qis = _QIS_VALIDATOR

    @pydantic.validator("measure", pre=True)
    def _validate_measure(cls, value: Any) -> str:
        return _check_measure(value)

    @pydantic.validator("max_value", pre=True)
    def _validate_max_value(cls, value: Any) -> Any:
        return value if value is None or _is_parameter(value) else _check_share(value, "max_value")

    @pydantic.validator("record_threshold", pre=True)
    def _validate_record_threshold(cls, value: Any) -> Any:
        return value if _is_parameter(value) else validate_threshold(value, "record_threshold")

    @pydantic.validator("population_size", pre=True)
    def _validate_population_size(cls, value: Any) -> Any:
        if value is None or _is_parameter(value):
            return value
        return _check_whole(value, "population_size", 1)

    @pydantic.validator("sampling_fraction", pre=True)
    def _validate_sampling_fraction(cls, value: Any) -> Any:
        if value is None or _is_parameter(value):
            return value
        return validate_threshold(value, "sampling_fraction")

    _validate_max_subset_size = _MAX_SUBSET_SIZE_VALIDATOR
    _validate_rank_attributes = _RANK_ATTRIBUTES_VALIDATOR

    @pydantic.root_validator(skip_on_failure=True)
    def _validate_together(cls, values: dict[str, Any]) -> dict[str, Any]:
        _check_ranking(values)
        measure = values["measure"]
        limit = values.get("max_value")
        if limit is None:
            raise ValueError("max_value is required: the highest acceptable value of the measure")
        if not _is_parameter(limit):
            values["max_value"] = _check_limit(measure, limit)
        _check_population(values)
        if MEASURES[measure].needs_population and not any(
            values.get(k) is not None for k in ("population_size", "sampling_fraction", "region")
        ):
            raise ValueError(
                f"measure {measure!r} estimates population uniques: give population_size, "
                "sampling_fraction or region"
            )
        return values

    @classmethod
    def _sentence(cls, kwargs: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        params: dict[str, Any] = {}
        measure = str(kwargs.get("measure", "prosecutor.highest_risk"))
        known = MEASURES.get(measure)
        label = known.label if known is not None else "risk measure $measure"
        if known is None:
            params["measure"] = measure
        params["max_value"] = kwargs.get("max_value")
        qis = _qi_template(kwargs.get("quasi_identifiers"), params)
        sentence = f"{label} on quasi-identifiers {qis} must be at most $max_value"
        template = sentence[:1].upper() + sentence[1:]
        if measure.endswith("records_at_risk"):
            params["record_threshold"] = kwargs.get("record_threshold", DEFAULT_RECORD_THRESHOLD)
            template += " (a record is at risk when its risk exceeds $record_threshold)"
        for key, words in (
            ("population_size", "a population of $population_size"),
            ("sampling_fraction", "a sampling fraction of $sampling_fraction"),
            ("region", "the population of region $region"),
        ):
            if kwargs.get(key) is not None:
                params[key] = kwargs[key]
                template += f", assuming {words}"
        return template + ".", params

    def _metric(self) -> str:
        # every measure is a function of the class sizes: only the ranking needs the classes
        return CLASS_TABLE_METRIC if self.rank_attributes else HISTOGRAM_METRIC

    def _evaluate(self, counted: ClassTable | ClassSizes) -> dict[str, Any]:
        measure = MEASURES[self.measure]
        limit = _check_limit(self.measure, self.max_value)
        _check_population(self.__dict__)
        assessment = assess(
            counted,
            record_threshold=validate_threshold(
                self.record_threshold,  # type: ignore[arg-type]  # suite parameters resolved
                "record_threshold",
            ),
            population_size=self.population_size,  # type: ignore[arg-type]
            sampling_fraction=self.sampling_fraction,  # type: ignore[arg-type]
            region=self.region,
            thresholds=_gate(self.measure, limit),
            attributes=self.rank_attributes,
            max_subset_size=self.max_subset_size,
        )
        document = assessment.to_dict()
        value = _lookup(document, measure.path)
        success = value is not None and value <= limit
        shown = "unavailable" if value is None else _fmt(value)
        return {
            "success": success,
            "result": {
                "observed_value": document,
                "details": {
                    "measure": self.measure,
                    "value": value,
                    "limit": limit,
                    "summary": f"{self.measure} = {shown} (limit: at most {_fmt(limit)})",
                },
            },
        }


# -------------------------------------------------------------------------------- k-anonymous
class ExpectTableToBeKAnonymous(_ReidentExpectation):
    """Expect the table to be k-anonymous on its quasi-identifiers.

    Every combination of ``quasi_identifiers`` values that occurs in the table must be shared by
    at least ``k`` records (Sweeney 2002); equivalently the highest prosecutor risk is at most
    ``1/k``. Missing values form a group of their own; records suppressed in every QI (``*``)
    are left out, as ARX does. ``result.observed_value`` is what ``reident assess --min-k K``
    prints; with ``rank_attributes=False`` (``--no-ranking``) only the class-size histogram is
    counted.
    """

    quasi_identifiers: list[str] = pydantic.Field(
        description="The columns an attacker may know (quasi-identifiers), as in the header."
    )
    k: int | _Param = pydantic.Field(
        description="The smallest acceptable number of records sharing a QI combination."
    )
    max_subset_size: int | None = pydantic.Field(
        default=None, description="Largest QI subset ranked in the 'attributes' section."
    )
    rank_attributes: bool = pydantic.Field(
        default=True,
        description="Rank the QI subsets in the 'attributes' section (which columns re-identify)."
        " With false the verdict needs only the class-size histogram.",
    )

    metric_dependencies = (HISTOGRAM_METRIC, CLASS_TABLE_METRIC)
    success_keys = ("quasi_identifiers", "k", "max_subset_size", "rank_attributes")
    args_keys = ("quasi_identifiers", "k")

    class Config:
        title = "Expect table to be k-anonymous"

        @staticmethod
        def schema_extra(
            schema: dict[str, Any],
            model: type[ExpectTableToBeKAnonymous],
        ) -> None:
            _schema_extra(
                schema, model, "Expect every quasi-identifier combination to occur k times."
            )

    _validate_qis = _QIS_VALIDATOR

    @pydantic.validator("k", pre=True)
    def _validate_k(cls, value: Any) -> Any:
        return value if _is_parameter(value) else _check_whole(value, "k", 1)

    _validate_max_subset_size = _MAX_SUBSET_SIZE_VALIDATOR
    _validate_rank_attributes = _RANK_ATTRIBUTES_VALIDATOR

    @pydantic.root_validator(skip_on_failure=True)
    def _validate_together(cls, values: dict[str, Any]) -> dict[str, Any]:
        _check_ranking(values)
        return values

    @classmethod
    def _sentence(cls, kwargs: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        params: dict[str, Any] = {"k": kwargs.get("k")}
        qis = _qi_template(kwargs.get("quasi_identifiers"), params)
        template = (
            f"Must be k-anonymous for k = $k on quasi-identifiers {qis}: every combination of "
            "their values must be shared by at least $k records."
        )
        return template, params

    def _metric(self) -> str:
        # k is the smallest class size: only the ranking needs the classes themselves
        return CLASS_TABLE_METRIC if self.rank_attributes else HISTOGRAM_METRIC

    def _evaluate(self, counted: ClassTable | ClassSizes) -> dict[str, Any]:
        k = _check_whole(self.k, "k", 1)
        assessment = assess(
            counted,
            thresholds=Thresholds(min_k=k),
            attributes=self.rank_attributes,
            max_subset_size=self.max_subset_size,
        )
        document = assessment.to_dict()
        return {
            "success": assessment.k >= k,
            "result": {
                "observed_value": document,
                "details": {
                    "measure": "k",
                    "value": assessment.k,
                    "limit": k,
                    "summary": f"k = {assessment.k} (required: at least {k})",
                },
            },
        }


# ------------------------------------------------------------------------------ l-diverse
#: The l-diversity measures ``ExpectTableToBeLDiverse`` can require, and how they read.
L_DIVERSITY_MEASURES: Mapping[str, str] = {
    "distinct": "distinct values",
    "entropy": "entropy l-diversity",
    "recursive": "recursive (c, l)-diversity",
}


def _check_l(value: Any, measure: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidInputError(f"l must be a number >= 1, got {value!r}")
    if value < 1:
        raise InvalidInputError(f"l must be >= 1, got {value!r}")
    if measure != "entropy" and not float(value).is_integer():
        raise InvalidInputError(
            f"l for {measure} l-diversity must be a whole number, got {value!r}"
        )
    return float(value)


def _check_sensitive(value: Any, qis: Any) -> list[str]:
    if isinstance(value, str) or not isinstance(value, list | tuple) or not value:
        raise ValueError("sensitive_columns must be a non-empty list of column names")
    names = [str(v) for v in value]
    if any(not n.strip() for n in names) or len(set(names)) < len(names):
        raise ValueError("sensitive_columns must name each column once, none empty")
    shared = [n for n in names if isinstance(qis, list | tuple) and n in qis]
    if shared:
        raise ValueError(
            f"sensitive column {shared[0]!r} is also a quasi-identifier: l-diversity measures "
            "what a class discloses about a column the attacker does not know"
        )
    return names


class ExpectTableToBeLDiverse(_ReidentExpectation):
    """Expect every class to be l-diverse in each sensitive column (metrics.md §7).

    A class whose records all share one diagnosis discloses it to anyone who knows a person is
    in the class, however large the class (seed 003): k-anonymity does not see that. For each
    of ``sensitive_columns`` and each class of ``quasi_identifiers``, ``measure`` is
    ``"distinct"`` (number of distinct values, a missing value counting as one), ``"entropy"``
    (``exp`` of the entropy of the values) or ``"recursive"`` (recursive (c, l)-diversity with
    ``c``); the expectation holds when the smallest over classes is at least ``l`` for every
    column. The values are counted where the data is (one ``GROUP BY`` per column in a
    database); only their counts leave it. ``result.observed_value`` is what
    ``reident assess --sensitive ... --recursive-c C`` prints (with ``--min-l L`` for
    ``distinct``).
    """

    quasi_identifiers: list[str] = pydantic.Field(
        description="The columns an attacker may know (quasi-identifiers), as in the header."
    )
    sensitive_columns: list[str] = pydantic.Field(
        description="The columns whose values a class must not disclose."
    )
    l: float | _Param = pydantic.Field(  # noqa: E741 - the l of l-diversity
        description="The smallest acceptable l (number of well-represented values)."
    )
    measure: str = pydantic.Field(
        default="distinct", description="distinct, entropy or recursive l-diversity."
    )
    c: float | _Param = pydantic.Field(
        default=DEFAULT_RECURSIVE_C, description="c of recursive (c, l)-diversity."
    )
    max_subset_size: int | None = pydantic.Field(
        default=None, description="Largest QI subset ranked in the 'attributes' section."
    )
    rank_attributes: bool = pydantic.Field(
        default=True,
        description="Rank the QI subsets in the 'attributes' section (which columns re-identify).",
    )

    metric_dependencies = (SENSITIVE_COUNTS_METRIC,)
    success_keys = (
        "quasi_identifiers",
        "sensitive_columns",
        "l",
        "measure",
        "c",
        "max_subset_size",
        "rank_attributes",
    )
    args_keys = ("quasi_identifiers", "sensitive_columns", "l")

    class Config:
        title = "Expect table to be l-diverse"

        @staticmethod
        def schema_extra(
            schema: dict[str, Any],
            model: type[ExpectTableToBeLDiverse],
        ) -> None:
            _schema_extra(
                schema, model, "Expect every group to hold l values of each sensitive column."
            )

    _validate_qis = _QIS_VALIDATOR

    @pydantic.validator("sensitive_columns", pre=True)
    def _validate_sensitive(cls, value: Any, values: dict[str, Any]) -> list[str]:
        return _check_sensitive(value, values.get("quasi_identifiers"))

    @pydantic.validator("measure", pre=True)
    def _validate_measure(cls, value: Any) -> str:
        if value not in L_DIVERSITY_MEASURES:
            raise ValueError(
                f"unknown measure {value!r}; choose one of: "
                f"{', '.join(repr(m) for m in L_DIVERSITY_MEASURES)}"
            )
        return str(value)

    @pydantic.validator("c", pre=True)
    def _validate_c(cls, value: Any) -> Any:
        return value if _is_parameter(value) else validate_recursive_c(value)

    _validate_max_subset_size = _MAX_SUBSET_SIZE_VALIDATOR
    _validate_rank_attributes = _RANK_ATTRIBUTES_VALIDATOR

    @pydantic.root_validator(skip_on_failure=True)
    def _validate_together(cls, values: dict[str, Any]) -> dict[str, Any]:
        _check_ranking(values)
        limit = values.get("l")
        if limit is None:
            raise ValueError("l is required: the smallest acceptable l")
        if not _is_parameter(limit):
            values["l"] = _check_l(limit, values["measure"])
        return values

    @classmethod
    def _sentence(cls, kwargs: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        params: dict[str, Any] = {"l": kwargs.get("l")}
        qis = _qi_template(kwargs.get("quasi_identifiers"), params)
        columns = kwargs.get("sensitive_columns") or []
        for i, c in enumerate(columns):
            params[f"sensitive_{i}"] = c
        sensitive = ", ".join(f"$sensitive_{i}" for i in range(len(columns))) or "(none given)"
        measure = str(kwargs.get("measure", "distinct"))
        if measure == "recursive":
            params["c"] = kwargs.get("c", DEFAULT_RECURSIVE_C)
            what = "must be recursive ($c, $l)-diverse"
        elif measure == "entropy":
            what = "must have entropy l-diversity of at least $l"
        else:
            what = "must hold at least $l distinct values"
        template = (
            f"Every group of records sharing quasi-identifiers {qis} {what} in each of {sensitive}."
        )
        return template, params

    def _evaluate(self, counted: ClassAggregates) -> dict[str, Any]:
        limit = _check_l(self.l, self.measure)
        c = validate_recursive_c(self.c)
        gate = None
        if self.measure == "distinct":
            gate = Thresholds(min_l=int(limit))
        assessment = assess(
            counted.table,
            sensitive=counted.sensitive,
            recursive_c=c,
            thresholds=gate,
            attributes=self.rank_attributes,
            max_subset_size=self.max_subset_size,
        )
        document = assessment.to_dict()
        values = {
            column: document["l_diversity"][column][self.measure]
            for column in self.sensitive_columns
        }
        failing = [column for column, value in values.items() if value < limit]
        lowest = min(values, key=lambda column: values[column])
        summary = (
            f"{self.measure} l = {_fmt(values[lowest])} for {lowest!r} "
            f"(required: at least {_fmt(limit)} in every column)"
        )
        return {
            "success": not failing,
            "result": {
                "observed_value": document,
                "details": {
                    "measure": f"l_diversity.{self.measure}",
                    "value": values[lowest],
                    "values": values,
                    "limit": limit,
                    "below_limit": failing,
                    "summary": summary,
                },
            },
        }


# ------------------------------------------------------------------------- direct match above
class ExpectTableDirectMatchProtectionToBeAbove(_ReidentExpectation):
    """Expect Column Direct Match Protection of the table to be at least ``target``.

    The batch is the released ("avatar") table; ``original_table`` is the table it was made
    from, holding the same individuals (metrics.md §8). For each column the protection is
    ``100 * (1 - m_c * u_c / n^2)`` (``m_c`` values released unchanged, ``u_c`` distinct
    released values); the table's protection is the lowest column's.

    ``original_table`` is, on a database, a table of the same database (``original_schema``
    optional), and rows are aligned on ``key`` (required there: tables have no row order);
    the counting runs in SQL. On pandas it is the path of a CSV (``sep``) or Parquet file, and
    rows are aligned by position unless ``key`` is given. ``result.observed_value`` is the
    ``reident.direct_match/v1`` JSON.
    """

    original_table: str = pydantic.Field(
        description="The original table: a table of the same database, or (pandas) a file path."
    )
    original_schema: str | None = pydantic.Field(
        default=None, description="Schema of the original table (databases)."
    )
    key: str | None = pydantic.Field(
        default=None, description="A column of both tables identifying each record."
    )
    columns: list[str] | None = pydantic.Field(
        default=None, description="Columns to score (default: every column of both tables)."
    )
    target: float | _Param = pydantic.Field(
        default=50.0, description="The lowest acceptable protection, in percent (0-100)."
    )
    sep: str = pydantic.Field(default=",", description="CSV separator of original_table.")

    metric_dependencies = (DIRECT_MATCH_METRIC,)
    success_keys = ("original_table", "original_schema", "key", "columns", "target", "sep")
    args_keys = ("original_table", "target")

    class Config:
        title = "Expect table direct match protection to be above"

        @staticmethod
        def schema_extra(
            schema: dict[str, Any],
            model: type[ExpectTableDirectMatchProtectionToBeAbove],
        ) -> None:
            _schema_extra(
                schema, model, "Expect column direct match protection to be at least a target."
            )

    @pydantic.validator("original_table", pre=True)
    def _validate_original(cls, value: Any) -> str:
        if not isinstance(value, str) or not value.strip():
            raise ValueError("original_table must name the original table (or file)")
        return value

    @pydantic.validator("columns", pre=True)
    def _validate_columns(cls, value: Any) -> Any:
        return None if value is None else _check_qis(value)

    @pydantic.validator("target", pre=True)
    def _validate_target(cls, value: Any) -> Any:
        return value if _is_parameter(value) else _check_target(value)

    @pydantic.validator("sep", pre=True)
    def _validate_sep(cls, value: Any) -> str:
        if not isinstance(value, str) or len(value) != 1:
            raise ValueError(f"sep must be a single character, got {value!r}")
        return value

    @classmethod
    def _sentence(cls, kwargs: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        params: dict[str, Any] = {
            "original_table": kwargs.get("original_table"),
            "target": kwargs.get("target", 50.0),
        }
        template = (
            "Column direct match protection against $original_table must be at least $target "
            "for every column"
        )
        columns = kwargs.get("columns")
        if columns:
            for i, c in enumerate(columns):
                params[f"column_{i}"] = c
            template += " of " + ", ".join(f"$column_{i}" for i in range(len(columns)))
        if kwargs.get("key"):
            params["key"] = kwargs["key"]
            template += " (records matched on $key)"
        return template + ".", params

    def _evaluate(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        from reident_airflow.engine.direct_match import direct_match_from_counts

        target = _check_target(self.target)
        result = direct_match_from_counts(
            payload["records"],
            {str(c): (int(m), int(u)) for c, m, u in payload["counts"]},
            target=target,
            key=payload.get("key"),
            only_in_original=payload.get("only_in_original", ()),
            only_in_avatar=payload.get("only_in_avatar", ()),
        )
        lowest = result.columns[0]
        summary = (
            f"protection = {_fmt(result.protection)} (lowest column: {lowest.column!r}; "
            f"target: at least {_fmt(target)})"
        )
        return {
            "success": result.passed,
            "result": {
                "observed_value": result.to_dict(),
                "details": {
                    "measure": "protection",
                    "value": result.protection,
                    "limit": target,
                    "below_target": list(result.below_target),
                    "summary": summary,
                },
            },
        }


_TYPES: tuple[type[BatchExpectation], ...] = (
    ExpectTableReidentificationRiskToBeBelow,
    ExpectTableToBeKAnonymous,
    ExpectTableToBeLDiverse,
    ExpectTableDirectMatchProtectionToBeAbove,
)
