"""What the reident expectations share: parameter checking, the outcome, the renderers.

:class:`ReidentExpectation` is abstract, so GE registers only its subclasses;
:class:`QuasiIdentifierExpectation` adds the fields of an expectation over the classes of
quasi-identifiers, and :class:`ClassSizeExpectation` the choice of the metric for a verdict
that needs only the class sizes. A subclass declares only its own fields (each one a success
key), which check of :mod:`reident_airflow.gx.parameters` applies to each (``field_checks``),
the rules over several fields (``cross_checks``) and its schema's ``title``: what it inherits
is added by :meth:`ReidentExpectation.__init_subclass__`. It writes its Data Docs sentence
once (:meth:`ReidentExpectation._sentence`; an expectation over quasi-identifiers writes only
its requirement, :meth:`QuasiIdentifierExpectation._requirement`) and turns its metric's
value into a verdict (:meth:`ReidentExpectation._evaluate`, with :func:`verdict`: the scalar
as ``observed_value``, the command line's document under ``details.assessment``).

Rendering follows GE 1.24's current API: the sentence is an atomic prescriptive template
(:meth:`~great_expectations.expectations.expectation.Expectation._prescriptive_template`) and
the observed value an atomic diagnostic. GE 1.24's HTML Data Docs still dispatch to the
string-template hooks (``renderer.prescriptive`` in ``ExpectationSuitePageRenderer``,
``renderer.diagnostic.observed_value`` in ``ValidationResultsPageRenderer``); without them a
page would show ``expect_...(**kwargs)`` and the whole JSON document. Those two hooks are
therefore kept, as translations of the atomic content, never a second wording.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping
from string import Template
from typing import TYPE_CHECKING, Any, ClassVar, cast

from great_expectations.compatibility import pydantic
from great_expectations.core.expectation_suite import ExpectationSuite
from great_expectations.expectations.expectation import (
    BatchExpectation,
    Expectation,
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

from reident_airflow.engine import (
    Assessment,
    ClassSizes,
    Distributions,
    InvalidInputError,
    assess,
    options_for,
)
from reident_airflow.gx.guard import attach_guard
from reident_airflow.gx.metrics import CLASS_DISTRIBUTIONS_METRIC, HISTOGRAM_METRIC, MetricError
from reident_airflow.gx.parameters import (
    CrossCheck,
    FieldCheck,
    check_max_subset_size,
    check_quasi_identifiers,
    check_rank_attributes,
    check_ranking,
)

if TYPE_CHECKING:
    from great_expectations.core.expectation_validation_result import (
        ExpectationValidationResult,
    )
    from great_expectations.expectations.expectation_configuration import (
        ExpectationConfiguration,
    )

__all__ = [
    "SUPPORTED_DATA_SOURCES",
    "ClassSizeExpectation",
    "QuasiIdentifierExpectation",
    "ReidentExpectation",
    "format_number",
    "is_number",
    "preset_words",
    "qi_template",
    "template_list",
    "verdict",
]

#: The data sources the expectations are tested on (GE's schema metadata).
SUPPORTED_DATA_SOURCES = ["Pandas", "Spark", "SQLite", "PostgreSQL", "MySQL"]


def is_number(value: Any) -> bool:
    """An int or a float, not a bool."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def format_number(value: Any) -> str:
    """A number as Data Docs show it: whole numbers without ``.0``, others to 6 digits."""
    if not is_number(value):
        return str(value)
    return str(int(value)) if float(value).is_integer() else f"{value:.6g}"


def template_list(prefix: str, names: Any, params: dict[str, Any]) -> str:
    """``$prefix_0, $prefix_1, ...`` for a sentence, each name added to ``params``.

    Empty (``""``) when no names are given.
    """
    if not isinstance(names, list | tuple):
        return ""
    for i, name in enumerate(names):
        params[f"{prefix}_{i}"] = name
    return ", ".join(f"${prefix}_{i}" for i in range(len(names)))


def qi_template(qis: Any, params: dict[str, Any]) -> str:
    """The quasi-identifiers of a sentence (``$qi_0, $qi_1``), added to ``params``."""
    return template_list("qi", qis, params) or "(no quasi-identifiers given)"


def preset_words(kwargs: Mapping[str, Any], params: dict[str, Any]) -> str:
    """`` (policy preset $preset)`` for a sentence whose expectation names a preset, else
    ``""``; the name is added to ``params``."""
    if not kwargs.get("preset"):
        return ""
    params["preset"] = kwargs["preset"]
    return " (policy preset $preset)"


def verdict(
    success: bool,
    observed: float | None,
    assessment: Mapping[str, Any],
    *,
    measure: str,
    limit: float,
    summary: str,
    **extra: Any,
) -> dict[str, Any]:
    """GE's result of an evaluated expectation, shaped as GE's own expectations shape theirs.

    ``observed_value`` is the one number the verdict compares with ``limit`` (``None`` when the
    engine reports it unavailable); ``details`` holds ``measure``, ``limit``, a one-line
    ``summary`` (what the alert shows), whatever else the expectation reports (``extra``) and,
    under ``assessment``, the whole JSON document the command line prints.
    """
    details = {"measure": measure, "limit": limit, "summary": summary}
    details.update({k: v for k, v in extra.items() if k != "preset" or v is not None})
    details["assessment"] = dict(assessment)
    return {"success": success, "result": {"observed_value": observed, "details": details}}


def _failure(message: str, kind: str) -> dict[str, Any]:
    """A failed result for an input only the data revealed as wrong (no stack trace)."""
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


def _observed_params(result: Any) -> tuple[str, dict[str, str]]:
    """The "observed value" of Data Docs: the scalar with its measure, as a template.

    ``$measure = $observed_value`` (``k = 3``, ``protection = 87.5``), followed by the columns
    that failed it when the expectation has columns to name (``(failing columns: ssn)``);
    ``unavailable`` for a measure the engine could not compute; the reason for a result that
    was not evaluated.
    """
    body = getattr(result, "result", None) if result is not None else None
    if not isinstance(body, Mapping) or not body:
        return "$observed_value", {"observed_value": "--"}
    found = body.get("details")
    details: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    if "error" in details:
        return "not evaluated: $error", {"error": str(details["error"])}
    value = body.get("observed_value")
    shown = "unavailable" if value is None else format_number(value)
    if "measure" not in details:
        return "$observed_value", {"observed_value": shown}
    params = {"measure": str(details["measure"]), "observed_value": shown}
    template = "$measure = $observed_value"
    columns = _failing_columns(details)
    if columns:
        template += " (failing columns: $failing_columns)"
        params["failing_columns"] = ", ".join(columns)
    return template, params


#: Where a result's details name the columns that failed it: the identifier scan's failing
#: columns, the sensitive columns below the l limit, the columns below the direct-match target.
_FAILING_KEYS = ("failing", "below_limit", "below_target")


def _failing_columns(details: Mapping[str, Any]) -> list[str]:
    """The names of the columns that failed the expectation (names only, never a value)."""
    for key in _FAILING_KEYS:
        found = details.get(key)
        if isinstance(found, list | tuple) and found:
            return [str(column) for column in found]
    return []


class ReidentExpectation(BatchExpectation, abc.ABC):
    """The base of the reident expectations: checks, outcome and rendering, written once."""

    library_metadata: ClassVar[dict[str, str | list[str] | bool]] = {
        "maturity": "experimental",
        "tags": ["privacy", "re-identification", "table expectation"],
        "contributors": ["reident-airflow"],
        "requirements": ["reident-airflow"],
        "has_full_test_suite": True,
        "manually_reviewed_code": True,
    }
    #: The check of each field, by name (fields without one are GE's own).
    field_checks: ClassVar[Mapping[str, FieldCheck]] = {}
    #: Rules over several fields, run in order once every field is valid.
    cross_checks: ClassVar[tuple[CrossCheck, ...]] = ()
    #: The title and short description of GE's JSON schema of the expectation.
    title: ClassVar[str] = ""
    short_description: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Extend what a subclass inherits by what it declares, so it declares only its own.

        Every field a reident class declares decides success (GE's ``success_keys``), after
        those of its base; its ``field_checks`` are added to the inherited ones and its
        ``cross_checks`` run after the inherited ones.
        """
        super().__init_subclass__(**kwargs)
        own, base = cls.__dict__, cast("type[ReidentExpectation]", cls.__mro__[1])
        fields = [name for name in own.get("__annotations__", {}) if name in cls.__fields__]
        cls.success_keys = (*base.success_keys, *fields)
        cls.field_checks = {**base.field_checks, **own.get("field_checks", {})}
        cls.cross_checks = (*base.cross_checks, *own.get("cross_checks", ()))

    @pydantic.validator("*", pre=True)
    def _check_field(cls, value: Any, values: dict[str, Any], field: Any) -> Any:
        check = cls.field_checks.get(field.name)
        return value if check is None else check(value, values)

    @pydantic.root_validator(skip_on_failure=True)
    def _check_together(cls, values: dict[str, Any]) -> dict[str, Any]:
        for check in cls.cross_checks:
            check(values)
        return values

    class Config:
        @staticmethod
        def schema_extra(schema: dict[str, Any], model: type[ReidentExpectation]) -> None:
            """GE's JSON schema of an expectation, with its Data Docs metadata."""
            BatchExpectation.Config.schema_extra(schema, model)
            schema["title"] = model.title or schema["title"]
            schema["properties"]["metadata"]["properties"].update(
                {
                    "short_description": {
                        "title": "Short Description",
                        "type": "string",
                        "const": model.short_description,
                    },
                    "supported_data_sources": {
                        "title": "Supported Data Sources",
                        "type": "array",
                        "const": SUPPORTED_DATA_SOURCES,
                    },
                }
            )

    def register_save_callback(self, save_callback: Callable[[Expectation], Expectation]) -> None:
        """GE binds this expectation to a suite: the suite gets the guard too (fail closed).

        GE calls this on every way into a suite (``add_expectation``, the suite's constructor,
        ``add_expectation_configuration``, loading from a store) with the suite's own bound
        method, so the suite is ``save_callback.__self__``; it then holds the guard
        (:func:`~reident_airflow.gx.guard.attach_guard`): saved, it cannot validate in a
        process that does not know the reident expectations.
        """
        super().register_save_callback(save_callback)
        suite = getattr(save_callback, "__self__", None)
        if isinstance(suite, ExpectationSuite):
            attach_guard(suite, self, save_callback)

    # ------------------------------------------------------------------ what subclasses write
    @classmethod
    @abc.abstractmethod
    def _sentence(cls, kwargs: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        """The Data Docs sentence: a ``$name`` template and its parameters."""

    @abc.abstractmethod
    def _evaluate(self, counted: Any) -> dict[str, Any]:
        """The verdict (see :func:`verdict`) on the metric's value, parameters resolved."""

    def _metric(self) -> str:
        """The one metric this expectation reads, of its ``metric_dependencies``."""
        return str(self.metric_dependencies[0])

    # ----------------------------------------------------------------------------- validation
    def get_validation_dependencies(
        self,
        execution_engine: Any = None,
        runtime_configuration: dict[str, Any] | None = None,
    ) -> Any:
        """GE's dependencies on ``metric_dependencies``, less those this configuration skips.

        An expectation that can be answered from the class-size histogram lists it beside the
        class distributions; only the one :meth:`_metric` names is computed.
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
        if isinstance(value, MetricError):
            return _failure(value.message, "InvalidInputError")
        try:
            return self._evaluate(value)
        except InvalidInputError as exc:
            return _failure(str(exc), type(exc).__name__)

    # ------------------------------------------------------------------------------ rendering
    @classmethod
    def _rendered_sentence(cls, kwargs: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        """:meth:`_sentence` with its numbers formatted for reading (``90``, ``1e-06``)."""
        template, params = cls._sentence(kwargs)
        return template, {k: format_number(v) if is_number(v) else v for k, v in params.items()}

    @classmethod
    def _prescriptive_template(
        cls, renderer_configuration: RendererConfiguration[Any]
    ) -> RendererConfiguration[Any]:
        """The sentence as GE's atomic prescriptive summary."""
        template, params = cls._rendered_sentence(renderer_configuration.kwargs)
        for name, value in params.items():
            renderer_configuration.add_param(name=name, value=value)
        renderer_configuration.template_str = template
        return renderer_configuration

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
        """The atomic sentence as the string template GE 1.24's HTML Data Docs ask for."""
        rendered = cls._prescriptive_template(
            RendererConfiguration(
                configuration=configuration,
                result=result,
                runtime_configuration=runtime_configuration,
            )
        )
        params = {
            name: None if param is None else param["value"]
            for name, param in rendered.params.dict().items()
        }
        styling = runtime_configuration.get("styling", {}) if runtime_configuration else {}
        return [
            RenderedStringTemplateContent(
                content_block_type="string_template",
                string_template={
                    "template": rendered.template_str,
                    "params": params,
                    "styling": styling,
                },
            )
        ]

    @classmethod
    @renderer(renderer_type=AtomicDiagnosticRendererType.OBSERVED_VALUE)
    def _atomic_diagnostic_observed_value(
        cls,
        configuration: Any = None,
        result: Any = None,
        runtime_configuration: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> RenderedAtomicContent:
        """The observed value: the scalar the verdict compares, named by its measure."""
        template, params = _observed_params(result)
        renderer_configuration: RendererConfiguration[Any] = RendererConfiguration(
            configuration=configuration, result=result, runtime_configuration=runtime_configuration
        )
        for name, value in params.items():
            renderer_configuration.add_param(name=name, value=value)
        value_obj = renderedAtomicValueSchema.load(
            {
                "template": template,
                "params": renderer_configuration.params.dict(),
                "schema": {"type": "com.superconductive.rendered.string"},
            }
        )
        return RenderedAtomicContent(
            name=AtomicDiagnosticRendererType.OBSERVED_VALUE,
            value=value_obj,
            value_type="StringValueType",
        )

    @classmethod
    @renderer(renderer_type=LegacyDiagnosticRendererType.OBSERVED_VALUE)
    def _diagnostic_observed_value_renderer(
        cls,
        configuration: ExpectationConfiguration | None = None,
        result: ExpectationValidationResult | None = None,
        runtime_configuration: dict[Any, Any] | None = None,
        **kwargs: Any,
    ) -> str:
        """The atomic observed value, as the text GE 1.24's HTML pages ask for."""
        template, params = _observed_params(result)
        return Template(template).substitute(params)


class QuasiIdentifierExpectation(ReidentExpectation):
    """An expectation over the classes of ``quasi_identifiers``, ranking the QI subsets.

    The ranking fills the ``attributes`` section of the assessment JSON, as ``reident assess``
    does; ``rank_attributes=False`` skips it (``--no-ranking``), and then ``max_subset_size``,
    which sizes it, is a mistake.
    """

    quasi_identifiers: list[str] = pydantic.Field(
        description="The columns an attacker may know (quasi-identifiers), as in the header."
    )
    max_subset_size: int | None = pydantic.Field(
        default=None,
        description="Largest QI subset ranked in the 'attributes' section (at least the number "
        "of QIs: every subset); by default each single column, each subset with one QI left "
        "out, and the full set.",
    )
    rank_attributes: bool = pydantic.Field(
        default=True,
        description="Rank the QI subsets in the 'attributes' section (which columns re-identify).",
    )

    field_checks: ClassVar[Mapping[str, FieldCheck]] = {
        "quasi_identifiers": check_quasi_identifiers,
        "max_subset_size": check_max_subset_size,
        "rank_attributes": check_rank_attributes,
    }
    cross_checks: ClassVar[tuple[CrossCheck, ...]] = (check_ranking,)

    @classmethod
    def _sentence(cls, kwargs: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        params: dict[str, Any] = {}
        qis = qi_template(kwargs.get("quasi_identifiers"), params)
        return cls._requirement(kwargs, qis, params), params

    @classmethod
    @abc.abstractmethod
    def _requirement(cls, kwargs: Mapping[str, Any], qis: str, params: dict[str, Any]) -> str:
        """The sentence's template, on the quasi-identifiers ``qis`` (a template already in
        ``params``); the requirement's own parameters are added to ``params``."""

    def _assess(
        self,
        counted: ClassSizes | Distributions,
        **options: Any,
    ) -> Assessment:
        """:func:`~reident_airflow.engine.assess` of what the metric counted (whatever the
        execution engine) under the expectation's
        :class:`~reident_airflow.engine.AssessmentOptions`: the counted QIs and sensitive
        columns, its QI ranking and ``options``, the measure's own fields (``thresholds``,
        ``record_threshold``, the population...), checked where the options are built."""
        if options.get("thresholds") is None:
            options.pop("thresholds", None)
        built = options_for(
            counted,
            rank_attributes=self.rank_attributes,
            max_subset_size=self.max_subset_size,
            **options,
        )
        return assess(counted, built)


class ClassSizeExpectation(QuasiIdentifierExpectation):
    """An expectation whose verdict is a function of the class sizes alone.

    It lists both the class-size histogram and the class distributions; it reads the histogram
    unless the QI ranking, which needs the subsets' histograms too, is asked for.
    """

    metric_dependencies = (HISTOGRAM_METRIC, CLASS_DISTRIBUTIONS_METRIC)

    def _metric(self) -> str:
        return CLASS_DISTRIBUTIONS_METRIC if self.rank_attributes else HISTOGRAM_METRIC
