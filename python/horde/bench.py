"""Benchmarks for ``horde bench``: Python functions and shell commands, each with a parameter
matrix (every combination runs, as JMH's ``@Param``).

    from horde import bench

    @bench.function(params={"n": [1000, 2000]}, unit="ms")
    def busy(n):
        for _ in range(n):
            pass

    bench.command("sleep", "sleep {seconds}", params={"seconds": [0.01]})

``horde bench FILE.py`` runs every benchmark the file declares: each trial of a function in a
fresh Python process (``python -m horde.bench_worker``), its calls per iteration calibrated so
an iteration lasts about ``--iteration-time``; each trial of a command as fresh processes of
``sh -c``. The declarations are plain data; declaring runs nothing.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping, Optional

from .errors import DslError

__all__ = ["function", "command", "scenario", "declared", "FunctionBenchmark", "CommandBenchmark", "ScenarioBenchmark"]

UNITS = ("s", "ms", "us", "ns")
METRICS = ("mean", "p50", "p75", "p95", "p99", "throughput")

# The benchmarks the file being loaded declared, in order; the worker reads and resets it.
_declared: list = []


def _params(params: Optional[Mapping[str, Any]], where: str) -> tuple:
    if params is None:
        return ()
    if not isinstance(params, Mapping):
        raise DslError(f"{where}: params is a dict of name -> list of values, not {type(params).__name__}")
    result = []
    for name, values in params.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise DslError(f"{where}: parameter name {name!r} is not an identifier")
        if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
            values = [values]
        values = tuple(values)
        if not values:
            raise DslError(f"{where}: parameter {name!r} has no values")
        for value in values:
            if not isinstance(value, (int, float, str)) or isinstance(value, bool):
                raise DslError(f"{where}: parameter {name!r}: values are numbers or strings, not {value!r}")
        result.append((name, values))
    return tuple(result)


def _unit(unit: str, where: str) -> str:
    if unit not in UNITS:
        raise DslError(f"{where}: unit {unit!r} is not one of {', '.join(UNITS)}")
    return unit


def _check_name(name: str, where: str) -> str:
    if not isinstance(name, str) or not name or any(c.isspace() for c in name):
        raise DslError(f"{where}: a benchmark's name is a word without spaces, not {name!r}")
    if any(b.name == name for b in _declared):
        raise DslError(f"{where}: a benchmark named {name!r} is already declared")
    return name


@dataclasses.dataclass(frozen=True)
class FunctionBenchmark:
    """A Python function called with one combination of the parameters as keyword arguments."""

    name: str
    func: Callable
    params: tuple
    unit: str = "ms"

    def to_data(self) -> dict:
        return {
            "name": self.name,
            "kind": "function",
            "params": [{"name": n, "values": list(v)} for n, v in self.params],
            "unit": self.unit,
        }


@dataclasses.dataclass(frozen=True)
class CommandBenchmark:
    """A shell command; ``{name}`` in it (and in ``prepare``) is replaced by the parameter's value."""

    name: str
    command: str
    params: tuple
    prepare: Optional[str] = None
    unit: str = "ms"

    def to_data(self) -> dict:
        return {
            "name": self.name,
            "kind": "command",
            "command": self.command,
            "prepare": self.prepare,
            "params": [{"name": n, "values": list(v)} for n, v in self.params],
            "unit": self.unit,
        }


@dataclasses.dataclass(frozen=True)
class ScenarioBenchmark:
    """An HTTP scenario run by the engine, a fresh run per trial: ``users`` (a parameter, 1 when
    not declared) virtual users at once for the trial's warm-up and measured time."""

    name: str
    scenario: Any
    protocol: Any
    params: tuple
    metric: str = "mean"

    def to_data(self) -> dict:
        return {
            "name": self.name,
            "kind": "scenario",
            "params": [{"name": n, "values": list(v)} for n, v in self.params],
            "unit": "ms",
            "metric": self.metric,
        }

    def to_plan(self, values: dict, warmup_ms: int, measure_ms: int) -> dict:
        """The plan of one trial: the scenario (or what a callable makes of the values) with
        ``users`` concurrent users for warm-up + measured time, the warm-up not recorded."""
        from .chains import Scenario
        from .injection import constant_concurrent_users
        from .simulation import Simulation

        scn = self.scenario if isinstance(self.scenario, Scenario) else self.scenario(**values)
        if not isinstance(scn, Scenario):
            raise DslError(f"bench.scenario({self.name!r}): the callable returned {scn!r}, not a scenario(...)")
        total_ms = warmup_ms + measure_ms
        population = scn.inject(constant_concurrent_users(int(values.get("users", 1))).during(total_ms / 1000))
        options = (("warmup_ms", warmup_ms), ("max_duration_ms", total_ms))
        return Simulation((population,), (self.protocol,), self.name, options).to_plan()


def function(func=None, *, name=None, params=None, unit="ms"):
    """Declares a function benchmark; use as a decorator, with or without arguments. The
    function is returned unchanged, so it can still be called (and tested) directly.

    >>> from horde import bench
    >>> @bench.function(params={"n": [10, 20]}, unit="us")
    ... def count(n):
    ...     return sum(range(n))
    >>> count(n=10)
    45
    >>> bench.declared()[-1].to_data()["params"]
    [{'name': 'n', 'values': [10, 20]}]
    >>> bench.forget()
    """

    def declare(f):
        where = f"bench.function({getattr(f, '__name__', f)!r})"
        if not callable(f):
            raise DslError(f"{where}: decorates a function")
        _declared.append(
            FunctionBenchmark(
                name=_check_name(name or f.__name__, where), func=f, params=_params(params, where), unit=_unit(unit, where)
            )
        )
        return f

    return declare(func) if func is not None else declare


def command(name, command, *, params=None, prepare=None, unit="ms"):
    """Declares a shell command benchmark, run as ``sh -c COMMAND`` with its output discarded;
    ``prepare`` runs before each run, untimed (hyperfine's ``--prepare``).

    >>> from horde import bench
    >>> b = bench.command("gzip", "gzip -{level} -c big.bin", params={"level": [1, 6, 9]})
    >>> b.params
    (('level', (1, 6, 9)),)
    >>> bench.forget()
    """
    where = f"bench.command({name!r})"
    if not isinstance(command, str) or not command.strip():
        raise DslError(f"{where}: the command is a non-empty string")
    if prepare is not None and not isinstance(prepare, str):
        raise DslError(f"{where}: prepare is a command (a string)")
    declared_benchmark = CommandBenchmark(
        name=_check_name(name, where), command=command, params=_params(params, where), prepare=prepare, unit=_unit(unit, where)
    )
    _declared.append(declared_benchmark)
    return declared_benchmark


def scenario(scn, *, protocol, params=None, name=None, metric="mean"):
    """Declares an HTTP benchmark: each trial a fresh engine run of the scenario with ``users``
    concurrent users (a parameter, 1 when not declared), its warm-up excluded, its Score the
    ``metric`` of the OK requests (``mean``, ``p50``, ``p75``, ``p95``, ``p99`` latency in ms, or
    ``throughput`` in requests per second). ``scn`` may be a callable taking the parameters as
    keyword arguments and returning a scenario, so parameters can shape the requests.

    >>> from horde import bench, http, scenario
    >>> home = scenario("home").exec(http("home").get("/delay/{ms}"))
    >>> b = bench.scenario(home, protocol=http.base_url("http://127.0.0.1:8080"), params={"users": [1, 8]})
    >>> b.to_plan({"users": 8}, 1000, 2000)["scenarios"][0]["injection"]
    [{'type': 'constant_concurrent_users', 'users': 8, 'duration_ms': 3000}]
    >>> bench.forget()
    """
    from .chains import Scenario
    from .http import HttpProtocol

    where = f"bench.scenario({name or getattr(scn, 'name', scn)!r})"
    if not isinstance(scn, Scenario) and not callable(scn):
        raise DslError(f"{where}: takes a scenario(...) or a callable returning one")
    if not isinstance(protocol, HttpProtocol):
        raise DslError(f"{where}: protocol is http.base_url(...)")
    if metric not in METRICS:
        raise DslError(f"{where}: metric {metric!r} is not one of {', '.join(METRICS)}")
    checked = _params(params, where)
    for param_name, values in checked:
        if param_name == "users" and any(not isinstance(v, int) or v < 1 for v in values):
            raise DslError(f"{where}: users are whole numbers of at least 1")
    default_name = scn.name if isinstance(scn, Scenario) else getattr(scn, "__name__", "scenario")
    declared_benchmark = ScenarioBenchmark(
        name=_check_name(name or default_name.replace(" ", "_"), where), scenario=scn, protocol=protocol, params=checked,
        metric=metric,
    )
    _declared.append(declared_benchmark)
    return declared_benchmark


def declared() -> list:
    """The benchmarks declared so far, in order."""
    return list(_declared)


def forget() -> None:
    """Forgets every declared benchmark (the worker does this before loading a file)."""
    _declared.clear()
