"""``ReidentificationRiskOperator``: assess a staged table and gate its release."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import fields
from typing import TYPE_CHECKING, Any

from reident_airflow._compat import Context
from reident_airflow.engine.assessment import (
    Assessment,
    arrival_advice,
)
from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.engine.identifiers import (
    IdentifierScan,
    ScanOptions,
    as_spelled,
    scan_columns,
    scan_plan,
)
from reident_airflow.engine.options import AssessmentOptions, Thresholds
from reident_airflow.operators.base import StagedTableOperator, check_paths
from reident_airflow.operators.hierarchy_specs import hierarchy_files
from reident_airflow.operators.params import (
    local_name,
    parse_flag,
    parse_mapping,
)
from reident_airflow.operators.spark_table import check_spark_staged
from reident_airflow.outcomes import ReidentConfigurationError

if TYPE_CHECKING:
    import pandas as pd

    from reident_airflow.engine.hierarchies import Hierarchy
    from reident_airflow.sources import Source
    from reident_airflow.sources.fingerprint import InputFingerprint
    from reident_airflow.workflows.advice import AdviceFound

__all__ = ["GATE_FIELDS", "ReidentificationRiskOperator", "scan_lines", "scan_verdicts"]

#: The gate's limits; each has a warning level ``warn_<name>``.
GATE_FIELDS = tuple(f.name for f in fields(Thresholds))


class ReidentificationRiskOperator(StagedTableOperator):
    """Compute re-identification risk of a staged table and fail the task on a breach.

    The table is either in a database (``conn_id`` with ``table`` or ``sql``; the ``GROUP BY``
    runs in the database and only one row per equivalence class is fetched) or a CSV / Parquet
    file (``path``, local or an object-storage URL Airflow supports): the parameters of
    :class:`~reident_airflow.operators.base.StagedTableOperator` (``conn_id``, ``table``,
    ``schema``, ``sql``, ``where``, ``path``, ``sep``). ``where`` narrows a ``table`` to the
    rows of one partition
    (``"day = '{{ (logical_date | default(dag_run.run_after)) | ds }}'"``, also on manual and
    asset-triggered runs, which have no ``ds``) without a whole ``SELECT``; ``sql`` may name
    a ``.sql`` template file.

    With a ``conn_id`` of the apache-spark provider (type ``spark``: ``host`` the master, the
    extras Spark settings; or ``spark_connect``: a Spark Connect server), ``table`` (of the
    session's catalog, ``schema`` its database) or ``path`` (Parquet, any URL Spark reads) is
    read by that connection's ``SparkSession`` -- got or created, never stopped -- and grouped
    by Spark (:class:`~reident_airflow.sources.spark.SparkSource`); ``where`` is a Spark
    SQL filter of either. Not on Spark (refused before any reading): ``sql``, ``suda``,
    ``population_table``; the advice is not computed (logged), and ``input`` is the
    fingerprint of a local ``path`` only (else ``None``).

    :param quasi_identifiers: QI columns (list, or comma-separated string; templated).
    :param record_threshold: record risk above which a record counts as at risk (default
        :data:`~reident_airflow.engine.defaults.DEFAULT_RECORD_THRESHOLD`).
    :param population_size: size of the population the table was drawn from, for the
        population-uniqueness models (at most one of this, ``sampling_fraction`` and
        ``region``).
    :param sampling_fraction: the table's share of that population (n / N).
    :param region: a population of known size (see
        :data:`~reident_airflow.engine.defaults.REGIONS`).
    :param population_table: a register of that population on the same QIs (a table of the
        same connection, or a file when ``path`` is used).
    :param preset: a named gate from published guidance
        (:data:`~reident_airflow.engine.presets.PRESETS`: ``ema-0070``, ``health-canada``,
        ``el-emam-public``, ``el-emam-controlled``, ``el-emam-trusted``, ``k5``, ``k11``); its
        limits fill those left unset, a limit given wins. The assessment names it.
    :param max_highest_risk: the prosecutor's highest record risk may be at most this.
    :param max_average_risk: the prosecutor's average record risk may be at most this.
    :param max_records_at_risk: the share of records above ``record_threshold`` may be at
        most this.
    :param min_k: every class must hold at least this many records.
    :param warn_max_highest_risk: warning level of ``max_highest_risk``.
    :param warn_max_average_risk: warning level of ``max_average_risk``.
    :param warn_max_records_at_risk: warning level of ``max_records_at_risk``.
    :param warn_min_k: warning level of ``min_k``. A warning level is as strict as its failing
        level or stricter; crossing it logs one line, alerts (outcome ``"warn"``, through the
        :class:`~reident_airflow.notifiers.ReidentBreachNotifier` of
        ``on_failure_callback``) and lists it under ``warnings``: the task succeeds and the
        release goes ahead.
    :param weight: a sampling-weight column: adds the individual risk (sdcMicro's
        Benedetti–Franconi approximation, docs/metrics.md §6), which is then also the
        journalist's basis when no register is given. Weight sums are computed where the data
        is.
    :param sensitive: sensitive columns (list, or comma-separated): adds their distinct,
        entropy and recursive (``recursive_c``, default
        :data:`~reident_airflow.engine.defaults.DEFAULT_RECURSIVE_C`) l-diversity
        (docs/metrics.md §7); value counts per class are computed where the data is.
    :param recursive_c: c of recursive (c, l)-diversity.
    :param suda: also compute SUDA2 special uniques (per-column contributions).
    :param max_global_risk: the expected share of re-identifications from ``weight`` may be
        at most this.
    :param min_l: every sensitive column must have at least this distinct l in every class.
    :param warn_max_global_risk: warning level of ``max_global_risk``.
    :param warn_min_l: warning level of ``min_l``.
    :param previous_release: the release the staged table replaces (templated): a file when
        ``path`` is used, a table of the same connection otherwise. The staged table is
        compared with it where the data is (arrivals and departures, docs/metrics.md §12),
        the difference attached under ``since_last_release`` and gated by the four limits
        below. When it does not exist yet (the first run of a scheduled release) there is
        nothing to compare: it is logged, ``since_last_release`` is ``null`` and those limits
        are not checked. On a Spark connection: a table of the session's catalog when
        ``table`` is used, else a Parquet path, compared by Spark.
    :param min_arrival_k: the records new since ``previous_release`` must be at least this
        many in every class they arrive in (an attacker who knows someone arrived looks
        only at the arrivals: risk ``1 / a(c)``).
    :param max_arrival_risk: the highest risk of an arriving record may be at most this.
    :param min_departure_k: the records of ``previous_release`` no longer released must be at
        least this many in every class they leave.
    :param max_departure_risk: the highest risk of a departing record may be at most this.
    :param warn_min_arrival_k: warning level of ``min_arrival_k`` (and
        ``warn_max_arrival_risk``, ``warn_min_departure_k``, ``warn_max_departure_risk``
        of the others).
    :param on_breach: ``"fail"`` (default: the task fails, no retries), ``"skip"`` (the task
        and its downstream are skipped: nothing is published) or ``"warn"`` (log, succeed).
        It applies to the failing levels; warning levels never stop the task.
    :param max_subset_size: rank every QI subset up to this many columns and the full set
        (at least the number of QIs: the full lattice); by default each single column, each
        subset with one QI left out, and the full set.
    :param report_path: where to write a self-contained HTML risk report (templated; a local
        path or an object-storage URL), also when the gate is breached; its location is pushed
        to XCom under ``report_location``, its URL (``report_base_url``, or an object-storage
        URL) under ``report_url``: the task's "Re-identification report" link. Needs the
        ``report`` extra (matplotlib). ``sign_off`` pre-fills its sign-off block.
    :param rank_attributes: rank the QI subsets (which columns re-identify; default). With
        ``False`` and no weight, sensitive columns, SUDA2 or register, only the class-size
        histogram is counted where the data is: nothing per class leaves the database.
    :param memory_limit: most memory the embedded engine (DuckDB) may use for a ``path``
        (e.g. ``"1GB"``; templated); beyond it, it spills to a temporary folder.
    :param hierarchies: ``{qi: spec}`` for the advice's Datafly outlook (specs as
        :class:`~reident_airflow.operators.datafly.DataflyOperator` takes them); QIs without
        one use the hierarchies bundled for Adult's column names, if any.
    :param hierarchy_sep: separator of the ARX hierarchy files (default ``;``).
    :param suppression_limit: the suppression limit of the
        :class:`~reident_airflow.operators.datafly.DataflyOperator` you will run, for the
        advice's Datafly outlook (the same parameter, the same default: ``k`` records;
        templated): a count (``5``), a fraction of the records (``0.01``) or a percentage
        (``"1%"``), so that the outlook is what that operator then does.
    :param advice: on a breach of ``min_k``, read the staged table again (its class table
        where the data is, then its QI columns) for the advice: classes and records below k,
        the column that drives the risk and what Datafly at that k would do (default
        ``True``). It is logged, ends the breach's message, goes to XCom (``advice``), to the
        alert and to the report. Aggregates only.
    :param fingerprint: add ``input`` to the assessment (default ``True``): a file's SHA-256,
        size and row count (an object-storage file is hashed as downloaded), or a table's or
        query's row count and snapshot (:mod:`reident_airflow.sources.fingerprint`); the
        report shows it. Hashing costs about 2.5 s per GB.
    :param identifier_scan: the identifier scan of every column of the staged table
        (docs/identifier-scan.md), through the same source as the assessment: ``"warn"``
        (a flagged column is logged, alerted as a warning and kept in the result; the
        release goes ahead), ``"fail"`` (a column found an identifier or an undeclared
        quasi-identifier fails the task like a breach of the gate, through ``on_breach``,
        no retries) or ``"off"``. Unset (default): the ``preset``'s policy
        (docs/metrics.md §11), else ``"warn"``. ``reident assess`` scans only when asked
        (``--scan``), so that its output stays what scripts read; a pipeline gains the check
        on every run, and under ``"warn"`` no task changes state. Templated.
    :param scan_allow_columns: columns the scan never flags (list, or comma-separated); the
        declared ``quasi_identifiers`` are never flagged either.
    :param safe_harbor: add the HIPAA Safe Harbor checks to the scan (exact dates, ages over
        89, restricted ZIP3 areas, geography below a state, free text); unset: the preset's
        choice, else ``False``.
    :param scan_options: the scan's other options as a mapping (or its JSON):
        ``extra_names``, ``phone_regions``, ``sample_size``, ``approximate`` (Spark only),
        read by :meth:`~reident_airflow.engine.identifiers.ScanOptions.from_mapping`.

    Returns the assessment JSON (``reident.assessment/v1``, aggregates only, with ``advice``
    and ``input``, and ``identifier_scan`` unless it is ``"off"``) as XCom
    (``return_value``, pushed before failing on a breach too).
    Connection and SQL errors are raised as they are, so Airflow's retries apply; bad
    parameters and breaches fail now.
    """

    #: The operator's parameters that are fields of :class:`AssessmentOptions`.
    OPTION_FIELDS = (
        "quasi_identifiers",
        "record_threshold",
        "population_size",
        "sampling_fraction",
        "region",
        "population_table",
        "previous_release",
        "weight",
        "sensitive",
        "recursive_c",
        "rank_attributes",
        "max_subset_size",
        "suda",
        "preset",
        "suppression_limit",
        *GATE_FIELDS,
        *(f"warn_{name}" for name in GATE_FIELDS),
    )

    template_fields: Sequence[str] = (
        *OPTION_FIELDS,
        "memory_limit",
        "hierarchies",
        "hierarchy_sep",
        "advice",
        "fingerprint",
        "identifier_scan",
        "scan_allow_columns",
        "safe_harbor",
        "scan_options",
        *StagedTableOperator.template_fields,
    )
    #: The options read by name here (the others go through :meth:`_options`).
    population_table: str | None
    previous_release: str | None
    memory_limit: str | None
    hierarchies: Mapping[str, Any] | str | None
    hierarchy_sep: str
    advice: bool | str
    fingerprint: bool | str
    identifier_scan: str | None
    scan_allow_columns: str | Sequence[str] | None
    safe_harbor: bool | str | None
    scan_options: Mapping[str, Any] | str | None

    ui_color = "#f0e4ff"
    check = "reidentification_risk"
    report_kind = "assessment"

    def __init__(
        self,
        *,
        quasi_identifiers: str | Sequence[str],
        record_threshold: float | str | None = None,
        population_size: int | str | None = None,
        sampling_fraction: float | str | None = None,
        region: str | None = None,
        population_table: str | None = None,
        preset: str | None = None,
        max_highest_risk: float | str | None = None,
        max_average_risk: float | str | None = None,
        max_records_at_risk: float | str | None = None,
        min_k: int | str | None = None,
        warn_max_highest_risk: float | str | None = None,
        warn_max_average_risk: float | str | None = None,
        warn_max_records_at_risk: float | str | None = None,
        warn_min_k: int | str | None = None,
        weight: str | None = None,
        sensitive: str | Sequence[str] | None = None,
        recursive_c: float | str | None = None,
        suda: bool | str = False,
        max_global_risk: float | str | None = None,
        min_l: int | str | None = None,
        warn_max_global_risk: float | str | None = None,
        warn_min_l: int | str | None = None,
        previous_release: str | None = None,
        min_arrival_k: int | str | None = None,
        max_arrival_risk: float | str | None = None,
        min_departure_k: int | str | None = None,
        max_departure_risk: float | str | None = None,
        warn_min_arrival_k: int | str | None = None,
        warn_max_arrival_risk: float | str | None = None,
        warn_min_departure_k: int | str | None = None,
        warn_max_departure_risk: float | str | None = None,
        on_breach: str = "fail",
        max_subset_size: int | str | None = None,
        report_path: str | None = None,
        rank_attributes: bool | str = True,
        memory_limit: str | None = None,
        hierarchies: Mapping[str, Any] | str | None = None,
        hierarchy_sep: str = ";",
        advice: bool | str = True,
        fingerprint: bool | str = True,
        identifier_scan: str | None = None,
        scan_allow_columns: str | Sequence[str] | None = None,
        safe_harbor: bool | str | None = None,
        scan_options: Mapping[str, Any] | str | None = None,
        suppression_limit: int | float | str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(on_breach=on_breach, report_path=report_path, **kwargs)
        self.quasi_identifiers = quasi_identifiers
        self.record_threshold = record_threshold
        self.population_size = population_size
        self.sampling_fraction = sampling_fraction
        self.region = region
        self.population_table = population_table
        self.preset = preset
        self.max_highest_risk = max_highest_risk
        self.max_average_risk = max_average_risk
        self.max_records_at_risk = max_records_at_risk
        self.min_k = min_k
        self.warn_max_highest_risk = warn_max_highest_risk
        self.warn_max_average_risk = warn_max_average_risk
        self.warn_max_records_at_risk = warn_max_records_at_risk
        self.warn_min_k = warn_min_k
        self.weight = weight
        self.sensitive = sensitive
        self.recursive_c = recursive_c
        self.suda = suda
        self.max_global_risk = max_global_risk
        self.min_l = min_l
        self.warn_max_global_risk = warn_max_global_risk
        self.warn_min_l = warn_min_l
        self.previous_release = previous_release
        self.min_arrival_k = min_arrival_k
        self.max_arrival_risk = max_arrival_risk
        self.min_departure_k = min_departure_k
        self.max_departure_risk = max_departure_risk
        self.warn_min_arrival_k = warn_min_arrival_k
        self.warn_max_arrival_risk = warn_max_arrival_risk
        self.warn_min_departure_k = warn_min_departure_k
        self.warn_max_departure_risk = warn_max_departure_risk
        self.max_subset_size = max_subset_size
        self.rank_attributes = rank_attributes
        self.memory_limit = memory_limit
        self.hierarchies = hierarchies
        self.hierarchy_sep = hierarchy_sep
        self.advice = advice
        self.fingerprint = fingerprint
        self.identifier_scan = identifier_scan
        self.scan_allow_columns = scan_allow_columns
        self.safe_harbor = safe_harbor
        self.scan_options = scan_options
        self.suppression_limit = suppression_limit

    # -- work ------------------------------------------------------------------------------
    def _options(self, *, spark: bool = False) -> AssessmentOptions:
        """The rendered parameters as the assessment's options (checked: fail now if bad);
        ``spark``: the staged table is read by a Spark connection."""
        self.check_on_breach()
        self.check_report_base_url()
        if not spark:
            self.check_staged()
        self.check_sign_off()
        with self.input_errors():
            options = AssessmentOptions.from_mapping(
                {name: getattr(self, name) for name in self.OPTION_FIELDS}
            )
        if spark:
            check_spark_staged(self, options)
        self.advice = parse_flag(self.advice, "advice")
        self.fingerprint = parse_flag(self.fingerprint, "fingerprint")
        specs = self._hierarchy_specs()
        check_paths(
            [("report_path", self.report_path)],
            [("the source file", self.path), *hierarchy_files(specs)],
        )
        return options

    def _scan_options(self, options: AssessmentOptions, *, spark: bool) -> ScanOptions | None:
        """The rendered scan parameters as the scan's options (``None`` under ``"off"``);
        the assessment's QIs declared, the preset's policy where none is given. Bad values
        fail now."""
        with self.input_errors():
            rest = (
                {}
                if _unset(self.scan_options)
                else parse_mapping(self.scan_options, "scan_options")
            )
            more = {
                key: rest.get(key)
                for key in ("extra_names", "phone_regions", "sample_size", "approximate")
            }
            unknown = sorted(set(rest) - set(more))
            if unknown:
                raise ReidentConfigurationError(
                    f"scan_options: unknown option {unknown[0]!r}; known: {', '.join(more)}"
                )
            scanning = ScanOptions.from_mapping(
                {
                    "policy": self.identifier_scan,
                    "safe_harbor": self.safe_harbor,
                    "allow_columns": self.scan_allow_columns,
                    "quasi_identifiers": list(options.quasi_identifiers),
                    **more,
                },
                preset=options.preset,
            )
        if scanning.policy == "off":
            return None
        if scanning.approximate and not spark:
            raise ReidentConfigurationError(
                "scan_options: approximate applies only on a Spark connection"
            )
        return scanning

    def _hierarchy_specs(self) -> dict[str, Any]:
        """The rendered ``hierarchies`` (``{}`` when none are given)."""
        if self.hierarchies is None or (
            isinstance(self.hierarchies, str) and not self.hierarchies.strip()
        ):
            return {}
        if not isinstance(self.hierarchy_sep, str) or len(self.hierarchy_sep) != 1:
            raise ReidentConfigurationError("hierarchy_sep must be a single character")
        return parse_mapping(self.hierarchies, "hierarchies")

    # -- the work, one line for every source: options -> the source, chosen once -> what it
    # counts -> the engine -> the advice and the fingerprint, through that source (an
    # object-storage file downloaded once for all three, hashed as downloaded and named by
    # its URL). What the operator adds to an assessment once it is computed (issue 19) is
    # what ``reident assess`` adds (:mod:`reident_airflow.commands.assess`).
    def _source(self, spark: Any) -> AbstractContextManager[Source]:
        """The staged table as one source: the Spark connection's ``spark``
        (:func:`~reident_airflow.operators.spark_table.spark_source`), else the file's or the
        database's (:meth:`source`)."""
        if spark is None:
            return self.source(memory_limit=self.memory_limit or None)
        from reident_airflow.operators.spark_table import spark_source

        return spark_source(self, spark)

    def _assess(
        self, options: AssessmentOptions, spark: Any = None, scanning: ScanOptions | None = None
    ) -> tuple[Assessment, AdviceFound | None, dict[str, Any]]:
        """The assessment of the staged table (``spark``: the Spark connection that reads
        it), with its identifier scan (``scanning``; none when ``None``) through the same
        source, its advice and its report, counted where the data is
        (:func:`~reident_airflow.workflows.assessment.run_assessment`, as ``reident assess``
        runs it). A name beside the staged table (``population_table``,
        ``previous_release``) is a file, an object-storage one downloaded first, or a table of
        its database; on a Spark connection a table of its catalog or a Parquet path."""
        from reident_airflow.workflows.assessment import run_assessment

        with self.input_errors(), self._source(spark) as source, self.cancelling(source):
            run = run_assessment(
                source,
                options,
                scan=None if scanning is None else lambda s: self._scan(s, scanning),
                previous_missing=self._first_release,
                advice=bool(self.advice),
                hierarchies=lambda rows: self._hierarchies(options.quasi_identifiers, rows),
                fingerprint=bool(self.fingerprint),
                beside=local_name if spark is None else nullcontext,
            )
        result = run.result
        difference = result.since_last_release
        if difference is not None:
            self.log.info(
                "since the previous release: %s arrivals, %s departures",
                difference.arrivals.records,
                difference.departures.records,
            )
        report = result.to_dict()
        report["advice"] = None if run.advice is None else run.advice[0].to_dict()
        report["input"] = self._fingerprint(run.fingerprint, spark) if self.fingerprint else None
        return result, run.advice, report

    def _scan(self, source: Source, scanning: ScanOptions) -> IdentifierScan | None:
        """The identifier scan of every column of ``source``. A column the source cannot
        profile (a type without equality, such as PostgreSQL's ``json``) fails the task under
        ``"fail"``; under ``"warn"`` it is logged and the assessment goes on without a scan:
        a warning never stops a release the gate passes. A column of ``scan_allow_columns``
        the table lacks fails the task whatever the policy (a typo allows nothing)."""
        try:
            kinds = source.column_kinds()
        except InvalidInputError as exc:
            self._not_scanned(scanning, exc)
            return None
        scan_plan(kinds, as_spelled(scanning, list(kinds)))  # the columns allowed exist
        try:
            return scan_columns(source, scanning)
        except InvalidInputError as exc:
            self._not_scanned(scanning, exc)
            return None

    def _first_release(self, name: str) -> None:
        """A previous release that does not exist yet is the first run: nothing to compare."""
        self.log.info("previous release %r: not found, the first release: nothing to compare", name)

    def _not_scanned(self, scanning: ScanOptions, exc: InvalidInputError) -> None:
        if scanning.policy == "fail":
            raise exc
        self.log.warning("identifier scan: not run (%s); the assessment goes on", exc)

    def _hierarchies(
        self, qis: Sequence[str], rows: Callable[[], pd.DataFrame] | None
    ) -> dict[str, Hierarchy]:
        """The rendered ``hierarchies`` for the advice (specs of
        :mod:`~reident_airflow.operators.hierarchy_specs`; ``{}``: the bundled ones), a
        builder's values read through ``rows`` (the staged table's QI columns, read once).
        On a source whose rows stay where the data is (``rows`` ``None``: Spark), a QI whose
        spec is a builder has no hierarchy: the advice names it."""
        from reident_airflow.operators.hierarchy_specs import resolve_hierarchies

        specs = self._hierarchy_specs()
        if not specs:
            return {}
        given = {c: s for c, s in specs.items() if c in qis}
        built = [c for c, s in given.items() if isinstance(s, Mapping) and s.get("type") != "arx"]
        import pandas as pd

        if rows is None:
            given = {c: s for c, s in given.items() if c not in built}
        frame = rows() if built and rows is not None else pd.DataFrame(columns=list(qis))
        return resolve_hierarchies(given, frame, qis, sep=self.hierarchy_sep)

    def _fingerprint(self, found: InputFingerprint | None, spark: Any) -> dict[str, Any] | None:
        """The assessment's ``"input"`` object: the file's SHA-256, size and row count (a
        download named by its URL), or the table's (or query's) row count and snapshot
        (:mod:`reident_airflow.sources.fingerprint`); on Spark, of a local Parquet path only
        (else ``None``, logged)."""
        if found is None:
            if spark is not None:
                self.log.info("fingerprint: only of a local path on a Spark connection")
            return None
        if self.path and spark is None:  # the file as the task names it (a URL: downloaded)
            found = dataclasses.replace(found, location=str(self.path))
        return found.to_dict()

    def execute(self, context: Context) -> dict[str, Any]:
        from reident_airflow.operators.spark_table import spark_connection

        conn = spark_connection(self.conn_id)
        options = self._options(spark=conn is not None)
        scanning = self._scan_options(options, spark=conn is not None)
        result, found, report = self._assess(options, conn, scanning)
        location = self.publish(context, report, source=self.source_name("SQL query"))
        from reident_airflow.summary import assessment_summary

        self.log.info("%s", assessment_summary(report))
        for line in warning_lines(result):
            self.log.warning("%s", line)
        for line in scan_lines(result.identifier_scan):
            self.log.warning("%s", line)
        if found is not None:
            self.log.warning("advice: %s", advice_sentence(found))
        held = arrival_advice(result)
        if held is not None:
            self.log.warning("advice: %s", held)
        qis = list(result.quasi_identifiers)
        if not result.passed:
            self.gate(
                context,
                report,
                message=self._breach_message(result, found),
                location=location,
                quasi_identifiers=qis,
                k=result.k,
            )
        elif result.warnings:
            self.gate(
                context,
                report,
                message=self._warning_message(result),
                location=location,
                quasi_identifiers=qis,
                k=result.k,
                breaches=[],
                outcome="warn",
            )
        return report

    def _breach_message(self, result: Assessment, found: AdviceFound | None) -> str:
        where = self.source_name()
        parts = "; ".join(b.describe() for b in result.breaches)
        message = (
            f"re-identification risk gate breached for {where!r} "
            f"(quasi-identifiers: {', '.join(result.quasi_identifiers)}; k = {result.k}; "
            f"{result.records} records): {parts}"
        )
        scan = result.identifier_scan
        if scan is not None and scan.failing and not scan.passed:
            message += f". Identifier scan: {scan_verdicts(scan, scan.failing)}"
        if found is not None:
            message += f". What to do: {advice_sentence(found)}"
        held = arrival_advice(result)
        if held is not None:
            message += f". Since the last release: {held}"
        return message

    def _warning_message(self, result: Assessment) -> str:
        parts = "; ".join(w.describe() for w in result.warnings)
        message = (
            f"re-identification risk warning level crossed for {self.source_name()!r} "
            f"(quasi-identifiers: {', '.join(result.quasi_identifiers)}; k = {result.k}; "
            f"{result.records} records): {parts}"
        )
        scan = result.identifier_scan
        if scan is not None and scan.flagged:
            message += f". Identifier scan: {scan_verdicts(scan, scan.flagged)}"
        return message


def warning_lines(result: Assessment) -> list[str]:
    """One log line per warning level crossed:
    ``warning level crossed: k = 3 (limit: at least 5); the release goes ahead``."""
    return [
        f"warning level crossed: {w.describe()}; the release goes ahead" for w in result.warnings
    ]


def scan_lines(scan: IdentifierScan | None) -> list[str]:
    """One log line per column the scan flagged:
    ``identifier scan: mrn: identifier (name: record number; unique: 200 of 200 values)``.
    Column names, verdicts and counts, never a value."""
    if scan is None:
        return []
    return [
        f"identifier scan: {c.column}: {c.verdict} ({'; '.join(c.reasons)})"
        for c in scan.columns
        if c.flagged
    ]


def scan_verdicts(scan: IdentifierScan, columns: Sequence[str]) -> str:
    """``mrn (identifier), zip (quasi-identifier not declared)``: the verdicts of
    ``columns``, for a breach's or a warning's message."""
    verdicts = {c.column: c.verdict for c in scan.columns}
    return ", ".join(f"{column} ({verdicts[column]})" for column in columns)


def _unset(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def advice_sentence(found: AdviceFound) -> str:
    """The advice as one paragraph; names the QIs that had no hierarchy."""
    advice, missing = found
    text = advice.describe()
    if missing:
        names = ", ".join(repr(m) for m in missing)
        text += (
            f" No Datafly outlook: no hierarchy (or none that covers the data) for {names}; "
            "give one in the operator's hierarchies."
        )
    return text
