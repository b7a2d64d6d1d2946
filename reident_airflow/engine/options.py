"""The options of one assessment, declared once: fields, defaults and the rules between them.

:class:`AssessmentOptions` is what an assessment is asked to do: which columns are the
quasi-identifiers, the release gate (:class:`Thresholds`), the record threshold, the
population the table was drawn from, the weight and sensitive columns and which optional
measures to compute. It is checked when it is built -- each field on its own, then the rules
that relate fields -- so holding one proves it consistent; it is frozen and never changes.

Every adapter only converts its inputs into it:

- the command line builds it from its parsed arguments (its error messages spell the fields as
  flags: ``names`` maps each field to how the user wrote it);
- the operators and the Great Expectations expectations call :meth:`AssessmentOptions.from_mapping`
  with their parameters as given, possibly rendered by templating: ``"0.2"`` is a number,
  ``"none"`` or ``""`` leaves an option unset (its default applies), ``"a,b"`` is a list of
  columns, ``"false"`` a flag that is off.

:func:`~reident_airflow.engine.assessment.assess` then takes the options beside what the
sources counted (class table, weight sums, sensitive value counts), and reports each limit the
measures cross as a :class:`Breach`. What each limit reads and which way it points is
:data:`~reident_airflow.engine.catalogue.THRESHOLDS`. The module imports no Airflow, Great
Expectations, pandas nor SQLAlchemy; its defaults are those of
:mod:`reident_airflow.engine.defaults`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from reident_airflow.engine.catalogue import (
    COMPARED_THRESHOLDS,
    GAINED_QIS,
    THRESHOLDS,
    threshold_of,
)
from reident_airflow.engine.defaults import (
    DEFAULT_RECORD_THRESHOLD,
    DEFAULT_RECURSIVE_C,
    REGIONS,
)
from reident_airflow.engine.diversity import validate_recursive_c
from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.engine.numbers import (
    as_number,
    as_whole_number,
    check_suppression_limit,
    is_unset,
    parse_suppression_limit,
)
from reident_airflow.engine.presets import find_preset
from reident_airflow.engine.records import FieldRecord
from reident_airflow.engine.sample import validate_threshold

if TYPE_CHECKING:
    from reident_airflow.engine.differencing import ReleaseDifference
    from reident_airflow.engine.diversity import LDiversity
    from reident_airflow.engine.individual_risk import IndividualRisk
    from reident_airflow.engine.sample import SampleRisk

__all__ = [
    "PARAMETER_NAMES",
    "PYTHON_NAMES",
    "AssessmentOptions",
    "Breach",
    "OptionError",
    "Thresholds",
    "parse_flag",
]

#: How a rule's message names each field for a caller of the Python API (fields not listed
#: are named as themselves).
PYTHON_NAMES: Mapping[str, str] = {
    "max_global_risk": "a maximum global risk",
    "min_l": "a minimum l",
    "warn_max_global_risk": "a warning level of the maximum global risk",
    "warn_min_l": "a warning level of the minimum l",
    "previous_release": "a previous release",
    "weight": "the weight column",
    "sensitive": "sensitive columns",
    "rank_attributes": "rank_attributes=False",
}

#: How a rule's message names each field for an adapter whose parameters carry the fields'
#: names (operators, expectations): :meth:`AssessmentOptions.from_mapping`'s default.
PARAMETER_NAMES: Mapping[str, str] = {
    "sensitive": "sensitive columns",
    "rank_attributes": "rank_attributes=False",
}

_POPULATION_FIELDS = ("population_size", "sampling_fraction", "region")

#: The limits that are shares in ``(0, 1]``, those that are shares in ``[0, 1]``, and those
#: that are whole numbers >= 1.
_SHARE_FIELDS = tuple(t.name for t in THRESHOLDS.values() if t.share and not t.zero_allowed)
_ZERO_SHARE_FIELDS = tuple(t.name for t in THRESHOLDS.values() if t.share and t.zero_allowed)
_WHOLE_FIELDS = tuple(t.name for t in THRESHOLDS.values() if t.whole)


class _Names(dict[str, str]):
    """A field-name mapping that names a field missing from it as the field itself."""

    def __missing__(self, key: str) -> str:
        return key


class OptionError(InvalidInputError):
    """A combination of options that cannot be, named the way the adapter's user wrote them.

    The rule that raises it words the message once, as a function of how each field is
    named; an adapter that catches it re-words it for its own vocabulary with
    :meth:`spelled` (the same exception, so its traceback and cause are kept).
    """

    def __init__(self, say: Callable[[Mapping[str, str]], str]) -> None:
        self._say = say
        super().__init__(say(_Names(PYTHON_NAMES)))

    def spelled(self, names: Mapping[str, str]) -> OptionError:
        """This error, its message naming each field as ``names`` does."""
        self.args = (self._say(_Names(names)),)
        return self


# ------------------------------------------------------------------------------- the gate
@dataclass(frozen=True)
class Breach(FieldRecord):
    """One gate threshold that the table breaches (JSON: ``metric``, ``observed``, ``limit``)."""

    metric: str
    observed: float
    limit: float

    @property
    def is_minimum(self) -> bool:
        """Whether the limit is a lower bound (``k``, l-diversity) rather than an upper one."""
        threshold = threshold_of(self.metric)
        return threshold is not None and threshold.minimum

    def describe(self) -> str:
        bound = "at least" if self.is_minimum else "at most"
        return f"{self.metric} = {_fmt(self.observed)} (limit: {bound} {_fmt(self.limit)})"


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.6g}"


@dataclass(frozen=True)
class Thresholds:
    """The release gate: each limit is optional; ``None`` means "not checked".

    Risk limits are shares in ``(0, 1]`` and apply to the prosecutor model, which is never
    below the journalist's (El Emam & Dankar 2008), so a table that passes is safe for both.
    ``max_records_at_risk`` may be 0 (no record at risk). ``max_global_risk`` gates the
    expected share of re-identifications estimated from sampling weights
    (``individual_risk.global_risk_share``: needs a weight column); ``min_l`` the distinct
    l-diversity of every sensitive column (needs sensitive columns). The last four read the
    difference from the previous release (docs/metrics.md §12): ``min_arrival_k`` the fewest
    arrivals in a class, ``max_arrival_risk`` the highest risk of an arriving record (``1 /``
    that), ``min_departure_k`` and ``max_departure_risk`` the same of the departures; they
    need a previous release. Those needs are rules of :class:`AssessmentOptions`, which
    knows the columns and the previous release.
    """

    max_highest_risk: float | None = None
    max_average_risk: float | None = None
    max_records_at_risk: float | None = None
    min_k: int | None = None
    max_global_risk: float | None = None
    min_l: int | None = None
    min_arrival_k: int | None = None
    max_arrival_risk: float | None = None
    min_departure_k: int | None = None
    max_departure_risk: float | None = None

    def __post_init__(self) -> None:
        for name in _SHARE_FIELDS:
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, validate_threshold(value, name))
        for name in _ZERO_SHARE_FIELDS:
            got = getattr(self, name)
            if got is None:
                continue
            try:
                v = float(got)
            except (TypeError, ValueError):
                raise InvalidInputError(f"{name} must be a share in [0, 1], got {got!r}") from None
            if not (0.0 <= v <= 1.0):
                raise InvalidInputError(f"{name} must be in [0, 1], got {v!r}")
            object.__setattr__(self, name, v)
        for name in _WHOLE_FIELDS:
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, _whole(value, name))

    def to_dict(self) -> dict[str, Any]:
        """The limits that are set, by name (the ``thresholds`` of the assessment JSON)."""
        return {
            f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None
        }

    def check(
        self,
        prosecutor: SampleRisk,
        k: int,
        *,
        individual: IndividualRisk | None = None,
        diversity: tuple[LDiversity, ...] = (),
    ) -> tuple[Breach, ...]:
        """The limits the measures breach, in the order of the fields (``min_l``: one breach
        per sensitive column below it, in the order of ``diversity``)."""
        measured: dict[str, float] = {
            "prosecutor.highest_risk": prosecutor.highest_risk,
            "prosecutor.average_risk": prosecutor.average_risk,
            "prosecutor.records_at_risk": prosecutor.records_at_risk,
            "k": k,
        }
        if individual is not None:
            measured["individual_risk.global_risk_share"] = individual.global_risk_share
        for column in diversity:
            measured[f"l_diversity.{column.column}.distinct"] = column.distinct
        return self.crossed(measured)

    def check_difference(self, difference: ReleaseDifference) -> tuple[Breach, ...]:
        """The limits on the difference from the previous release that ``difference``
        breaches (a side where nothing moved has no risk: it breaches nothing), and, set
        or not, :data:`~reident_airflow.engine.catalogue.GAINED_QIS`: a quasi-identifier the
        previous release did not hold is new information for every record."""
        gained = len(difference.changes.gained_quasi_identifiers)
        out = (Breach(GAINED_QIS.metric, float(gained), 0.0),) if gained else ()
        measured: dict[str, float] = {}
        for side, movement in (
            ("arrivals", difference.arrivals),
            ("departures", difference.departures),
        ):
            if movement.k is not None:
                measured[f"since_last_release.{side}.k"] = movement.k
            if movement.highest_risk is not None:
                measured[f"since_last_release.{side}.highest_risk"] = movement.highest_risk
        return out + self.crossed(measured)

    def crossed(self, measured: Mapping[str, float]) -> tuple[Breach, ...]:
        """The limits the ``measured`` numbers (by metric) breach, in the order of the
        fields."""
        out: list[Breach] = []
        for threshold in THRESHOLDS.values():
            limit = getattr(self, threshold.name)
            if limit is None:
                continue
            for metric, observed in measured.items():
                if threshold_of(metric) is threshold and threshold.crossed(observed, limit):
                    out.append(Breach(metric, float(observed), float(limit)))
        return tuple(out)


# ---------------------------------------------------------------------------- the options
@dataclass(frozen=True)
class AssessmentOptions:
    """What one assessment is asked to compute and gate; checked when built.

    - ``quasi_identifiers``: the columns an attacker may know (one or more, as the adapter's
      user wrote them: the sources match them against the table's columns).
    - ``thresholds``: the release gate; ``preset``: a named gate of
      :data:`~reident_airflow.engine.presets.PRESETS` whose limits fill those ``thresholds``
      leaves unset (the limits given win, one by one); ``warn_thresholds``: a second, softer
      level of the same limits, whose breaches are warnings (the table still passes). A
      warning level must not be laxer than the failing level of the same limit.
    - ``record_threshold``: record risk above which a record counts as at risk
      (default :data:`~reident_airflow.engine.defaults.DEFAULT_RECORD_THRESHOLD`).
    - ``population_size`` / ``sampling_fraction`` / ``region`` (at most one): the population
      the table was drawn from, for the population models; ``population_table`` where a
      register of that population is read from (a table or a file, read by the adapter's
      source; unless a size is given, its records are ``N``).
    - ``previous_release``: the release this table replaces (a table or a file, read by the
      adapter's source), compared with it for the differencing risk (docs/metrics.md §12,
      ``engine.assessment.with_release_difference``).
    - ``weight``: a sampling-weight column (individual risk); ``sensitive``: sensitive
      columns (l-diversity, recursive with ``recursive_c``, default
      :data:`~reident_airflow.engine.defaults.DEFAULT_RECURSIVE_C`).
    - ``rank_attributes``: rank the QI subsets (default), up to ``max_subset_size`` columns.
    - ``suda``: SUDA2 special uniques, minimal sample uniques up to ``suda_max_msu_size``
      columns.
    - ``suppression_limit``: the suppression limit of the Datafly the user will run, for the
      advice's outlook on a breach of ``min_k`` (docs/metrics.md §10): a whole number of
      records or a fraction in ``[0, 1)`` of them, as the ``DataflyOperator`` and ``reident
      datafly`` take it; ``None`` (default) for ``k`` records, their default (Sweeney's).

    The rules between fields: ``max_global_risk`` needs ``weight``; ``min_l`` needs
    ``sensitive``, the limits on the difference from the previous release (``min_arrival_k``,
    ``max_arrival_risk``, ``min_departure_k``, ``max_departure_risk``) need
    ``previous_release`` (each at either level); a warning limit is not laxer than its failing
    one; ``max_subset_size`` needs ``rank_attributes``; ``suda_max_msu_size`` needs
    ``suda``; at most one of the population descriptions. A broken rule raises
    :class:`OptionError`, any other bad value :class:`InvalidInputError` naming the field.
    """

    quasi_identifiers: tuple[str, ...]
    thresholds: Thresholds = field(default_factory=Thresholds)
    preset: str | None = None
    warn_thresholds: Thresholds = field(default_factory=Thresholds)
    record_threshold: float = DEFAULT_RECORD_THRESHOLD
    population_size: int | None = None
    sampling_fraction: float | None = None
    region: str | None = None
    population_table: str | None = None
    previous_release: str | None = None
    weight: str | None = None
    sensitive: tuple[str, ...] = ()
    recursive_c: float = DEFAULT_RECURSIVE_C
    rank_attributes: bool = True
    max_subset_size: int | None = None
    suda: bool = False
    suda_max_msu_size: int | None = None
    suppression_limit: int | float | None = None

    def __post_init__(self) -> None:
        # values are normalised while the object is being built (tuples for lists, floats
        # for shares); once __post_init__ returns nothing changes them
        setattr_ = object.__setattr__
        setattr_(self, "quasi_identifiers", _names(self.quasi_identifiers, "quasi_identifiers"))
        setattr_(self, "sensitive", _names(self.sensitive, "sensitive", empty_ok=True))
        for name in ("thresholds", "warn_thresholds"):
            value = getattr(self, name)
            if not isinstance(value, Thresholds):
                raise InvalidInputError(f"{name} must be a Thresholds, got {type(value).__name__}")
        if self.preset is not None:
            chosen = find_preset(self.preset)
            setattr_(self, "preset", chosen.name)
            setattr_(
                self, "thresholds", Thresholds(**{**chosen.limits, **self.thresholds.to_dict()})
            )
        setattr_(
            self, "record_threshold", validate_threshold(self.record_threshold, "record_threshold")
        )
        if self.population_size is not None:
            setattr_(self, "population_size", _whole(self.population_size, "population_size"))
        if self.sampling_fraction is not None:
            fraction = validate_threshold(self.sampling_fraction, "sampling_fraction")
            setattr_(self, "sampling_fraction", fraction)
        if self.region is not None:
            _check_region(self.region)
        for name in ("population_table", "previous_release", "weight"):
            value = getattr(self, name)
            # a name of spaces is left to the source, which reports it as no column
            if value is not None and (not isinstance(value, str) or not value):
                raise InvalidInputError(f"{name} must be a name, got {value!r}")
        setattr_(self, "recursive_c", validate_recursive_c(self.recursive_c))
        for name in ("rank_attributes", "suda"):
            if not isinstance(getattr(self, name), bool):
                raise InvalidInputError(
                    f"{name} must be true or false, got {getattr(self, name)!r}"
                )
        for name in ("max_subset_size", "suda_max_msu_size"):
            value = getattr(self, name)
            if value is not None:
                setattr_(self, name, _whole(value, name))
        if self.suppression_limit is not None:
            setattr_(self, "suppression_limit", check_suppression_limit(self.suppression_limit))
        self._check_rules()

    def _check_rules(self) -> None:
        """The rules between fields, each written once (see the class docstring)."""
        for prefix, gate in (("", self.thresholds), ("warn_", self.warn_thresholds)):
            if gate.max_global_risk is not None and self.weight is None:
                raise OptionError(
                    _needs(prefix + "max_global_risk", "the individual risk", "weight")
                )
            if gate.min_l is not None and not self.sensitive:
                raise OptionError(_needs(prefix + "min_l", "l-diversity", "sensitive"))
            for name in COMPARED_THRESHOLDS:
                if getattr(gate, name) is not None and self.previous_release is None:
                    raise OptionError(
                        _needs(
                            prefix + name,
                            "the difference from the previous release",
                            "previous_release",
                        )
                    )
        _check_levels(self.thresholds, self.warn_thresholds)
        if self.max_subset_size is not None and not self.rank_attributes:
            raise OptionError(
                lambda n: (
                    f"{n['max_subset_size']} sizes the QI ranking, which "
                    f"{n['rank_attributes']} skips"
                )
            )
        if self.suda_max_msu_size is not None and not self.suda:
            raise OptionError(lambda n: f"{n['suda_max_msu_size']} applies to {n['suda']}")
        given = [name for name in _POPULATION_FIELDS if getattr(self, name) is not None]
        if len(given) > 1:
            raise OptionError(
                lambda n: (
                    "give at most one of "
                    f"{n['population_size']}, {n['sampling_fraction']}, {n['region']}; got "
                    + " and ".join(n[name] for name in given)
                )
            )

    @property
    def needs_class_table(self) -> bool:
        """Whether a measure asked for needs the class table, not only its size histogram
        (without them the verdict is computed from the histogram, counted where the data is)."""
        return bool(
            self.rank_attributes
            or self.weight
            or self.sensitive
            or self.suda
            or self.population_table
        )

    @classmethod
    def from_mapping(
        cls, values: Mapping[str, Any], *, names: Mapping[str, str] | None = None
    ) -> AssessmentOptions:
        """The options from loosely typed values, as templating or a configuration gives them.

        Keys are the field names, the gate's limits among them (``max_highest_risk``,
        ``min_k``, ...). ``None``, ``""`` and ``"none"`` (any case) leave a field unset: its
        default applies. Numbers may be strings (``"0.2"``, ``"1_000"``); whole numbers must
        be whole (``"2.0"`` is 2, ``"1.5"`` an error); column lists are lists or
        comma-separated strings (each name stripped); flags are booleans or
        ``"true"``/``"false"``/``"yes"``/``"no"``/``"1"``/``"0"``. A rule's message names
        the fields as ``names`` does (default :data:`PARAMETER_NAMES`); other messages name
        the key at fault. Raises :class:`InvalidInputError` for an unknown key or a bad value.
        """
        unknown = sorted(set(values) - set(_CONVERTERS))
        if unknown:
            known = ", ".join(sorted(_CONVERTERS))
            raise InvalidInputError(f"unknown assessment option {unknown[0]!r}; known: {known}")
        converted: dict[str, Any] = {}
        for key, value in values.items():
            if not is_unset(value):
                converted[key] = _CONVERTERS[key](value, key)
        gate = {name: converted.pop(name) for name in _GATE_FIELDS if name in converted}
        warn = {
            name: converted.pop(f"warn_{name}")
            for name in _GATE_FIELDS
            if f"warn_{name}" in converted
        }
        converted.setdefault("quasi_identifiers", ())
        try:
            return cls(
                thresholds=Thresholds(**gate), warn_thresholds=Thresholds(**warn), **converted
            )
        except OptionError as exc:
            exc.spelled(names if names is not None else PARAMETER_NAMES)
            raise


def _needs(limit: str, measure: str, needed: str) -> Callable[[Mapping[str, str]], str]:
    """The message of a limit given without the column its measure needs."""

    def say(n: Mapping[str, str]) -> str:
        return f"{n[limit]} gates {measure}: give {n[needed]}"

    return say


def _laxer(name: str, soft: float, hard: float) -> Callable[[Mapping[str, str]], str]:
    def say(n: Mapping[str, str]) -> str:
        return (
            f"{n['warn_' + name]} ({soft:g}) is laxer than {n[name]} ({hard:g}): "
            "the warning would never come before the failure"
        )

    return say


def _check_levels(fail: Thresholds, warn: Thresholds) -> None:
    """A warning limit may equal its failing limit or be stricter, never laxer: a laxer one
    could never warn before the table fails."""
    for name in _GATE_FIELDS:
        soft, hard = getattr(warn, name), getattr(fail, name)
        if soft is None or hard is None:
            continue
        if THRESHOLDS[name].crossed(soft, hard):
            raise OptionError(_laxer(name, soft, hard))


# ------------------------------------------------------------------------- field checks
def _whole(value: Any, name: str) -> int:
    """A whole number >= 1 (an integral float is accepted; a boolean is not)."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not float(value).is_integer()
    ):
        raise InvalidInputError(f"{name} must be a whole number >= 1, got {value!r}")
    if int(value) < 1:
        raise InvalidInputError(f"{name} must be >= 1, got {int(value)}")
    return int(value)


def _names(value: Any, name: str, *, empty_ok: bool = False) -> tuple[str, ...]:
    """Column names as a tuple: none blank; one or more unless ``empty_ok``."""
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise InvalidInputError(f"{name} must be a list of column names, got {value!r}")
    items = tuple(value)
    if (not items and not empty_ok) or any(not isinstance(i, str) or not i.strip() for i in items):
        raise InvalidInputError(f"{name} needs one or more column names")
    return items


def _check_region(region: Any) -> None:
    """A preset of :data:`~reident_airflow.engine.defaults.REGIONS` (any case)."""
    if not isinstance(region, str) or region.strip().lower() not in REGIONS:
        known = ", ".join(sorted(REGIONS))
        raise InvalidInputError(f"unknown region {region!r}; known regions: {known}")


# ------------------------------------------------------------------- loose-value converters
_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}


def parse_flag(value: Any, key: str) -> bool:
    """An on/off option: a boolean, or its text (``true``/``yes``/``on``/``1`` and their
    opposites, any case); :class:`InvalidInputError` naming ``key`` otherwise."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower() if isinstance(value, str | int) else None
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise InvalidInputError(f"{key} must be true or false, got {value!r}")


def _column_names(value: Any, key: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(part.strip() for part in value.split(","))
    if isinstance(value, Sequence):
        return tuple(str(part).strip() for part in value)
    raise InvalidInputError(f"{key} must be a list of column names, got {value!r}")


def _suppression_limit(value: Any, key: str) -> int | float:
    """A count of records or a fraction of them; text as a person writes it (``5``,
    ``0.01``, ``1%``: :func:`~reident_airflow.engine.numbers.parse_suppression_limit`)."""
    if isinstance(value, str):
        try:
            return parse_suppression_limit(value)
        except InvalidInputError as exc:
            raise InvalidInputError(f"{key} {exc}") from exc
    return check_suppression_limit(value)


def _name(value: Any, key: str) -> str:
    if not isinstance(value, str):
        raise InvalidInputError(f"{key} must be a name, got {value!r}")
    return value.strip()


_GATE_FIELDS = tuple(f.name for f in fields(Thresholds))

_GATE_CONVERTERS: dict[str, Callable[[Any, str], Any]] = {
    t.name: as_whole_number if t.whole else as_number for t in THRESHOLDS.values()
}

_CONVERTERS: dict[str, Callable[[Any, str], Any]] = {
    "quasi_identifiers": _column_names,
    **_GATE_CONVERTERS,
    **{f"warn_{name}": convert for name, convert in _GATE_CONVERTERS.items()},
    "preset": _name,
    "record_threshold": as_number,
    "population_size": as_whole_number,
    "sampling_fraction": as_number,
    "region": _name,
    "population_table": _name,
    "previous_release": _name,
    "weight": _name,
    "sensitive": _column_names,
    "recursive_c": as_number,
    "rank_attributes": parse_flag,
    "max_subset_size": as_whole_number,
    "suda": parse_flag,
    "suda_max_msu_size": as_whole_number,
    "suppression_limit": _suppression_limit,
}
