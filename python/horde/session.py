"""Session functions: Python code run with a virtual user's session, Gatling's
``exec(session => ...)``, and ``before``/``after`` hooks for the whole run.

Everything else in a plan runs natively; a session function runs under Python's global lock and
blocks the worker that calls it, so use one only for what templates, conditions and checks
cannot say. Their calls and time are in the summary (``generator.session_functions``).

    >>> s = Session({"n": "3"}, user_id=7, scenario="shop")
    >>> s.set("total", int(s.get("n")) * 2).get("total")
    6
    >>> s.contains("missing"), s.user_id, s.scenario
    (False, 7, 'shop')
    >>> s.remove("n").contains("n")
    False
"""

import json
import traceback

from .errors import DslError

_MISSING = object()


class Session:
    """A user's variables as a function sees them: text, or what JSON holds (lists, numbers,
    objects). Methods that change it return it, so ``lambda s: s.set("a", 1).remove("b")``
    works as in Gatling."""

    def __init__(self, variables, user_id, scenario):
        self._variables = dict(variables)
        self._changes = {}
        self.user_id = user_id
        self.scenario = scenario

    def get(self, name, default=None):
        return self._variables.get(name, default)

    def __getitem__(self, name):
        try:
            return self._variables[name]
        except KeyError:
            raise KeyError(f"the session has no variable {name!r}") from None

    def contains(self, name):
        return name in self._variables

    __contains__ = contains

    def set(self, name, value):
        if not isinstance(name, str) or not name:
            raise DslError(f"session.set() needs a variable name, got {name!r}")
        if value is None:
            return self.remove(name)
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            raise DslError(f"session.set({name!r}, ...): {value!r} cannot be held (text, numbers, lists, dicts)") from None
        self._variables[name] = value
        self._changes[name] = value
        return self

    def set_all(self, values):
        for name, value in dict(values).items():
            self.set(name, value)
        return self

    def remove(self, name):
        self._variables.pop(name, None)
        self._changes[name] = None
        return self

    def __repr__(self):
        return f"Session(user_id={self.user_id}, scenario={self.scenario!r}, {self._variables!r})"


_functions = {}
_hooks = {"before": [], "after": []}


def register(function, where):
    """A key for ``function``, which session_function steps name."""
    if not callable(function):
        raise DslError(f"{where} takes a function of the session, got {function!r}")
    for key, known in _functions.items():
        if known is function:
            return key
    name = getattr(function, "__qualname__", "function")
    key = f"{name}#{len(_functions) + 1}"
    _functions[key] = function
    return key


def describe(function):
    """How a function's row is named: ``<lambda> (sim.py:12)``."""
    name = getattr(function, "__qualname__", "function")
    code = getattr(function, "__code__", None)
    if code is None:
        return name
    import os

    return f"{name} ({os.path.basename(code.co_filename)}:{code.co_firstlineno})"


def before(function):
    """Run ``function()`` once before the run starts (Gatling's ``before``); usable as a
    decorator."""
    if not callable(function):
        raise DslError(f"before() takes a function, got {function!r}")
    _hooks["before"].append(function)
    return function


def after(function):
    """Run ``function(summary)`` once after the run, with the summary as a dict (Gatling's
    ``after``); usable as a decorator."""
    if not callable(function):
        raise DslError(f"after() takes a function, got {function!r}")
    _hooks["after"].append(function)
    return function


def forget_loaded():
    """Forgets the functions and hooks of the simulations loaded so far: the next one loaded
    registers its own from the first key (a cluster's worker loads a simulation per run)."""
    _functions.clear()
    _hooks["before"].clear()
    _hooks["after"].clear()


def _has_any():
    return bool(_functions or _hooks["before"] or _hooks["after"])


def _failure(error):
    """The error in words, with where in the user's code it was raised."""
    frames = traceback.extract_tb(error.__traceback__)
    where = f" ({frames[-1].filename.rsplit('/', 1)[-1]}:{frames[-1].lineno})" if frames else ""
    return f"{type(error).__name__}: {error}{where}"


def _call(key, user_id, scenario, variables):
    """What the engine calls: runs the function, returns its changes as JSON text. An
    exception comes back as a RuntimeError whose message is the engine's KO message."""
    function = _functions.get(key)
    if function is None:
        raise RuntimeError(f"no session function {key!r} in this process")
    session = Session(json.loads(variables), user_id, scenario)
    try:
        result = function(session)
    except Exception as error:  # the user's code: any error is a KO of this call
        raise RuntimeError(_failure(error)) from None
    if result is not None and result is not session:
        if isinstance(result, Session):
            session = result
        else:
            raise RuntimeError(f"a session function returns the session or None, not {type(result).__name__}")
    return json.dumps(session._changes)


def _before():
    for hook in _hooks["before"]:
        try:
            hook()
        except Exception as error:
            raise RuntimeError(f"before hook {describe(hook)}: {_failure(error)}") from None


def _after(summary):
    parsed = json.loads(summary)
    for hook in _hooks["after"]:
        try:
            hook(parsed)
        except Exception as error:
            raise RuntimeError(f"after hook {describe(hook)}: {_failure(error)}") from None
