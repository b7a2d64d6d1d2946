"""Great Expectations expectations for re-identification risk, one module each.

Six batch expectations, each a thin adapter: a metric counts where the data is
(:mod:`reident_airflow.gx.metrics`) and the engine does all the arithmetic. As GE's own
expectations do, a result's ``observed_value`` is the one number the verdict checks, and
``details`` holds ``measure`` (its name), ``limit``, a one-line ``summary`` and, under
``assessment``, the JSON document the command line prints (``docs/contract.md``).

``ExpectTableReidentificationRiskToBeBelow`` (:mod:`.risk`)
    One risk measure of :data:`MEASURES` (a path into the ``reident.assessment/v1`` JSON) is at
    most ``max_value``; ``observed_value`` is that measure (``None`` when unavailable).
    ``details.assessment`` is ``reident assess --qi ... --json -`` with the same record
    threshold and population options, plus the matching gate flag where the command line has
    one (``--max-highest-risk``, ``--max-average-risk``, ``--max-records-at-risk``).
``ExpectTableToBeKAnonymous`` (:mod:`.k_anonymity`)
    Every class has at least ``k`` records; ``observed_value`` is the table's k and
    ``details.assessment`` is ``reident assess --min-k K``.
``ExpectTableDirectMatchProtectionToBeAbove`` (:mod:`.direct_match`)
    Column Direct Match Protection of the batch (the released table) against ``original_table``
    is at least ``target``; ``observed_value`` is the protection (the lowest column's, in
    percent) and ``details.assessment`` the ``reident.direct_match/v1`` JSON.
``ExpectTableToBeLDiverse`` (:mod:`.l_diversity`)
    Every class holds at least ``min_l`` distinct values of each ``sensitive`` column (or has
    entropy or recursive (``recursive_c``, l)-diversity of at least ``min_l``: ``measure``;
    the operator's argument names); ``observed_value`` is the
    lowest l over the sensitive columns (``details.values``: each column's) and
    ``details.assessment`` is ``reident assess --sensitive COLS --recursive-c C`` (with
    ``--min-l L`` for ``distinct``).
``ExpectTableToHoldNoDirectIdentifiers`` (:mod:`.identifiers`)
    No column of the table, declared or not, is found an identifier or an undeclared
    quasi-identifier by the identifier scan (``docs/identifier-scan.md``); ``observed_value``
    is the number of failing columns, ``details.failing`` and ``details.flagged`` name them
    and ``details.assessment`` is the ``reident.identifier_scan/v1`` JSON.
``ExpectTableDifferencingRiskToBeBelow`` (:mod:`.differencing`)
    The arrivals and departures of the table against ``previous_release``, the release it
    replaces, meet the limits given (``min_arrival_k``, ``max_arrival_risk``,
    ``min_departure_k``, ``max_departure_risk``: the operators' argument names);
    ``observed_value`` is the number of limits breached, ``details.breaches`` lists them and
    ``details.assessment`` is the ``reident.differencing/v1`` JSON (``reident assess
    --previous``'s ``since_last_release``).

The three assessing expectations rank the QI subsets (the ``attributes`` section) as
``reident assess`` does, from the ``reident.class_distributions`` metric (the subsets'
histograms; the l-diversity expectation also reads its sensitive columns' value-count
profiles there), one type on every execution engine. ``rank_attributes=False`` skips the
ranking, as ``--no-ranking`` does (and as the operator's ``rank_attributes=False``): the risk
and k-anonymity expectations then read only the class-size histogram metric, which is all their
verdicts need.

Parameters that can be checked without data (a misspelt measure, ``k < 1``, a limit out of
range) fail when the expectation is built, as GE 1.x's own expectations do (a pydantic
``ValidationError`` with a readable message); the checks are those of
:mod:`reident_airflow.gx.parameters`. Problems only the data can reveal (an unknown column, an
empty table) give a failed validation result whose ``exception_info`` carries the engine's
message. Messages and results carry aggregates only, never a record's values.
"""

from __future__ import annotations

from reident_airflow.gx.expectations.base import ReidentExpectation
from reident_airflow.gx.expectations.differencing import ExpectTableDifferencingRiskToBeBelow
from reident_airflow.gx.expectations.direct_match import ExpectTableDirectMatchProtectionToBeAbove
from reident_airflow.gx.expectations.identifiers import ExpectTableToHoldNoDirectIdentifiers
from reident_airflow.gx.expectations.k_anonymity import ExpectTableToBeKAnonymous
from reident_airflow.gx.expectations.l_diversity import ExpectTableToBeLDiverse
from reident_airflow.gx.expectations.risk import ExpectTableReidentificationRiskToBeBelow
from reident_airflow.gx.parameters import L_DIVERSITY_MEASURES, MEASURES, Measure

__all__ = [
    "EXPECTATIONS",
    "EXPECTATION_TYPES",
    "L_DIVERSITY_MEASURES",
    "MEASURES",
    "ExpectTableDifferencingRiskToBeBelow",
    "ExpectTableDirectMatchProtectionToBeAbove",
    "ExpectTableReidentificationRiskToBeBelow",
    "ExpectTableToBeKAnonymous",
    "ExpectTableToBeLDiverse",
    "ExpectTableToHoldNoDirectIdentifiers",
    "Measure",
    "ReidentExpectation",
]

#: The expectations this package adds to GE's registry, in the order they are listed.
EXPECTATIONS: tuple[type[ReidentExpectation], ...] = (
    ExpectTableReidentificationRiskToBeBelow,
    ExpectTableToBeKAnonymous,
    ExpectTableDirectMatchProtectionToBeAbove,
    ExpectTableToBeLDiverse,
    ExpectTableToHoldNoDirectIdentifiers,
    ExpectTableDifferencingRiskToBeBelow,
)
#: Their expectation types, as saved suites name them.
EXPECTATION_TYPES: tuple[str, ...] = tuple(cls.expectation_type for cls in EXPECTATIONS)
