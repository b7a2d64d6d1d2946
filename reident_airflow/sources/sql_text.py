"""The SQL text of a DAG's author (``sql=``, ``where=``): one statement, a filter that stays one.

The text is templated (``{{ params.day }}``, ``{{ dag_run.run_after | ds }}``), so it may hold
whatever a template rendered into it. Before anything runs, it is read here the way the
database's own lexer reads it -- string literals, quoted names, comments, PostgreSQL's
dollar quotes -- to find what lies outside them: the ``;`` that would end the statement and
start another one, and the parentheses.

- :func:`one_statement` (``sql``): one statement; a ``;`` followed by anything but whitespace
  and comments is refused, a final ``;`` is dropped (the query is read as a subquery).
- :func:`elide_literals`: a statement that ran, with each literal (string, number) replaced
  by ``?`` and its comments dropped: the text lineage may show (it holds no value).
- :func:`filter_condition` (``where``): one condition, read as ``WHERE (<where>)``: no ``;``
  at all, no parenthesis closed that it did not open (which would let ``UNION SELECT ...``
  swap in another table's rows), no ``UNION`` / ``INTERSECT`` / ``EXCEPT`` / ``MINUS`` at its
  top level.

How a database reads a literal depends on its settings (PostgreSQL's
``standard_conforming_strings``, MySQL's ``NO_BACKSLASH_ESCAPES`` and ``ANSI_QUOTES``), which
the text cannot change before it runs. The text is read under every setting of its dialect
(:data:`_READINGS`) and refused when any reading finds a second statement or an escape: one
of them is the database's own, the others can only refuse more. A dialect not listed is read
under all of them. MySQL's executable comments (``/*! ... */``, MariaDB's ``/*M! ... */``)
run the text they hold: they are refused.

Messages never quote the text: a template may have rendered values into it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from reident_airflow.engine.errors import InvalidInputError

__all__ = ["elide_literals", "filter_condition", "one_statement"]


@dataclass(frozen=True)
class _Reading:
    """How one database (under one setting) splits text into literals, comments and code."""

    backslash_single: bool = False  # '\'' escapes a quote in '...' (MySQL, Spark, PG off)
    backslash_double: bool = False  # "..." is a string whose backslash escapes (MySQL, Spark)
    e_strings: bool = False  # E'...' escapes with backslashes (PostgreSQL)
    dollar_quotes: bool = False  # $tag$ ... $tag$ (PostgreSQL)
    nested_comments: bool = False  # /* /* */ */ (PostgreSQL, Spark)
    dash_needs_space: bool = False  # '-- ' starts a comment only before a space (MySQL)
    hash_comments: bool = False  # '# ...' (MySQL)
    executable_comments: bool = False  # /*! ... */ runs its text (MySQL, MariaDB)
    backticks: bool = False  # `name` (MySQL, SQLite, Spark)
    brackets: bool = False  # [name] (SQLite, SQL Server)


_POSTGRESQL = (
    _Reading(e_strings=True, dollar_quotes=True, nested_comments=True),
    # standard_conforming_strings = off
    _Reading(backslash_single=True, e_strings=True, dollar_quotes=True, nested_comments=True),
)
_MYSQL_BASE = {
    "dash_needs_space": True,
    "hash_comments": True,
    "executable_comments": True,
    "backticks": True,
}
_MYSQL = (
    _Reading(backslash_single=True, backslash_double=True, **_MYSQL_BASE),  # the default
    _Reading(backslash_single=True, **_MYSQL_BASE),  # ANSI_QUOTES
    _Reading(**_MYSQL_BASE),  # NO_BACKSLASH_ESCAPES
)
_SQLITE = (_Reading(backticks=True, brackets=True),)
_SPARK = tuple(
    _Reading(backslash_single=True, backslash_double=True, backticks=True, nested_comments=n)
    for n in (True, False)
)
#: The readings of each dialect (SQLAlchemy's dialect name); any other is read under all.
_READINGS: dict[str, tuple[_Reading, ...]] = {
    "postgresql": _POSTGRESQL,
    "mysql": _MYSQL,
    "mariadb": _MYSQL,
    "sqlite": _SQLITE,
    "hive": _SPARK,
}
_ALL = (*_POSTGRESQL, *_MYSQL, *_SQLITE, *_SPARK, _Reading(brackets=True))

_SET_OPERATORS = frozenset({"union", "intersect", "except", "minus"})
_DOLLAR_QUOTE = re.compile(r"\$([A-Za-z_\u0080-\U0010ffff][A-Za-z_0-9\u0080-\U0010ffff]*)?\$")
_WORD = re.compile(r"[A-Za-z_][A-Za-z_0-9$]*")


def _identifier_char(c: str) -> bool:
    return c.isalnum() or c in "_$" or ord(c) >= 0x80


class _Unreadable(Exception):
    """The text ends inside a literal or a comment, or holds an executable comment."""


@dataclass
class _Code:
    """What one reading finds outside literals and comments."""

    semicolons: list[int] = field(default_factory=list)  # offsets of each ';'
    lowest_depth: int = 0  # the lowest parenthesis depth reached (below 0: closed too many)
    depth: int = 0  # the depth at the end
    top_words: set[str] = field(default_factory=set)  # words at depth 0, lower case
    last_code: int = -1  # the offset of the last character of code


def _skip_quoted(text: str, start: int, quote: str, backslash: bool) -> int:
    """The offset after the literal opened at ``start`` by ``quote`` (doubled inside)."""
    i, n = start + 1, len(text)
    while i < n:
        c = text[i]
        if backslash and c == "\\":
            i += 2
            continue
        if c == quote:
            if i + 1 < n and text[i + 1] == quote:
                i += 2
                continue
            return i + 1
        i += 1
    raise _Unreadable("a quoted literal or name is not closed")


def _skip_block_comment(text: str, start: int, nested: bool) -> int:
    """The offset after the ``/* ... */`` comment opened at ``start``."""
    i, n, depth = start + 2, len(text), 1
    while i < n:
        if text.startswith("*/", i):
            depth -= 1
            i += 2
            if depth == 0:
                return i
            continue
        if nested and text.startswith("/*", i):
            depth += 1
            i += 2
            continue
        i += 1
    raise _Unreadable("a /* comment is not closed")


def _line_end(text: str, start: int) -> int:
    """The offset of the line break ending a line comment (the earliest a database takes)."""
    ends = [j for j in (text.find("\n", start), text.find("\r", start)) if j >= 0]
    return min(ends) if ends else len(text)


def _read(text: str, r: _Reading) -> _Code:
    """Split ``text`` as reading ``r`` does and report what lies outside its literals."""
    code = _Code()
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
            continue
        if text.startswith("--", i) and (
            not r.dash_needs_space or i + 2 == n or text[i + 2].isspace() or ord(text[i + 2]) < 32
        ):
            i = _line_end(text, i)
            continue
        if c == "#" and r.hash_comments:
            i = _line_end(text, i)
            continue
        if text.startswith("/*", i):
            if r.executable_comments and (
                text.startswith("/*!", i)
                or text.startswith("/*M!", i)
                or text.startswith("/*m!", i)
            ):
                raise _Unreadable("an executable comment (/*! ... */) is not allowed")
            i = _skip_block_comment(text, i, r.nested_comments)
            continue
        previous = text[i - 1] if i else " "
        if c == "'":
            escaped = r.backslash_single or (
                r.e_strings and previous in "eE" and (i < 2 or not _identifier_char(text[i - 2]))
            )
            i = _skip_quoted(text, i, "'", escaped)
            code.last_code = i - 1
            continue
        if c == '"':
            i = _skip_quoted(text, i, '"', r.backslash_double)
            code.last_code = i - 1
            continue
        if c == "`" and r.backticks:
            i = _skip_quoted(text, i, "`", False)
            code.last_code = i - 1
            continue
        if c == "[" and r.brackets:
            end = text.find("]", i + 1)
            if end < 0:
                raise _Unreadable("a [name] is not closed")
            i = end + 1
            code.last_code = i - 1
            continue
        if c == "$" and r.dollar_quotes and not _identifier_char(previous):
            opened = _DOLLAR_QUOTE.match(text, i)
            if opened is not None:
                end = text.find(opened.group(0), opened.end())
                if end < 0:
                    raise _Unreadable("a $$ quoted literal is not closed")
                i = end + len(opened.group(0))
                code.last_code = i - 1
                continue
        word = _WORD.match(text, i) if not _identifier_char(previous) else None
        if word is not None:
            if code.depth == 0:
                code.top_words.add(word.group(0).lower())
            i = word.end()
            code.last_code = i - 1
            continue
        if c == ";":
            code.semicolons.append(i)
        elif c == "(":
            code.depth += 1
        elif c == ")":
            code.depth -= 1
            code.lowest_depth = min(code.lowest_depth, code.depth)
        if c != ";":
            code.last_code = i
        i += 1
    return code


def _readings(text: str, dialect: str, what: str) -> list[_Code]:
    try:
        return [_read(text, r) for r in _READINGS.get(dialect, _ALL)]
    except _Unreadable as exc:
        raise InvalidInputError(f"{what}: {exc}; give one complete statement") from None


def one_statement(sql: str, dialect: str) -> str:
    """``sql`` as one statement, without a final ``;``: a ``;`` followed by anything but
    whitespace or comments, a literal or a comment left open, or parentheses that do not pair
    up are refused (nothing has run yet), in a message that never quotes the text."""
    if not sql or not sql.strip():
        raise InvalidInputError("the sql query is empty")
    codes = _readings(sql, dialect, "the sql query")
    ends: set[int] = set()
    for code in codes:
        if len(code.semicolons) > 1 or any(s < code.last_code for s in code.semicolons):
            raise InvalidInputError(
                "the sql query holds more than one statement (a ';' before more SQL): "
                "give one SELECT"
            )
        if code.lowest_depth < 0 or code.depth != 0:
            raise InvalidInputError(
                "the sql query's parentheses do not pair up: give one complete SELECT"
            )
        ends.update(code.semicolons)
    if not ends:
        return sql
    if len(ends) > 1 or any(not code.semicolons for code in codes):
        raise InvalidInputError("the sql query's final ';' is ambiguous: end it without ';'")
    (end,) = ends
    return sql[:end] + " " + sql[end + 1 :]


def filter_condition(where: str, dialect: str) -> str:
    """``where`` as the condition of ``WHERE (...)``, checked: no ``;``, no parenthesis it
    did not open, no set operator (``UNION`` ...) at its top level, nothing left open.

    Returns the condition in parentheses, on lines of its own (a final ``--`` comment ends
    before the closing parenthesis)."""
    codes = _readings(where, dialect, "the where condition")
    for code in codes:
        if code.semicolons:
            raise InvalidInputError(
                "the where condition holds a ';': give one condition, without ';'"
            )
        if code.lowest_depth < 0 or code.depth != 0:
            raise InvalidInputError(
                "the where condition's parentheses do not pair up (it is read as "
                "WHERE (<condition>)): give one condition"
            )
        if code.top_words & _SET_OPERATORS:
            raise InvalidInputError(
                "the where condition holds UNION, INTERSECT, EXCEPT or MINUS: a where only "
                "filters the table's rows; put another query in sql instead"
            )
    return f"(\n{where}\n)"


_NUMBER = re.compile(r"(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def elide_literals(sql: str, dialect: str) -> str | None:
    """``sql`` with every string and number literal replaced by ``?`` and its comments
    dropped, read as the database reads it by default (the first reading of ``dialect``);
    names (quoted or not) and bound parameters (``%(name)s``, ``:name``, ``?``) stay. None
    when the text cannot be read to its end (then nothing of it may be shown)."""
    r = _READINGS.get(dialect, _ALL)[0]
    out: list[str] = []
    i, n = 0, len(sql)
    try:
        while i < n:
            c = sql[i]
            previous = sql[i - 1] if i else " "
            if sql.startswith("--", i) and (
                not r.dash_needs_space or i + 2 == n or sql[i + 2].isspace()
            ):
                i = _line_end(sql, i)
                continue
            if (c == "#" and r.hash_comments) or sql.startswith("/*", i):
                if c == "#":
                    i = _line_end(sql, i)
                else:
                    i = _skip_block_comment(sql, i, r.nested_comments)
                out.append(" ")
                continue
            if c == "'" or (c == '"' and r.backslash_double):
                escaped = r.backslash_single or (
                    r.e_strings and previous in "eE" and (i < 2 or not _identifier_char(sql[i - 2]))
                )
                if c == '"':
                    escaped = True
                i = _skip_quoted(sql, i, c, escaped)
                out.append("?")
                continue
            if c in '"`[' and (c == '"' or (c == "`" and r.backticks) or r.brackets):
                end = sql.find("]", i + 1) + 1 if c == "[" else _skip_quoted(sql, i, c, False)
                if end <= 0:
                    raise _Unreadable("a [name] is not closed")
                out.append(sql[i:end])
                i = end
                continue
            if c == "$" and r.dollar_quotes and not _identifier_char(previous):
                opened = _DOLLAR_QUOTE.match(sql, i)
                if opened is not None:
                    end = sql.find(opened.group(0), opened.end())
                    if end < 0:
                        raise _Unreadable("a $$ quoted literal is not closed")
                    i = end + len(opened.group(0))
                    out.append("?")
                    continue
            if not _identifier_char(previous) and previous not in "$:%":
                number = _NUMBER.match(sql, i)
                if number is not None and number.end() > i:
                    i = number.end()
                    out.append("?")
                    continue
            word = _WORD.match(sql, i) if not _identifier_char(previous) else None
            if word is not None:
                out.append(word.group(0))
                i = word.end()
                continue
            out.append(c)
            i += 1
    except _Unreadable:
        return None
    return "".join(out)
