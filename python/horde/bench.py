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

__all__ = ["function", "command", "declared", "FunctionBenchmark", "CommandBenchmark"]

UNITS = ("s", "ms", "us", "ns")

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


def declared() -> list:
    """The benchmarks declared so far, in order."""
    return list(_declared)


def forget() -> None:
    """Forgets every declared benchmark (the worker does this before loading a file)."""
    _declared.clear()
