"""What every reident operator shares (:class:`ReidentOperator`): the engine of a connection,
reading a staged table from a file or a database, failing now on unusable input while
infrastructure errors keep Airflow's retries, the report (XCom and HTML) and the action on a
breach (fail / skip / warn)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any, ClassVar, TypeAlias

from sqlalchemy.engine import Engine

from reident_airflow._compat import (
    AirflowFailException,
    BaseOperator,
    Context,
)
from reident_airflow.connections import sqlalchemy_engine
from reident_airflow.engine.errors import ReidentError, resource_error
from reident_airflow.operators.breach_action import act_on_breach
from reident_airflow.operators.params import (
    ON_BREACH_CHOICES,
    check_choice,
    local_file,
    parse_mapping,
)
from reident_airflow.operators.report_link import (
    CONFIG_SECTION,
    ReidentReportLink,
    check_base_url,
    configured_base_url,
    is_web_link,
    report_url,
    served_root,
)
from reident_airflow.outcomes import (
    REPORT_PATH_XCOM_KEY,
    REPORT_URL_XCOM_KEY,
    REPORT_XCOM_KEY,
    ReidentConfigurationError,
    fail_now,
)

__all__ = [
    "RENDERERS",
    "ReidentOperator",
    "StagedTableOperator",
    "act_on_breach",
    "check_paths",
    "push_report",
]

if TYPE_CHECKING:
    from reident_airflow.report.signoff import SignOff as SignOffLike
    from reident_airflow.sources.cancel import Cancellable, Running
    from reident_airflow.sources.files import FileSource
    from reident_airflow.sources.sql import SqlSource

    #: The source of a staged table: a file's or a database's.
    TableSource: TypeAlias = FileSource | SqlSource

#: How the Rendered Templates tab shows the parameters that are code or JSON.
RENDERERS = {
    "sql": "sql",
    "where": "sql",
    "hook_params": "json",
    "hierarchies": "json",
    "sign_off": "json",
}


class ReidentOperator(BaseOperator):
    """The base of the reident operators.

    A subclass names its ``check`` (the alert's and the breach's ``check``) and its
    ``report_kind`` (the HTML report's layout), validates its rendered parameters, and builds
    on these steps:

    - :meth:`get_engine`: the engine of an Airflow connection (the seam tests replace);
    - :meth:`open_source`: a table as one source, a file (local or object storage) or a
      table / query of a connection, disposing of the engine afterwards;
    - :meth:`input_errors`: a :class:`~reident_airflow.engine.errors.ReidentError` raised
      inside becomes a :class:`~reident_airflow.outcomes.ReidentConfigurationError` (no
      retries), unless it says a retry may help;
    - :meth:`publish`: the report to XCom and, with ``report_path``, the HTML report;
    - :meth:`gate`: nothing when the check passed, else the ``on_breach`` action.

    Parameters every operator takes (all templated): ``on_breach``; ``report_path`` and
    ``report_base_url`` (the HTML report and the URL it is served under, default the
    ``[reident] report_base_url`` option of Airflow's configuration); ``sign_off`` (a dict, or
    its JSON text: ``reviewer``, ``role``, ``decision``, ``conditions``, ``date``, pre-filling
    the report's sign-off block, :class:`~reident_airflow.report.signoff.SignOff`);
    ``database`` (overrides
    the database of the operator's connection, ``conn_id``) and ``hook_params`` (keyword
    arguments of that connection's provider hook), as Airflow's SQL operators take them.

    OpenLineage (with ``apache-airflow-providers-openlineage`` installed): the datasets read
    and written, one assertion per threshold and the row count, see
    :mod:`reident_airflow.operators.lineage`.
    """

    check: ClassVar[str]
    report_kind: ClassVar[str]
    #: The parameters of every operator; a subclass extends them
    #: (``template_fields = ("x", *ReidentOperator.template_fields)``).
    template_fields: Sequence[str] = (
        "on_breach",
        "report_path",
        "report_base_url",
        "sign_off",
        "database",
        "hook_params",
    )
    template_ext: Sequence[str] = (".sql",)
    template_fields_renderers: ClassVar[dict[str, str]] = RENDERERS
    operator_extra_links = (ReidentReportLink(),)
    # the parameters, kept as given: Airflow renders them, the operator converts them when it
    # runs
    on_breach: str
    report_path: str | None
    report_base_url: str | None
    sign_off: dict[str, Any] | str | None
    database: str | None
    hook_params: dict[str, Any] | None

    def __init__(
        self,
        *,
        on_breach: str = "fail",
        report_path: str | None = None,
        report_base_url: str | None = None,
        sign_off: dict[str, Any] | str | None = None,
        database: str | None = None,
        hook_params: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.on_breach = on_breach
        self.report_path = report_path
        # as written, before rendering: the folders of a per-run path stay in the report's URL
        self._report_root = served_root(report_path)
        self.report_base_url = report_base_url
        self.sign_off = sign_off
        self.database = database
        self.hook_params = hook_params
        self.last_report: dict[str, Any] | None = None
        self.last_report_url: str | None = None

    # -- seams -----------------------------------------------------------------------------
    def get_engine(self, conn_id: str) -> Engine:
        """The SQLAlchemy engine of an Airflow connection (tests may replace this);
        ``database`` and ``hook_params`` apply to the operator's own ``conn_id``."""
        if conn_id != getattr(self, "conn_id", None):
            return sqlalchemy_engine(conn_id)
        return sqlalchemy_engine(
            conn_id, database=self.database or None, hook_params=self._hook_params()
        )

    def _hook_params(self) -> dict[str, Any] | None:
        """``hook_params`` as rendered: a dict, or its JSON text."""
        value: Any = self.hook_params
        if isinstance(value, str) and value.strip():
            import json

            try:
                value = json.loads(value)
            except ValueError:
                value = None
            if not isinstance(value, dict):
                raise ReidentConfigurationError("hook_params must be a JSON object")
        return dict(value) if value else None

    # -- stopping --------------------------------------------------------------------------
    def _running(self) -> Running:
        """What ``execute`` has open now (made on first use: an operator is copied and
        serialized before it runs)."""
        from reident_airflow.sources.cancel import Running

        running = self.__dict__.get("_running_work")
        if running is None:  # setdefault: on_kill and execute may both get here first
            running = self.__dict__.setdefault("_running_work", Running())
        assert isinstance(running, Running)
        return running

    def cancelling(self, item: Cancellable) -> AbstractContextManager[None]:
        """For the block, :meth:`on_kill` cancels ``item`` (a source, an engine's statements,
        a session's Spark jobs): anything with a ``cancel()``
        (:mod:`~reident_airflow.sources.cancel`)."""
        return self._running().holding(item)

    def on_kill(self) -> None:
        """Stop the work ``execute`` runs now: the statement on every database connection the
        task holds (PostgreSQL's cancel request, MariaDB's ``KILL QUERY`` from a second
        connection, SQLite's interrupt), DuckDB's query and the task's Spark jobs. Airflow
        calls it from the task's SIGTERM handler or another thread; ``execute`` then raises
        (:class:`~reident_airflow.engine.errors.OperationCancelledError`, or Spark's own
        error). The log line says how many were cancelled, nothing else."""
        stopped = self._running().cancel()
        self.log.info("on_kill: cancelled the work of %d open source(s)", stopped)

    # -- steps -----------------------------------------------------------------------------
    def check_on_breach(self) -> None:
        check_choice(self.on_breach, "on_breach", ON_BREACH_CHOICES)

    def check_report_base_url(self) -> None:
        """The rendered ``report_base_url`` (without it, ``[reident] report_base_url`` of
        Airflow's configuration) is an absolute ``http(s)`` URL with a host: the report link
        is built on it, so a ``javascript:`` or ``data:`` one fails now, before any read."""
        from reident_airflow.engine.errors import InvalidInputError

        try:
            if check_base_url(self.report_base_url) is None:
                check_base_url(configured_base_url(), f"[{CONFIG_SECTION}] report_base_url")
        except InvalidInputError as exc:
            raise ReidentConfigurationError(str(exc)) from None

    def check_sign_off(self) -> SignOffLike | None:
        """The rendered ``sign_off`` as the report's
        :class:`~reident_airflow.report.signoff.SignOff` (``None`` when not given); a bad
        one fails now."""
        value: Any = self.sign_off
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        from reident_airflow.report.signoff import SignOff

        mapping = parse_mapping(value, "sign_off")
        try:
            return SignOff.from_dict(mapping)
        except (ReidentError, TypeError) as exc:
            raise ReidentConfigurationError(f"sign_off: {exc}") from None

    @contextmanager
    def connected(self, conn_id: str | None) -> Iterator[Engine]:
        """The engine of ``conn_id``, disposed of when the block ends."""
        if not conn_id:
            raise ReidentConfigurationError("no conn_id given")
        from reident_airflow.sources.cancel import statements_of

        engine = self.get_engine(conn_id)
        try:
            with self.cancelling(statements_of(engine)):
                yield engine
        finally:
            engine.dispose()

    @contextmanager
    def open_source(
        self,
        *,
        path: str | None,
        conn_id: str | None,
        sep: str = ",",
        memory_limit: str | None = None,
        table: str | None = None,
        sql: str | None = None,
        schema: str | None = None,
        where: str | None = None,
    ) -> Iterator[FileSource | SqlSource]:
        """Where a table is, as one source for the block, chosen once: the
        :class:`~reident_airflow.sources.files.FileSource` of the local copy of ``path`` (an
        object-storage file downloaded once, at the start), else the
        :class:`~reident_airflow.sources.sql.SqlSource` of ``table`` or ``sql`` (narrowed by
        ``where``) through the engine of ``conn_id`` (:meth:`get_engine`), disposed of when
        the block ends."""
        if path:
            from reident_airflow.sources.files import FileSource

            with local_file(path) as local:
                source = FileSource(local, sep=sep, memory_limit=memory_limit)
                with self.cancelling(source):
                    yield source
            return
        from reident_airflow.sources.sql import SqlSource

        with self.connected(conn_id) as engine:
            database = SqlSource(engine, table=table, sql=sql, schema=schema, where=where)
            try:
                yield database
            finally:  # the queries it ran, literals elided: lineage's ``sql`` job facet
                self.last_statements = database.statements()
                database.close()

    @contextmanager
    def input_errors(self) -> Iterator[None]:
        """Input errors fail now: a bad column, an empty table or a bad threshold stay bad on
        a retry. An error that says a retry may help (``deterministic = False``: a lost
        connection during a write) is raised as it is, as are Airflow's own failures."""
        try:
            yield
        except ReidentError as exc:
            if isinstance(exc, AirflowFailException) or not getattr(exc, "deterministic", True):
                raise
            fail_now(exc)
        except (MemoryError, OSError) as exc:  # memory, disk or file-size limit: may pass later
            exhausted = resource_error(exc)
            if exhausted is None:
                raise
            raise exhausted from None

    def publish(
        self, context: Context, report: dict[str, Any], *, source: str | None
    ) -> str | None:
        """Push ``report`` to XCom (``return_value``, unless ``do_xcom_push=False``) and write
        the HTML report when ``report_path`` is set; returns the report's location, or None."""
        self.last_report = report
        if self.do_xcom_push:
            push_report(context, report)
        if self.report_path is None or not str(self.report_path).strip():
            return None
        return self._write_report(context, report, source=source)

    # -- OpenLineage -----------------------------------------------------------------------
    def lineage_inputs(self) -> list[tuple[str | None, str | None, str | None]]:
        """The datasets assessed, as ``(conn_id, schema, table)`` or ``(None, None, path)``."""
        return []

    def lineage_outputs(self) -> list[tuple[str | None, str | None, str | None]]:
        """The datasets published, in the form of :meth:`lineage_inputs`."""
        return []

    def get_openlineage_facets_on_start(self) -> Any:
        """The datasets to be read (with their ``schema`` facet) and written (OpenLineage)."""
        from reident_airflow.operators.lineage import operator_lineage

        return operator_lineage(self, None, start=True)

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """The datasets read and written, the assertions and the row count (OpenLineage)."""
        from reident_airflow.operators.lineage import operator_lineage

        return operator_lineage(self, task_instance)

    def get_openlineage_facets_on_failure(self, task_instance: Any) -> Any:
        """As on complete: a breach fails the task after the report was computed."""
        from reident_airflow.operators.lineage import operator_lineage

        return operator_lineage(self, task_instance)

    def _write_report(self, context: Context, report: dict[str, Any], *, source: str | None) -> str:
        """Render the HTML report to ``report_path`` (a local path or an object-storage URL)
        and push its location to XCom under :data:`REPORT_PATH_XCOM_KEY`.

        A report that cannot be drawn (matplotlib missing, a path naming a directory) fails
        the task now; storage errors are raised as they are, so retries apply.
        """
        from reident_airflow.engine.errors import InvalidInputError
        from reident_airflow.report import render_report, write_report
        from reident_airflow.report.runs import source_text

        ti = context.get("ti")
        extra: dict[str, Any] = {"source": source_text(source)}
        for attr in ("dag_id", "task_id", "run_id", "try_number"):
            value = getattr(ti, attr, None)
            if isinstance(value, str | int) and not isinstance(value, bool):
                extra[attr] = value
        logical = context.get("logical_date")
        if logical is not None:
            extra["logical_date"] = str(logical)
        run_url = _log_url(ti)
        if run_url is not None:
            extra["run_url"] = run_url
        sign_off = self.check_sign_off()
        try:
            html = render_report(
                report,
                kind=self.report_kind,
                extra={k: v for k, v in extra.items() if v is not None},
                sign_off=sign_off,
            )
            location = write_report(str(self.report_path), html)
        except InvalidInputError as exc:  # ChartUnavailableError too
            raise ReidentConfigurationError(f"report_path: {exc}") from None
        url = report_url(location, self.report_base_url, getattr(self, "_report_root", None))
        self.last_report_url = url
        if ti is not None:
            ti.xcom_push(key=REPORT_PATH_XCOM_KEY, value=location)
            ti.xcom_push(key=REPORT_URL_XCOM_KEY, value=url)
        self.log.info("risk report written to %s", location)
        return location

    def gate(
        self,
        context: Context,
        report: dict[str, Any],
        *,
        message: str,
        location: str | None,
        quasi_identifiers: Sequence[str] = (),
        k: int | None = None,
        breaches: Sequence[dict[str, Any]] | None = None,
        outcome: str | None = None,
    ) -> None:
        """Act on a breach of ``report`` as ``on_breach`` says (or ``outcome``: ``"warn"``
        for warning levels crossed, with no breach); ``breaches`` default to the report's
        own."""
        act_on_breach(
            on_breach=outcome or self.on_breach,
            check=self.check,
            message=message,
            breaches=report["breaches"] if breaches is None else breaches,
            report=report,
            quasi_identifiers=quasi_identifiers,
            k=k,
            logger=self.log,
            context=context,
            report_location=location,
            report_url=self.last_report_url if location else None,
        )


class StagedTableOperator(ReidentOperator):
    """A reident operator that reads one staged table: a file (``path``, ``sep``) or a table
    or query of a connection (``conn_id`` with ``table`` or ``sql``, and ``schema``).

    ``sql`` may name a ``.sql`` file (read as a Jinja template, like Airflow's SQL operators).
    ``where`` (with ``table`` only) gates one partition without a whole ``SELECT``:
    ``where="day = '{{ (logical_date | default(dag_run.run_after)) | ds }}'"`` reads
    ``SELECT * FROM <table> WHERE (day = '...')``, the table quoted by the database's
    dialect; the condition is SQL of the DAG's author, as ``sql`` is: one condition (no
    ``;``, no ``UNION``, no parenthesis it did not open), read with ``sql`` in a read-only
    transaction (docs/reading.md, "A query or a where").

    :param conn_id: Airflow connection of the staging database (with ``table`` or ``sql``).
    :param table: the staged table of that connection.
    :param schema: the table's schema.
    :param sql: a ``SELECT`` to read instead of ``table`` (or a ``.sql`` template file).
    :param where: a condition narrowing ``table`` to some rows (one partition).
    :param path: a CSV or Parquet file instead of a database: local or an object-storage URL.
    :param sep: the CSV's separator (default ``,``).
    """

    template_fields: Sequence[str] = (
        "conn_id",
        "table",
        "schema",
        "sql",
        "where",
        "path",
        "sep",
        *ReidentOperator.template_fields,
    )
    conn_id: str | None
    table: str | None
    schema: str | None
    sql: str | None
    where: str | None
    path: str | None
    sep: str

    def __init__(
        self,
        *,
        conn_id: str | None = None,
        table: str | None = None,
        schema: str | None = None,
        sql: str | None = None,
        where: str | None = None,
        path: str | None = None,
        sep: str = ",",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.conn_id = conn_id
        self.table = table
        self.schema = schema
        self.sql = sql
        self.where = where
        self.path = path
        self.sep = sep

    def check_staged(self) -> None:
        """The staged table is a file or a table / query of a connection, not both; a
        ``where`` filter narrows a ``table`` only."""
        if bool(self.conn_id) == bool(self.path):
            raise ReidentConfigurationError("give either conn_id (with table or sql) or path")
        if self.conn_id and bool(self.table) == bool(self.sql):
            raise ReidentConfigurationError("with conn_id, give either table or sql")
        if self.where is not None and not str(self.where).strip():
            self.where = None
        if self.where and not self.table:
            raise ReidentConfigurationError(
                "where filters a table of a connection: give table (not sql or path) with it, "
                "or put the condition in sql"
            )

    def lineage_inputs(self) -> list[tuple[str | None, str | None, str | None]]:
        if self.path:
            return [(None, None, str(self.path))]
        if self.table:
            return [(self.conn_id, self.schema or None, str(self.table))]
        if self.sql and self.conn_id:
            from reident_airflow.operators.lineage import tables_in_sql

            return [(self.conn_id, schema, table) for schema, table in tables_in_sql(self.sql)]
        return []

    def source(self, *, memory_limit: str | None = None) -> AbstractContextManager[TableSource]:
        """The staged table as one source for the block (:meth:`open_source`): the file of
        ``path`` (``sep``; ``memory_limit`` for DuckDB), else ``table`` or ``sql`` of
        ``conn_id``, ``table`` narrowed by ``where``. Inside the block, an object-storage
        ``path`` is the one copy downloaded at its start: the assessment, the advice and the
        fingerprint see the same bytes."""
        return self.open_source(
            path=self.path,
            conn_id=self.conn_id,
            sep=self.sep,
            memory_limit=memory_limit,
            table=self.table or None,
            sql=self.sql or None,
            schema=self.schema or None,
            where=self.where or None,
        )

    def source_name(self, query: str = "query") -> str:
        """The staged table as messages and reports name it: the table, ``query`` or the path."""
        return str(self.table or (query if self.sql else self.path))


def _log_url(ti: Any) -> str | None:
    """The task instance's page in Airflow's UI (``ti.log_url``: its run, task and try),
    when it is an ``http(s)`` URL; None outside Airflow."""
    try:
        value = getattr(ti, "log_url", None)
    except Exception:  # a property that needs a running Airflow
        return None
    return value if isinstance(value, str) and is_web_link(value) else None


def push_report(context: Context, report: dict[str, Any]) -> None:
    ti = context.get("ti")
    if ti is not None:
        ti.xcom_push(key=REPORT_XCOM_KEY, value=report)


def check_paths(
    outputs: Sequence[tuple[str, str | None]], inputs: Sequence[tuple[str, str | None]]
) -> None:
    """Before any work: no output path (``report_path``, ``target_path``) names an input or
    another output, and each can be written (``report_path``'s directory may be missing: it
    is created).

    Object-storage URLs are not compared. A refusal is a configuration failure: nothing has
    been read or written, and a retry cannot help.
    """
    from reident_airflow._atomic import check_outputs

    try:
        check_outputs(outputs, inputs, create_dirs=["report_path"])
    except ReidentError as exc:
        fail_now(exc)
