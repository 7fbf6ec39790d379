"""SQL inside scenarios: statements on PostgreSQL, MariaDB/MySQL or SQLite, timed on their rows
like requests, their results checked, values saved for the next step (an HTTP request or
another statement).

A database is a protocol, as ``http.base_url(...)`` is; a plan may have several, by name::

    >>> from horde import sql, row_count, column
    >>> db = sql.url("postgres://app:secret@127.0.0.1:5432/shop").pool(8)
    >>> db.to_plan()
    {'name': 'default', 'url': 'postgres://app:secret@127.0.0.1:5432/shop', 'pool_size': 8}

Statements write their parameters ``$1``, ``$2``... whatever the database (horde writes them
as MySQL's ``?`` or SQLite's ``?1``); ``params`` are templates, bound as text that the
database converts to the placeholder's type::

    >>> find = (sql("find user").query("SELECT id, name FROM users WHERE email = $1", params=["${email}"])
    ...         .check(row_count().is_(1), column("id").find(0).save_as("user_id")))
    >>> step = find.to_step()
    >>> step["kind"], step["params"], step["checks"][1]["save_as"]
    ('query', ['${email}'], 'user_id')

``query`` reads the rows a statement returns (``row_count()`` counts them, ``column(name)``
reads a column's values, one per row, NULL being no value); ``execute`` counts the rows it
changed. ``sql.begin()``, ``sql.commit()`` and ``sql.rollback()`` make a transaction of the
statements between them, on one connection even when pooled::

    >>> [s.to_step()["action"] for s in (sql.begin(), sql.commit(), sql.rollback("reports"))]
    ['begin', 'commit', 'rollback']
"""

from dataclasses import dataclass, replace
from typing import Optional

from ._protocol import Protocol, Step
from .checks import Check
from .errors import DslError

_SCHEMES = ("sqlite:", "postgres://", "postgresql://", "mysql://", "mariadb://")


def _text(value, what):
    if not isinstance(value, str) or not value.strip():
        raise DslError(f"{what} needs a non-empty string, got {value!r}")
    return value


@dataclass(frozen=True)
class SqlDatabase(Protocol):
    """A database scenarios run statements on: ``sql.url(...)``, optionally ``.pool(n)`` and
    ``.named(name)``. Pass it to ``setup(..., protocol=[http.base_url(...), db])``."""

    hint = "sql.url(...)"

    url: str
    name: str = "default"
    pool_size: Optional[int] = None

    def pool(self, size):
        """Share ``size`` connections between the users (split between the workers, at least
        one each), as an application's pool: a statement waits for a free connection, and
        that wait is in its latency. Without it, each user has a connection of its own."""
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise DslError(f"pool() takes a number of connections, 1 or more; got {size!r}")
        return replace(self, pool_size=size)

    def named(self, name):
        """The name steps use to choose this database (``sql("q").on(name)``) when a plan has
        several."""
        return replace(self, name=_text(name, "named()"))

    @classmethod
    def check_given(cls, given):
        names = [d.name for d in given]
        for name in names:
            if names.count(name) > 1:
                raise DslError(f"two databases are named {name!r}: name them apart with sql.url(...).named(...)")

    @classmethod
    def into_plan(cls, plan, given):
        if given:
            plan["databases"] = [database.to_plan() for database in given]

    def to_plan(self):
        plan = {"name": self.name, "url": self.url}
        if self.pool_size is not None:
            plan["pool_size"] = self.pool_size
        return plan


@dataclass(frozen=True)
class SqlStatement(Step):
    """One statement; every method returns a new one."""

    hint = "a SQL statement (sql(...).query(...), sql.begin(), ...)"

    name: str
    kind: str
    statement: str
    params: tuple = ()
    checks: tuple = ()
    database: Optional[str] = None

    def check(self, *checks):
        """Checks on the result: ``row_count()``, ``column(name)``, ``response_time_in_millis()``."""
        for check in checks:
            if not isinstance(check, Check):
                raise DslError(f"check() takes checks such as row_count() or column('id'), got {check!r}")
        return replace(self, checks=self.checks + tuple(checks))

    def on(self, database):
        """Run on the plan's database of this name."""
        return replace(self, database=_text(database, "on()"))

    def to_step(self):
        step = {"type": "sql", "name": self.name, "kind": self.kind, "sql": self.statement}
        if self.database is not None:
            step["database"] = self.database
        if self.params:
            step["params"] = list(self.params)
        if self.checks:
            step["checks"] = [c.to_plan() for c in self.checks]
        return step


def _params(params, what):
    if params is None:
        return ()
    if isinstance(params, (str, bytes)) or not isinstance(params, (list, tuple)):
        raise DslError(f"{what}: params is a list of values (templates), got {params!r}")
    converted = []
    for value in params:
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise DslError(f"{what}: a parameter is text (a template) or a number, got {value!r}")
        converted.append(str(value))
    return tuple(converted)


class _StatementName:
    def __init__(self, name):
        self.name = _text(name, "sql()")

    def query(self, statement, params=None):
        """A statement whose rows are read (``SELECT``, ``INSERT ... RETURNING``)."""
        return SqlStatement(self.name, "query", _text(statement, "query()"), _params(params, "query()"))

    def execute(self, statement, params=None):
        """A statement whose changed rows are counted (``INSERT``, ``UPDATE``, ``DELETE``)."""
        return SqlStatement(self.name, "execute", _text(statement, "execute()"), _params(params, "execute()"))


@dataclass(frozen=True)
class SqlTransactionStep(Step):
    action: str
    database: Optional[str] = None

    def to_step(self):
        step = {"type": "sql_transaction", "action": self.action}
        if self.database is not None:
            step["database"] = self.database
        return step


class _Sql:
    """``sql(name)`` starts a statement; ``sql.url(...)`` a database; ``sql.begin()``,
    ``sql.commit()`` and ``sql.rollback()`` control a transaction (rows ``BEGIN``, ``COMMIT``,
    ``ROLLBACK``)."""

    def __call__(self, name):
        return _StatementName(name)

    def url(self, url):
        """``sqlite:///path/file.db`` (relative: ``sqlite://file.db``, next to the simulation),
        ``postgres://user:password@host:port/database`` or ``mysql://user:password@host:port/database``."""
        url = _text(url, "sql.url()")
        if not url.startswith(_SCHEMES):
            raise DslError(f"sql.url(): {url!r} is not a database URL: sqlite:///path/file.db, "
                           "postgres://user:password@host:port/database or mysql://user:password@host:port/database")
        return SqlDatabase(url)

    def begin(self, database=None):
        return SqlTransactionStep("begin", database)

    def commit(self, database=None):
        return SqlTransactionStep("commit", database)

    def rollback(self, database=None):
        return SqlTransactionStep("rollback", database)


sql = _Sql()


def row_count():
    """A statement's rows: how many a query returned, or an ``execute`` changed:
    ``row_count().is_(1)``."""
    return Check({"type": "row_count"})


def column(name):
    """A query's values in the column ``name``, one per row, as text (``find(n)`` picks a row,
    ``find_all()`` takes them all, ``count()`` counts the non-NULL ones); NULL is no value:
    ``column("email").find(0).save_as("email")``."""
    return Check({"type": "column", "name": _text(name, "column()")})
