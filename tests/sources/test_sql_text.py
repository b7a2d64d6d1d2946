"""The SQL text of a DAG's author read as each database's lexer reads it
(:mod:`reident_airflow.sources.sql_text`); every expected outcome is worked out by hand from
the database's documented lexical rules, noted beside each case."""

from __future__ import annotations

import pytest

from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.sources.sql_text import elide_literals, filter_condition, one_statement

ONE = [
    # (dialect, text): one statement as each database reads it
    ("postgresql", "SELECT ';' AS x"),  # ; inside a string
    ("postgresql", 'SELECT 1 AS ";"'),  # ; inside a quoted name
    ("postgresql", "SELECT $$;$$ AS x, $tag$ ' ; $tag$ AS y"),  # dollar quotes
    ("postgresql", "SELECT E'\\'; x' AS y"),  # E-string: \' escapes the quote
    ("postgresql", "SELECT 1 /* a /* nested */ ; */"),  # PostgreSQL comments nest
    ("postgresql", "SELECT 1 -- ; DROP\n"),  # a line comment
    ("postgresql", "SELECT a$b$c FROM t"),  # $ inside a name opens no dollar quote
    ("mysql", "SELECT 1 # ; DROP TABLE t\n"),  # MySQL's # comment
    ("mysql", "SELECT `a;b` FROM t"),  # backquoted name
    ("mysql", "SELECT 1 /*+ hint ; */"),  # an optimizer hint is a comment
    ("sqlite", "SELECT [a;b] FROM t"),  # SQLite's bracketed name
    ("hive", "SELECT 'it\\'s;' AS x"),  # Spark SQL: backslash escapes
]

SEVERAL = [
    ("postgresql", "SELECT 1; DROP TABLE t"),
    ("postgresql", "SELECT 1;; "),  # two statements (one empty)
    # standard_conforming_strings = off reads 'a\' as open: the two readings disagree, and
    # the one where the string ends at \' sees '; DROP ...' as code
    ("postgresql", "SELECT 'a\\'; DROP TABLE t; --'"),
    ("postgresql", "SELECT 1 /* a /* b */ */ ; DROP TABLE t"),
    ("sqlite", "SELECT 1 /* a /* b */ ; */"),  # SQLite comments do not nest: ; is code
    ("mysql", "SELECT 1 --; DROP TABLE t"),  # '--' without a space is no MySQL comment
    ("mysql", 'SELECT "a"; DROP TABLE t'),
    ("somethingelse", "SELECT 1 # x\n; DROP TABLE t"),  # an unknown dialect: every reading
]

UNREADABLE = [
    ("mysql", "SELECT 1 /*! ; DROP TABLE t */"),  # MySQL's executable comment
    ("mariadb", "SELECT 1 /*M!100000 ; DROP TABLE t */"),
    ("mysql", "SELECT 'a\\'; DROP TABLE t; --'"),  # MySQL: \' escapes: the string never ends
    ("postgresql", "SELECT 'open"),
    ("postgresql", "SELECT $x$ open"),
    ("postgresql", "SELECT 1 /* open"),
]


@pytest.mark.parametrize(("dialect", "text"), ONE)
def test_one_statement_is_kept(dialect: str, text: str) -> None:
    assert one_statement(text, dialect) == text


@pytest.mark.parametrize(("dialect", "text"), SEVERAL)
def test_a_second_statement_is_refused(dialect: str, text: str) -> None:
    with pytest.raises(InvalidInputError, match="more than one statement") as info:
        one_statement(text, dialect)
    assert "DROP" not in str(info.value)


@pytest.mark.parametrize(("dialect", "text"), UNREADABLE)
def test_what_is_left_open_or_executable_is_refused(dialect: str, text: str) -> None:
    with pytest.raises(InvalidInputError, match="give one complete statement") as info:
        one_statement(text, dialect)
    assert "DROP" not in str(info.value) and "open" not in str(info.value)


def test_a_final_semicolon_is_dropped_with_its_comment_kept() -> None:
    assert one_statement("SELECT 1; -- done\n", "postgresql") == "SELECT 1  -- done\n"
    assert one_statement("SELECT 1 ;", "mysql") == "SELECT 1  "


def test_empty_and_unpaired_queries() -> None:
    with pytest.raises(InvalidInputError, match="empty"):
        one_statement("  \n", "postgresql")
    with pytest.raises(InvalidInputError, match="parentheses do not pair up"):
        one_statement("SELECT 1) AS x UNION SELECT (2", "postgresql")


@pytest.mark.parametrize(
    ("dialect", "where"),
    [
        ("postgresql", "day = '2026-12-01'"),
        ("postgresql", "zip IN (SELECT zip FROM a UNION SELECT zip FROM b)"),  # inside ( )
        ("postgresql", "note = ')' AND x = 1"),  # ) inside a string
        ("mysql", "day = '2026-12-01' -- one day"),
        ("sqlite", "[day] = 'x'"),
    ],
)
def test_a_condition_is_kept_in_its_own_parentheses(dialect: str, where: str) -> None:
    assert filter_condition(where, dialect) == f"(\n{where}\n)"


@pytest.mark.parametrize(
    ("dialect", "where", "message"),
    [
        ("postgresql", "1 = 0 UNION SELECT * FROM swapped_in", "UNION"),
        ("postgresql", "1 = 0 union all select * from other", "UNION"),
        ("postgresql", "1 = 0 EXCEPT SELECT * FROM swapped_in", "UNION"),
        ("postgresql", "1 = 0) UNION SELECT * FROM swapped_in WHERE (1 = 1", "do not pair up"),
        ("postgresql", "day = 'd'; DROP TABLE t; COMMIT", "holds a ';'"),
        ("postgresql", "day = 'd';", "holds a ';'"),
        # MySQL reads \' as an escaped quote: the ) is code there, and closes WHERE (
        ("mysql", "a = 'x\\' ) UNION SELECT 1 -- '", "do not pair up"),
        ("postgresql", "a = 'x\\' ) UNION SELECT 1 -- '", "do not pair up"),  # scs = off
        ("postgresql", "x = (1", "do not pair up"),
    ],
)
def test_a_condition_that_is_not_only_a_filter_is_refused(
    dialect: str, where: str, message: str
) -> None:
    with pytest.raises(InvalidInputError, match=message) as info:
        filter_condition(where, dialect)
    assert "swapped_in" not in str(info.value) and "DROP" not in str(info.value)


@pytest.mark.parametrize(
    ("dialect", "sql", "shown"),
    [
        # strings and numbers become ?; names, quoted or not, and placeholders stay
        (
            "postgresql",
            "SELECT \"age 2\", t1.c3 FROM t1 WHERE g = 'male' AND a > 40.5 LIMIT %(param_1)s",
            'SELECT "age 2", t1.c3 FROM t1 WHERE g = ? AND a > ? LIMIT %(param_1)s',
        ),
        ("postgresql", "SELECT 1 FROM t WHERE a = $1 AND b = :p_2 AND c = 'it''s'", None),
        (
            "postgresql",
            "SELECT a FROM t WHERE b = $$x y$$ AND c = 1e5",
            "SELECT a FROM t WHERE b = ? AND c = ?",
        ),
        # comments may hold values: dropped
        ("postgresql", "SELECT a FROM t -- where a = 'x'\nWHERE b = 'y' /* 42 */", None),
        # MySQL: "..." is a string by default, `...` a name, \' an escaped quote
        (
            "mysql",
            "SELECT `a` FROM t WHERE b = \"male\" AND c = 'x\\'y' # 7",
            "SELECT `a` FROM t WHERE b = ? AND c = ?  ",
        ),
        ("sqlite", "SELECT [a b] FROM t WHERE c = 'z'", "SELECT [a b] FROM t WHERE c = ?"),
    ],
)
def test_literals_are_elided_and_names_kept(dialect: str, sql: str, shown: str | None) -> None:
    got = elide_literals(sql, dialect)
    assert got is not None
    if shown is not None:
        assert got == shown
    # no literal is left: no quote of a string, no value of the examples
    assert "'" not in got
    assert not {"male", "40.5", "42", "it", "x", "z", "7", "1e5"} & set(
        got.replace("=", " ").split()
    )


def test_a_statement_that_cannot_be_read_shows_nothing() -> None:
    assert elide_literals("SELECT a FROM t WHERE b = 'open", "postgresql") is None
