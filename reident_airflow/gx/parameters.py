"""The parameters of the reident expectations: their vocabularies and every check on them.

Each expectation declares which check applies to which of its fields
(``field_checks``) and which rules relate several fields (``cross_checks``); the checks
themselves live here, once, whichever expectations share a parameter. They run twice:

- when the expectation is built (a pydantic validator of
  :class:`~reident_airflow.gx.expectations.base.ReidentExpectation` dispatches to them), so a
  misspelt measure or ``k < 1`` fails at once, as GE 1.x's own expectations do; a suite
  parameter (``{"$PARAMETER": ...}``) is left for later;
- when the expectation is evaluated, on the resolved values, where a failure becomes a failed
  validation result carrying the message (:class:`InvalidInputError`).

Messages name the parameter and the value at fault, never a record's value. The risk
measures an expectation can gate (:data:`MEASURES`: their paths in the assessment JSON, their
labels and the thresholds that gate them) are the engine's catalogue
(:mod:`reident_airflow.engine.catalogue`).
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from reident_airflow.engine import (
    REGIONS,
    InvalidInputError,
    Thresholds,
    validate_quasi_identifiers,
    validate_recursive_c,
    validate_threshold,
)
from reident_airflow.engine.catalogue import MEASURES, THRESHOLDS, Measure

__all__ = [
    "L_DIVERSITY_MEASURES",
    "MEASURES",
    "POPULATION_KEYS",
    "CrossCheck",
    "FieldCheck",
    "Measure",
    "SuiteParameter",
    "check_columns",
    "check_direct_match_columns",
    "check_k",
    "check_l",
    "check_l_measure",
    "check_l_required",
    "check_limit",
    "check_max_subset_size",
    "check_max_value",
    "check_max_value_for_measure",
    "check_measure",
    "check_needs_population",
    "check_original_table",
    "check_population",
    "check_population_size",
    "check_quasi_identifiers",
    "check_rank_attributes",
    "check_ranking",
    "check_record_threshold",
    "check_recursive_c",
    "check_sampling_fraction",
    "check_sensitive_columns",
    "check_sep",
    "check_share",
    "check_target",
    "check_target_field",
    "check_whole",
    "gate",
    "is_parameter",
    "metric_quasi_identifiers",
    "metric_sensitive_columns",
    "unless_parameter",
]

#: A suite parameter (``{"$PARAMETER": "name"}``), GE's ``_Param``.
SuiteParameter = dict[str, Any]

#: A field check: the value given and the fields already validated, to the value kept.
FieldCheck = Callable[[Any, Mapping[str, Any]], Any]
#: A rule over several fields, run once every field is valid; raises when it is broken.
CrossCheck = Callable[[dict[str, Any]], None]


#: The l-diversity measures ``ExpectTableToBeLDiverse`` can require, and how they read.
L_DIVERSITY_MEASURES: Mapping[str, str] = {
    "distinct": "distinct values",
    "entropy": "entropy l-diversity",
    "recursive": "recursive (c, l)-diversity",
}

#: The ways to describe the population a table was drawn from; at most one is given.
POPULATION_KEYS = ("population_size", "sampling_fraction", "region")


def is_parameter(value: Any) -> bool:
    """A suite parameter (``{"$PARAMETER": ...}``): checked when validating, once resolved."""
    return isinstance(value, dict)


def unless_parameter(check: Callable[[Any], Any], *, optional: bool = False) -> FieldCheck:
    """A field check that leaves suite parameters (and, if ``optional``, ``None``) for later.

    A suite parameter is resolved only when the expectation is evaluated, where ``check`` runs
    again on its value.
    """

    def field_check(value: Any, values: Mapping[str, Any]) -> Any:
        if is_parameter(value) or (optional and value is None):
            return value
        return check(value)

    return field_check


# ------------------------------------------------------------------------------ plain values
def check_share(value: Any, name: str) -> float:
    """A share: a number in ``[0, 1]``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInputError(f"{name} must be a number in [0, 1], got {value!r}")
    v = float(value)
    if not (0.0 <= v <= 1.0):  # also rejects NaN
        raise InvalidInputError(f"{name} must be in [0, 1], got {v!r}")
    return v


def check_whole(value: Any, name: str, minimum: int) -> int:
    """A whole number (an integral float is accepted) of at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInputError(f"{name} must be a whole number >= {minimum}, got {value!r}")
    if not (math.isfinite(value) and float(value).is_integer()):
        raise InvalidInputError(f"{name} must be a whole number >= {minimum}, got {value!r}")
    if int(value) < minimum:
        raise InvalidInputError(f"{name} must be >= {minimum}, got {int(value)}")
    return int(value)


def check_columns(
    value: Any, what: str = "quasi_identifiers", *, error: type[ValueError] = InvalidInputError
) -> list[str]:
    """A list of column names: not empty, none blank, none twice.

    ``error`` is raised for a value that is not a list: an :class:`InvalidInputError` where a
    metric reports it, a plain ``ValueError`` where pydantic does (its error type stays
    ``value_error``).
    """
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise error(f"{what} must be a list of column names")
    names = [str(v) for v in value]
    validate_quasi_identifiers(names, names)  # non-empty, no blanks, no duplicates
    return names


def metric_quasi_identifiers(kwargs: Mapping[str, Any]) -> tuple[str, ...]:
    """A metric's ``quasi_identifiers`` value key, checked as the expectations check it."""
    return tuple(check_columns(kwargs.get("quasi_identifiers")))


def metric_sensitive_columns(kwargs: Mapping[str, Any]) -> tuple[str, ...]:
    """A metric's ``sensitive_columns`` value key: a non-empty list of names."""
    value = kwargs.get("sensitive_columns")
    if isinstance(value, str) or not isinstance(value, Sequence) or not value:
        raise InvalidInputError("sensitive_columns must be a list of column names")
    return tuple(str(v) for v in value)


def check_quasi_identifiers(value: Any, values: Mapping[str, Any]) -> list[str]:
    """``quasi_identifiers``: the columns an attacker may know."""
    return check_columns(value, error=ValueError)


def check_direct_match_columns(value: Any, values: Mapping[str, Any]) -> list[str] | None:
    """``columns`` of direct match protection: ``None`` scores every shared column."""
    return None if value is None else check_columns(value, error=ValueError)


def check_max_subset_size(value: Any, values: Mapping[str, Any]) -> int | None:
    """``max_subset_size``: the largest QI subset ranked, ``None`` for every size."""
    return None if value is None else check_whole(value, "max_subset_size", 1)


def check_rank_attributes(value: Any, values: Mapping[str, Any]) -> bool:
    """``rank_attributes``: a boolean, not a truthy string."""
    if not isinstance(value, bool):
        raise ValueError(f"rank_attributes must be true or false, got {value!r}")
    return value


def check_measure(value: Any, values: Mapping[str, Any]) -> str:
    """A risk measure of :data:`MEASURES`; a near miss is named in the message."""
    if value in MEASURES:
        return str(value)
    close = difflib.get_close_matches(str(value), list(MEASURES), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise ValueError(
        f"unknown measure {value!r}{hint}; choose one of: {', '.join(repr(m) for m in MEASURES)}"
    )


def check_target(value: Any) -> float:
    """Direct match protection's ``target``: a percentage."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInputError(f"target must be a number between 0 and 100, got {value!r}")
    v = float(value)
    if not (0.0 <= v <= 100.0):
        raise InvalidInputError(f"target must be between 0 and 100, got {v!r}")
    return v


#: Field checks of the numbers a suite parameter may stand for.
check_max_value = unless_parameter(lambda v: check_share(v, "max_value"), optional=True)
check_record_threshold = unless_parameter(lambda v: validate_threshold(v, "record_threshold"))
check_population_size = unless_parameter(
    lambda v: check_whole(v, "population_size", 1), optional=True
)
check_sampling_fraction = unless_parameter(
    lambda v: validate_threshold(v, "sampling_fraction"), optional=True
)
check_k = unless_parameter(lambda v: check_whole(v, "k", 1))
check_recursive_c = unless_parameter(validate_recursive_c)
check_target_field = unless_parameter(check_target)


def check_original_table(value: Any, values: Mapping[str, Any]) -> str:
    """``original_table``: a table name or a file path, not blank."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError("original_table must name the original table (or file)")
    return value


def check_sep(value: Any, values: Mapping[str, Any]) -> str:
    """``sep``: the one-character CSV separator."""
    if not isinstance(value, str) or len(value) != 1:
        raise ValueError(f"sep must be a single character, got {value!r}")
    return value


def check_l_measure(value: Any, values: Mapping[str, Any]) -> str:
    """An l-diversity measure of :data:`L_DIVERSITY_MEASURES`."""
    if value not in L_DIVERSITY_MEASURES:
        raise ValueError(
            f"unknown measure {value!r}; choose one of: "
            f"{', '.join(repr(m) for m in L_DIVERSITY_MEASURES)}"
        )
    return str(value)


def check_sensitive_columns(value: Any, values: Mapping[str, Any]) -> list[str]:
    """``sensitive``: named once each, none of them a quasi-identifier."""
    if isinstance(value, str) or not isinstance(value, list | tuple) or not value:
        raise ValueError("sensitive must be a non-empty list of column names")
    names = [str(v) for v in value]
    if any(not n.strip() for n in names) or len(set(names)) < len(names):
        raise ValueError("sensitive must name each column once, none empty")
    qis = values.get("quasi_identifiers")
    shared = [n for n in names if isinstance(qis, list | tuple) and n in qis]
    if shared:
        raise ValueError(
            f"sensitive column {shared[0]!r} is also a quasi-identifier: l-diversity measures "
            "what a class discloses about a column the attacker does not know"
        )
    return names


def check_l(value: Any, measure: str) -> float:
    """The smallest acceptable l (``min_l``): at least 1, whole unless the measure is entropy."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidInputError(f"min_l must be a number >= 1, got {value!r}")
    if value < 1:
        raise InvalidInputError(f"min_l must be >= 1, got {value!r}")
    if measure != "entropy" and not float(value).is_integer():
        raise InvalidInputError(
            f"min_l for {measure} l-diversity must be a whole number, got {value!r}"
        )
    return float(value)


# ------------------------------------------------------------------------------- cross checks
def gate(measure: str, limit: float) -> Thresholds | None:
    """The command line's gate for the measure (``--max-highest-risk`` ...), if it has one."""
    field = MEASURES[measure].gate
    if field is None:
        return None
    kwargs: dict[str, Any] = {field: limit}
    return Thresholds(**kwargs)


def check_limit(measure: str, value: Any) -> float:
    """``max_value`` for a measure: a share in [0, 1] (and what the gate flag accepts)."""
    limit = check_share(value, "max_value")
    gated = MEASURES[measure].gate
    if limit == 0.0 and gated is not None and not THRESHOLDS[gated].zero_allowed:
        raise InvalidInputError(
            f"max_value for {measure} must be in (0, 1], got 0.0: no table has that risk at 0"
        )
    gate(measure, limit)
    return limit


def check_ranking(values: dict[str, Any]) -> None:
    """``max_subset_size`` sizes the QI ranking: without the ranking it is a mistake.

    As ``reident assess --max-subset-size S --no-ranking`` is an error.
    """
    if not values.get("rank_attributes", True) and values.get("max_subset_size") is not None:
        raise ValueError("max_subset_size sizes the QI ranking, which rank_attributes=False skips")


def check_population(values: Mapping[str, Any]) -> None:
    """At most one population description, each valid (suite parameters are left alone)."""
    given = [k for k in POPULATION_KEYS if values.get(k) is not None]
    if len(given) > 1:
        raise InvalidInputError(
            f"give at most one of population_size, sampling_fraction, region (got {given})"
        )
    size = values.get("population_size")
    if size is not None and not is_parameter(size):
        check_whole(size, "population_size", 1)
    fraction = values.get("sampling_fraction")
    if fraction is not None and not is_parameter(fraction):
        validate_threshold(fraction, "sampling_fraction")
    region = values.get("region")
    if region is not None and str(region).lower() not in REGIONS:
        raise InvalidInputError(
            f"unknown region {region!r}; known regions: {', '.join(sorted(REGIONS))}"
        )


def check_max_value_for_measure(values: dict[str, Any]) -> None:
    """``max_value`` is required and must be a limit the measure's gate accepts."""
    limit = values.get("max_value")
    if limit is None:
        raise ValueError("max_value is required: the highest acceptable value of the measure")
    if not is_parameter(limit):
        values["max_value"] = check_limit(values["measure"], limit)


def check_needs_population(values: dict[str, Any]) -> None:
    """A population measure needs a population: its size, the sampling fraction or a region."""
    measure = values["measure"]
    if MEASURES[measure].needs_population and not any(
        values.get(k) is not None for k in POPULATION_KEYS
    ):
        raise ValueError(
            f"measure {measure!r} estimates population uniques: give population_size, "
            "sampling_fraction or region"
        )


def check_l_required(values: dict[str, Any]) -> None:
    """``min_l`` is required and must suit the l-diversity measure."""
    limit = values.get("min_l")
    if limit is None:
        raise ValueError("min_l is required: the smallest acceptable l")
    if not is_parameter(limit):
        values["min_l"] = check_l(limit, values["measure"])
