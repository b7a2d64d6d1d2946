"""The assessment in order, for the command line and the risk operator alike.

:func:`run_assessment` sequences, on one source opened by the caller: the counts (what the
options need, and a population register's class table beside the source) -> the engine's
:func:`~reident_airflow.engine.assessment.assess` -> the identifier scan -> the comparison
with the previous release (:func:`~reident_airflow.sources.previous_release`, counted where
the data is) -> the advice on a breach of ``min_k``
(:func:`~reident_airflow.workflows.advice.advise`) -> the input's fingerprint. The caller
parses its inputs before and presents the :class:`AssessmentRun` after (the CLI's JSON,
report and stderr lines; the operator's XCom, logs and gate); what differs between them --
how a missing previous release is taken, how a name beside the source is reached, what a
person watching is told -- is given as arguments, never decided here by testing the backend.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING

from reident_airflow.workflows.advice import AdviceFound, HierarchiesOf, advise, counted_table

if TYPE_CHECKING:
    from reident_airflow.engine.assessment import Assessment
    from reident_airflow.engine.hierarchies import Hierarchy
    from reident_airflow.engine.identifiers import IdentifierScan
    from reident_airflow.engine.options import AssessmentOptions
    from reident_airflow.sources import Source
    from reident_airflow.sources.fingerprint import InputFingerprint

__all__ = ["AssessmentRun", "Narration", "run_assessment"]


def _quiet(step: str) -> None:
    del step


@dataclass(frozen=True)
class Narration:
    """What a person watching is told of the steps: ``progress`` gets each one. ``in_place``:
    the source counts in a cluster, each step one job (Spark), so no separate reading,
    grouping, measuring or hashing step is told. ``no_fingerprint``: what to say when the
    source has nothing to fingerprint (``None``: nothing). The default tells nothing."""

    progress: Callable[[str], None] = _quiet
    in_place: bool = False
    no_fingerprint: str | None = None


@dataclass(frozen=True)
class AssessmentRun:
    """An assessment and what was added to it: the advice on a breach of ``min_k`` (``None``:
    no breach, or not asked) and the input's fingerprint (``None``: not asked, or nothing to
    fingerprint)."""

    result: Assessment
    advice: AdviceFound | None
    fingerprint: InputFingerprint | None


def _missing_is_first(name: str) -> None:
    del name


def run_assessment(
    source: Source,
    options: AssessmentOptions,
    *,
    scan: Callable[[Source], IdentifierScan | None] | None = None,
    previous_missing: Callable[[str], None] = _missing_is_first,
    advice: bool = True,
    hierarchies: HierarchiesOf | Mapping[str, Hierarchy] | None = None,
    fingerprint: bool = True,
    beside: Callable[[str], AbstractContextManager[str]] = nullcontext,
    narration: Narration = Narration(),
) -> AssessmentRun:
    """The assessment of ``source`` under ``options``, in order: counted where the data is,
    assessed, scanned (``scan``: the caller's scan of the source, ``None`` for none),
    compared with ``options.previous_release`` when one is named, advised on a breach of
    ``min_k`` (``advice``; with ``hierarchies``, at ``options.suppression_limit``) and
    fingerprinted (``fingerprint``).

    ``beside`` turns a name given for a table beside the source (the population register,
    the previous release) into one the source reads (the operator downloads an
    object-storage file); ``previous_missing`` is called with the name of a previous release
    that does not exist -- it raises to refuse it, else the run is a first release, compared
    with nothing (``since_last_release`` null). ``narration`` tells the steps."""
    from reident_airflow.engine.assessment import assess, with_identifier_scan
    from reident_airflow.engine.distributions import Distributions
    from reident_airflow.sources import population_register

    say = narration.progress
    qis = list(options.quasi_identifiers)
    if narration.in_place:
        say(f"grouping {source.label} on {len(qis)} QIs in Spark")
    else:
        say(f"reading and grouping {source.label} on {len(qis)} QIs")
    counted = source.count(options)
    if not narration.in_place and not isinstance(counted, Distributions):
        table = counted_table(counted)  # Spark's distributions hold no one class table
        say(f"grouped {table.records:,} records into {table.classes:,} classes")
    register = None
    if options.population_table:
        say("reading and grouping the population register")
        name = options.population_table
        with beside(name) as local, population_register(source, local) as population:
            register = population.class_table(qis)
    if not narration.in_place:
        say("computing the measures")
    result = assess(counted, options, population_table=register)
    if scan is not None:
        found = scan(source)
        result = result if found is None else with_identifier_scan(result, found)
    if options.previous_release:
        result = _compared(source, result, options, previous_missing, beside, say)
    advised = None
    if advice:
        advised = advise(
            source,
            result,
            counted,
            hierarchies=hierarchies,
            suppression_limit=options.suppression_limit,
            progress=say,
        )
    return AssessmentRun(result, advised, _fingerprint(source, result, fingerprint, narration))


def _compared(
    source: Source,
    result: Assessment,
    options: AssessmentOptions,
    previous_missing: Callable[[str], None],
    beside: Callable[[str], AbstractContextManager[str]],
    say: Callable[[str], None],
) -> Assessment:
    """``result`` with the difference from the previous release attached and gated: the
    release beside ``source`` (:func:`~reident_airflow.sources.previous_release`), its
    arrivals and departures counted where the data is
    (:meth:`~reident_airflow.sources.Source.release_changes`), on every column both hold."""
    from reident_airflow.engine.assessment import with_release_difference
    from reident_airflow.engine.differencing import differencing
    from reident_airflow.sources import previous_release

    name = str(options.previous_release)
    say(f"comparing {source.label} with the previous release")
    with beside(name) as local:
        old = previous_release(source, local)
        if old is None:
            previous_missing(name)
            return with_release_difference(result, None)
        with old:
            changes = source.release_changes(old, list(options.quasi_identifiers))
    return with_release_difference(result, differencing(changes, options.record_threshold))


def _fingerprint(
    source: Source, result: Assessment, asked: bool, narration: Narration
) -> InputFingerprint | None:
    """The input's fingerprint (``rows``: the records the reader counted), if ``asked``."""
    if not asked:
        return None
    if not narration.in_place:
        narration.progress(f"fingerprinting {source.label}")
    found = source.fingerprint(rows=result.records + result.excluded_records)
    if found is None and narration.no_fingerprint is not None:
        narration.progress(narration.no_fingerprint)
    return found
