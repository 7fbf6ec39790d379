"""CQL inside scenarios: statements on an Apache Cassandra (or ScyllaDB) cluster, timed on their
rows like requests, their rows checked, values saved for the next step.

The cluster is a protocol, as ``http.base_url(...)`` is::

    >>> from horde import cql, row_count, column
    >>> cluster = cql.cluster("127.0.0.1:9042", keyspace="shop").consistency("local_quorum")
    >>> cluster.to_plan()["contact_points"], cluster.to_plan()["consistency"]
    (['127.0.0.1:9042'], 'local_quorum')

Statements write their parameters ``?`` as every CQL driver does; ``params`` are templates,
converted to each marker's column type (an int, a uuid, a timestamp in milliseconds...). Each
worker prepares a statement once::

    >>> find = (cql("find subscriptions").query("SELECT id FROM subscriptions WHERE source = ?",
    ...                                         params=["${source}"])
    ...         .check(row_count().gte(1), column("id").find(0).save_as("id")))
    >>> step = find.to_step()
    >>> step["type"], step["params"], step["checks"][1]["save_as"]
    ('cql', ['${source}'], 'id')

``execute_async`` sends a write without waiting, as a driver's ``executeAsync``: the user goes
on at once, and the statement is still timed and counted when its answer comes. Read it back
with ``eventually(...)`` until the cluster agrees::

    >>> cql("delete").execute_async("DELETE FROM subscriptions WHERE source = ?", params=["${source}"]).to_step()["asynchronous"]
    True

Writes go together in a batch (``logged`` by default: all or none)::

    >>> order = cql("order").batch(cql.write("INSERT INTO orders (id, total) VALUES (?, ?)", params=["${id}", "9"]),
    ...                            cql.write("UPDATE totals SET n = n + 1 WHERE day = ?", params=["${day}"]),
    ...                            kind="unlogged")
    >>> [s["cql"][:6] for s in order.to_step()["statements"]], order.to_step()["kind"]
    (['INSERT', 'UPDATE'], 'unlogged')

A large result comes in pages, each a round trip, all read and timed as one::

    >>> cql("history").query("SELECT * FROM events WHERE user = ?", params=["${id}"]).page_size(100).to_step()["page_size"]
    100

A lightweight transaction answers whether it was applied; TTLs and timestamps are parameters too::

    >>> claim = (cql("claim").query("INSERT INTO seats (id, owner) VALUES (?, ?) IF NOT EXISTS USING TTL ?",
    ...                             params=["${seat}", "${__user_id}", "600"])
    ...          .serial_consistency("local_serial").check(applied().is_("true")))
    >>> claim.to_step()["checks"][0]["source"]
    {'type': 'column', 'name': '[applied]'}

One operation of a YCSB core workload (what ``horde cql`` runs), in a scenario of your own: beside
the HTTP journey that causes the writes, under a sweep, or with your own loop and injection.
Each operation is a row of its own (``READ``, ``UPDATE``, ``INSERT``, ``SCAN``,
``READ-MODIFY-WRITE``); the table is YCSB's ``usertable`` (``horde cql --phase load`` makes and
fills it)::

    >>> cql.ycsb("b", record_count=100_000).to_step()
    {'type': 'cql_ycsb', 'phase': 'run', 'record_count': 100000, 'workload': 'b'}
    >>> cql.ycsb(record_count=1000, proportions={"read": 9, "scan": 1}, distribution="uniform").to_step()["proportions"]
    {'read': 9, 'scan': 1}
"""

from dataclasses import dataclass, replace
from typing import Optional

from ._protocol import Protocol, Step
from .checks import Check
from .errors import DslError
# Parameters and names are checked as SQL's are: templates or numbers, non-empty text.
from .sql import _params, _text

CONSISTENCIES = ("any", "one", "two", "three", "quorum", "all", "local_quorum", "each_quorum", "local_one",
                 "serial", "local_serial")
SERIAL_CONSISTENCIES = ("serial", "local_serial")


def _level(value, levels, what):
    level = str(value).lower()
    if level not in levels:
        raise DslError(f"{what}: {value!r} is not a consistency level: one of {', '.join(levels)}")
    return level


class _Levels:
    """The consistency levels a statement or a batch sets for itself (``level``, ``serial_level``)."""

    def consistency(self, level):
        """This statement's or batch's consistency (``quorum``, ``local_quorum``, ``all``...)."""
        return replace(self, level=_level(level, CONSISTENCIES, "consistency()"))

    def serial_consistency(self, level):
        """A lightweight transaction's Paxos consistency (``serial`` or ``local_serial``)."""
        return replace(self, serial_level=_level(level, SERIAL_CONSISTENCIES, "serial_consistency()"))


@dataclass(frozen=True)
class CqlCluster(Protocol):
    """The Cassandra cluster ``cql`` steps run on: ``cql.cluster("host:port", ...)``. Pass it to
    ``setup(..., protocol=[cluster])``."""

    hint = "cql.cluster(...)"

    contact_points: tuple
    keyspace: Optional[str] = None
    local_datacenter: Optional[str] = None
    user: Optional[str] = None
    password: Optional[str] = None
    default_consistency: str = "local_one"
    request_timeout_ms: int = 10_000
    tls_settings: Optional[dict] = None
    pool_size_per_host: Optional[int] = None

    def consistency(self, level):
        """Statements' consistency unless one sets its own (``local_one`` by default, as drivers)."""
        return replace(self, default_consistency=_level(level, CONSISTENCIES, "consistency()"))

    def credentials(self, user, password):
        """Password authentication."""
        return replace(self, user=_text(user, "credentials()"), password=_text(password, "credentials()"))

    def timeout(self, seconds):
        """How long a statement may take before it fails with ``request_timeout``."""
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds <= 0:
            raise DslError(f"timeout() takes seconds, more than 0; got {seconds!r}")
        return replace(self, request_timeout_ms=int(seconds * 1000))

    def tls(self, ca_file=None, verify=True):
        """TLS to every node (Cassandra's ``client_encryption_options``): each node's certificate
        verified against the system's roots and the certificate authorities of ``ca_file`` (a PEM
        file, relative to the simulation); it must list the node's IP address. ``verify=False``
        accepts any certificate."""
        if not isinstance(verify, bool):
            raise DslError(f"tls(verify=...) is True or False; got {verify!r}")
        settings = {"verify": verify}
        if ca_file is not None:
            if not verify:
                raise DslError("tls(): a ca_file is for verifying certificates, not with verify=False")
            settings["ca_file"] = _text(str(ca_file), "tls(ca_file=...)")
        return replace(self, tls_settings=settings)

    def pool_size(self, connections):
        """Connections each worker thread keeps to each node (1 by default)."""
        if isinstance(connections, bool) or not isinstance(connections, int) or connections < 1:
            raise DslError(f"pool_size() takes a number of connections, at least 1; got {connections!r}")
        return replace(self, pool_size_per_host=connections)

    @classmethod
    def check_given(cls, given):
        if len(given) > 1:
            raise DslError("a simulation has one CQL cluster: give cql.cluster(...) once")

    @classmethod
    def into_plan(cls, plan, given):
        if given:
            plan["cql"] = given[0].to_plan()

    def to_plan(self):
        plan = {"contact_points": list(self.contact_points), "consistency": self.default_consistency,
                "request_timeout_ms": self.request_timeout_ms}
        for key in ("keyspace", "local_datacenter", "user", "password", "pool_size_per_host"):
            if getattr(self, key) is not None:
                plan[key] = getattr(self, key)
        if self.tls_settings is not None:
            plan["tls"] = dict(self.tls_settings)
        return plan


@dataclass(frozen=True)
class CqlStatement(_Levels, Step):
    """One CQL statement; every method returns a new one."""

    hint = "a CQL statement (cql(...).query(...))"

    name: str
    statement: str
    params: tuple = ()
    checks: tuple = ()
    asynchronous: bool = False
    level: Optional[str] = None
    serial_level: Optional[str] = None
    rows_per_page: Optional[int] = None

    def page_size(self, rows):
        """Fetch the result in pages of ``rows`` rows, each a round trip, all of them read and
        timed as one (without it, the whole result comes in one page)."""
        if isinstance(rows, bool) or not isinstance(rows, int) or rows < 1:
            raise DslError(f"page_size() takes a number of rows, at least 1; got {rows!r}")
        if self.asynchronous:
            raise DslError("page_size(): an asynchronous statement's rows are not read")
        return replace(self, rows_per_page=rows)

    def check(self, *checks):
        """Checks on the rows: ``row_count()``, ``column(name)``, ``response_time_in_millis()``."""
        if self.asynchronous:
            raise DslError("an asynchronous statement is not checked: the user has gone on; "
                           "read the rows back with a query inside eventually(...)")
        for check in checks:
            if not isinstance(check, Check):
                raise DslError(f"check() takes checks such as row_count() or column('id'), got {check!r}")
        return replace(self, checks=self.checks + tuple(checks))

    def to_step(self):
        step = {"type": "cql", "name": self.name, "cql": self.statement}
        if self.params:
            step["params"] = list(self.params)
        if self.level is not None:
            step["consistency"] = self.level
        if self.serial_level is not None:
            step["serial_consistency"] = self.serial_level
        if self.asynchronous:
            step["asynchronous"] = True
        if self.rows_per_page is not None:
            step["page_size"] = self.rows_per_page
        if self.checks:
            step["checks"] = [c.to_plan() for c in self.checks]
        return step


@dataclass(frozen=True)
class CqlWrite:
    """One write of a batch: ``cql.write("INSERT ...", params=[...])``."""

    statement: str
    params: tuple = ()

    def to_plan(self):
        plan = {"cql": self.statement}
        if self.params:
            plan["params"] = list(self.params)
        return plan


@dataclass(frozen=True)
class CqlBatchStep(_Levels, Step):
    """Writes sent together as one batch, timed on one row."""

    name: str
    writes: tuple
    kind: str = "logged"
    checks: tuple = ()
    level: Optional[str] = None
    serial_level: Optional[str] = None

    def check(self, *checks):
        """Checks on the answer: a conditional batch's ``applied()``."""
        for check in checks:
            if not isinstance(check, Check):
                raise DslError(f"check() takes checks such as applied() or row_count(), got {check!r}")
        return replace(self, checks=self.checks + tuple(checks))

    def to_step(self):
        step = {"type": "cql_batch", "name": self.name, "kind": self.kind,
                "statements": [write.to_plan() for write in self.writes]}
        if self.level is not None:
            step["consistency"] = self.level
        if self.serial_level is not None:
            step["serial_consistency"] = self.serial_level
        if self.checks:
            step["checks"] = [c.to_plan() for c in self.checks]
        return step


YCSB_WORKLOADS = ("a", "b", "c", "d", "e", "f")
YCSB_OPERATIONS = ("read", "update", "insert", "scan", "read_modify_write")
YCSB_DISTRIBUTIONS = ("zipfian", "uniform", "latest")


@dataclass(frozen=True)
class CqlYcsbStep(Step):
    """One operation of a YCSB workload: ``cql.ycsb(...)``."""

    hint = "a YCSB operation (cql.ycsb(...))"

    fields: tuple  # (key, value) pairs of the plan step, in order

    def to_step(self):
        return {"type": "cql_ycsb", **dict(self.fields)}


def _ycsb(workload=None, *, record_count, phase="run", table=None, operation_count=None, proportions=None,
          distribution=None, insert_start=None, field_count=None, field_length=None, read_all_fields=None,
          write_all_fields=None, max_scan_length=None, consistency=None):
    if phase not in ("load", "run"):
        raise DslError(f"cql.ycsb(): phase is load or run, not {phase!r}")
    letter = None if workload is None else str(workload).lower().removeprefix("workload")
    if letter is not None and letter not in YCSB_WORKLOADS:
        raise DslError(f"cql.ycsb(): {workload!r} is not a core workload: one of {', '.join(YCSB_WORKLOADS)}")
    if phase == "run" and workload is None and not proportions:
        raise DslError('cql.ycsb(): the run phase needs a workload ("a" to "f") or proportions={"read": 1, ...}')
    if proportions is not None:
        unknown = set(proportions) - set(YCSB_OPERATIONS)
        if unknown:
            raise DslError(f"cql.ycsb(): proportions of {', '.join(sorted(unknown))}: the operations are "
                           f"{', '.join(YCSB_OPERATIONS)}")
    if distribution is not None and distribution not in YCSB_DISTRIBUTIONS:
        raise DslError(f"cql.ycsb(): distribution is one of {', '.join(YCSB_DISTRIBUTIONS)}, not {distribution!r}")
    fields = [("phase", phase), ("record_count", record_count)]
    optional = [("workload", letter),
                ("table", table), ("operation_count", operation_count),
                ("proportions", None if proportions is None else dict(proportions)),
                ("request_distribution", distribution), ("insert_start", insert_start),
                ("field_count", field_count), ("field_length", field_length), ("read_all_fields", read_all_fields),
                ("write_all_fields", write_all_fields), ("max_scan_length", max_scan_length),
                ("consistency", None if consistency is None else _level(consistency, CONSISTENCIES, "cql.ycsb()"))]
    fields += [(key, value) for key, value in optional if value is not None]
    # Numbers and the rest are checked with the plan, each under its path.
    return CqlYcsbStep(tuple(fields))


class _StatementName:
    def __init__(self, name):
        self.name = _text(name, "cql()")

    def query(self, statement, params=None):
        """A statement whose rows are read (``SELECT``, a lightweight transaction's ``[applied]``)."""
        return CqlStatement(self.name, _text(statement, "query()"), _params(params, "query()"))

    def execute(self, statement, params=None):
        """A write (``INSERT``, ``UPDATE``, ``DELETE``), waited for."""
        return CqlStatement(self.name, _text(statement, "execute()"), _params(params, "execute()"))

    def batch(self, *writes, kind="logged"):
        """Writes (``cql.write(...)``) sent as one batch: ``logged`` (all applied or none, the
        default), ``unlogged`` or ``counter``."""
        if not writes:
            raise DslError("batch() needs at least one cql.write(...)")
        for write in writes:
            if not isinstance(write, CqlWrite):
                raise DslError(f"batch() takes cql.write(...) statements, got {write!r}")
        if kind not in ("logged", "unlogged", "counter"):
            raise DslError(f"batch(): kind is logged, unlogged or counter, not {kind!r}")
        return CqlBatchStep(self.name, tuple(writes), kind)

    def execute_async(self, statement, params=None):
        """A write sent without waiting (``executeAsync``): timed and counted when it is answered."""
        return CqlStatement(self.name, _text(statement, "execute_async()"), _params(params, "execute_async()"),
                            asynchronous=True)


class _Cql:
    """``cql(name)`` starts a statement or a batch; ``cql.cluster(...)`` names the cluster;
    ``cql.write(...)`` is one write of a batch."""

    def __call__(self, name):
        return _StatementName(name)

    def cluster(self, *contact_points, keyspace=None, local_datacenter=None):
        """Nodes to reach first, ``"host:port"`` (9042 when left out); the driver finds the rest."""
        if not contact_points:
            raise DslError('cql.cluster() needs a node: cql.cluster("127.0.0.1:9042")')
        points = tuple(_text(point, "cql.cluster()") for point in contact_points)
        return CqlCluster(points, keyspace=keyspace, local_datacenter=local_datacenter)

    def write(self, statement, params=None):
        """One write of a batch (``cql(name).batch(...)``)."""
        return CqlWrite(_text(statement, "cql.write()"), _params(params, "cql.write()"))

    def ycsb(self, workload=None, *, record_count, **options):
        """One YCSB operation on the cluster's ``usertable``: the core ``workload`` (``"a"`` to
        ``"f"``: its mix and key chooser) or ``proportions={"read": .., "update": .., "insert":
        .., "scan": .., "read_modify_write": ..}`` with ``distribution`` (``zipfian``,
        ``uniform``, ``latest``); ``record_count`` records loaded (the keys read); also
        ``phase="load"`` (an insert of the next record), ``table``, ``operation_count``,
        ``insert_start``, ``field_count``, ``field_length``, ``read_all_fields``,
        ``write_all_fields``, ``max_scan_length``, ``consistency``, as ``horde cql``'s flags."""
        return _ycsb(workload, record_count=record_count, **options)


cql = _Cql()


def applied():
    """Whether a lightweight transaction (``INSERT ... IF NOT EXISTS``, ``UPDATE ... IF ...``) was
    applied: its ``[applied]`` column, ``true`` or ``false``: ``applied().is_("true")``."""
    return Check({"type": "column", "name": "[applied]"})
