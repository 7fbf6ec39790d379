"""``setup()``: scenarios, protocol and run options become a Simulation, which becomes a Plan.

A simulation file calls ``setup(...)`` once; ``horde run sim.py`` runs what it set up::

    >>> from horde import setup, scenario, http, at_once_users
    >>> sim = setup(scenario("s").exec(http("home").get("/")).inject(at_once_users(1)),
    ...             protocol=http.base_url("http://127.0.0.1:8080"), max_duration=60)
    >>> sim.to_plan()["options"]["max_duration_ms"]
    60000

Parameters come from ``-D name=value`` on the command line, then the environment, then the
default, as seed 004 passes URL, users and ramp time::

    >>> from horde import param
    >>> param("users", 10)
    10
"""

import copy
import json
import os
from dataclasses import dataclass, replace
from typing import Optional

from ._durations import to_ms, to_us
from ._protocol import Protocol
from .assertions import threshold_texts
from .chains import Population
from .errors import DslError, ParameterError
from .feeders import collect_feeders

PLAN_VERSION = 1


class _Loading:
    """What the loader shares with the simulation file it is running."""

    def __init__(self):
        self.params = {}
        # The names param() was asked for: a -D that none of them is, is a typo.
        self.read = set()
        self.simulation = None
        self.base_dir = None
        # The module run as the simulation (the loader's run_name): setup() called while
        # another module is being imported (a helper taken from another simulation) is not
        # this simulation's.
        self.module_name = None


_loading = _Loading()


def param(name, default=None, type=None):
    """A simulation parameter: ``-D name=value``, else the environment variable ``name``,
    else ``default``. Converted to ``type``, or to the type of ``default``. A ``-D`` that no
    ``param()`` call of the simulation asks for is refused as a typo (exit 2)."""
    _loading.read.add(name)
    if name in _loading.params:
        raw = _loading.params[name]
    elif name in os.environ:
        raw = os.environ[name]
    elif default is not None:
        return default
    else:
        raise ParameterError(f"parameter {name!r} is not set: pass -D {name}=VALUE or set the environment variable {name}")
    convert = type or (default.__class__ if default is not None else str)
    if convert is bool:
        lowered = raw.strip().lower()
        if lowered in ("1", "true", "yes", "on"):
            return True
        if lowered in ("0", "false", "no", "off"):
            return False
        raise ParameterError(f"parameter {name!r}: {raw!r} is not a boolean")
    try:
        return convert(raw)
    except (TypeError, ValueError):
        raise ParameterError(f"parameter {name!r}: {raw!r} is not a valid {convert.__name__}") from None


@dataclass(frozen=True)
class Simulation:
    """An immutable simulation; methods return new ones (the newest is the one that runs)."""

    populations: tuple
    #: The protocols' settings (HTTP's, databases): instances of :class:`horde._protocol.Protocol`.
    protocols_given: tuple = ()
    name: Optional[str] = None
    options: tuple = ()
    thresholds: tuple = ()

    def _derive(self, **changes):
        derived = replace(self, **changes)
        if _loading.simulation is self:
            _loading.simulation = derived
        return derived

    def protocols(self, *protocols):
        """Gatling's ``.protocols(httpProtocol, ...)``: an ``http`` protocol and databases
        (``sql.url(...)``)."""
        given = _checked_protocols(protocols)
        kinds = {type(p) for p in given}
        kept = tuple(p for p in self.protocols_given if type(p) not in kinds)
        return self._derive(protocols_given=kept + given)

    def max_duration(self, seconds):
        return self._derive(options=self.options + (("max_duration_ms", to_ms(seconds, "max_duration")),))

    def throttle(self, *steps):
        """Gatling's ``.throttle(reachRps(100).in(10), holdFor(60))``: caps the request rate."""
        return self._derive(options=self.options + (("throttle", _throttle_steps(steps)),))

    def assertions(self, *assertions):
        """Gatling's ``.assertions(...)``: ``global_().response_time().percentile(99).lt(500)``,
        ``for_all().failed_requests().percent().lte(1)``, ``details("checkout", "pay")...``, or
        threshold strings (``"p99<500ms"``). They become the plan's thresholds; a failed one makes
        ``horde run`` exit 99 (docs/thresholds.md)."""
        return self._derive(thresholds=self.thresholds + tuple(threshold_texts(assertions)))

    def to_plan(self):
        options = {}
        for key, value in self.options:
            # "cluster.spares" goes to options["cluster"]["spares"].
            section, _, field = key.rpartition(".")
            (options.setdefault(section, {}) if section else options)[field] = value
        # Copied whole: the feeders are taken out of the steps, and chains are shared.
        scenarios = copy.deepcopy([plan for p in self.populations for plan in p.to_plans()])
        feeders = collect_feeders(scenarios)
        plan = {
            "version": PLAN_VERSION,
            "name": self.name or (self.populations[0].scenario.name if self.populations else "simulation"),
        }
        for kind in Protocol.kinds():
            kind.into_plan(plan, [p for p in self.protocols_given if isinstance(p, kind)])
        plan["scenarios"] = scenarios
        plan["options"] = options
        if feeders:
            plan["feeders"] = feeders
        if self.thresholds:
            plan["thresholds"] = list(self.thresholds)
        if _loading.base_dir is not None:
            plan["base_dir"] = _loading.base_dir
        return plan

    def to_json(self, indent=2):
        return json.dumps(self.to_plan(), indent=indent)


_OPTION_NAMES = {
    "max_duration": ("max_duration_ms", lambda v: to_ms(v, "max_duration")),
    "seed": ("seed", int),
    "on_check_failure": ("on_check_failure", str),
    "percentiles": ("percentiles", lambda v: [float(p) for p in v]),
    "response_time_bounds_ms": ("response_time_bounds_ms", lambda v: [int(b) for b in v]),
    "max_requests": ("max_requests", int),
    "workers": ("workers", int),
    "graceful_stop": ("graceful_stop_ms", lambda v: to_ms(v, "graceful_stop")),
    "throttle": ("throttle", lambda v: _throttle_steps(v if isinstance(v, (list, tuple)) else [v])),
    "late_start_threshold": ("late_start_threshold_us", lambda v: to_us(v, "late_start_threshold")),
    # A run on several machines (--cluster): the plan's options.cluster, as the flags name it.
    "on_worker_loss": ("cluster.on_worker_loss", lambda v: _choice(v, "on_worker_loss", _WORKER_LOSS)),
    "spares": ("cluster.spares", lambda v: _count(v, "spares")),
    "allow_worker_loss": ("cluster.allow_worker_loss", bool),
}

_WORKER_LOSS = ("continue", "replace", "abort")


def _choice(value, option, choices):
    if value not in choices:
        raise DslError(f"setup(): {option}={value!r} is not one of {', '.join(choices)}")
    return value


def _count(value, option):
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise DslError(f"setup(): {option}={value!r} is not a whole number of at least 0")
    return value


def _throttle_steps(steps):
    plans = []
    for step in steps:
        if isinstance(step, (list, tuple)):
            plans.extend(_throttle_steps(step))
        elif isinstance(step, dict) and step.get("type") in ("jump_to_rps", "reach_rps", "hold_for"):
            plans.append(dict(step))
        elif isinstance(step, _ReachRps):
            raise DslError(f"reach_rps({step.rps}) needs .in_(seconds)")
        else:
            raise DslError(f"throttle takes reach_rps(r).in_(s), hold_for(s) and jump_to_rps(r), got {step!r}")
    if not plans:
        raise DslError("throttle needs at least one step")
    return plans


@dataclass(frozen=True)
class _ReachRps:
    rps: float

    def in_(self, duration):
        return {"type": "reach_rps", "rps": self.rps, "duration_ms": to_ms(duration, "reach_rps().in_()")}


def _positive_rps(rps, what):
    if isinstance(rps, bool) or not isinstance(rps, (int, float)) or rps <= 0:
        raise DslError(f"{what}: expected a positive rate, got {rps!r}")
    return float(rps)


def reach_rps(rps):
    """Throttle step: go linearly to ``rps`` requests per second, ``.in_(seconds)``."""
    return _ReachRps(_positive_rps(rps, "reach_rps()"))


def jump_to_rps(rps):
    """Throttle step: from now on, at most ``rps`` requests per second."""
    return {"type": "jump_to_rps", "rps": _positive_rps(rps, "jump_to_rps()")}


def hold_for(duration):
    """Throttle step: keep the current rate this long."""
    return {"type": "hold_for", "duration_ms": to_ms(duration, "hold_for()")}


def throttle(*steps):
    """The throttle steps, for ``setup(..., throttle=throttle(reach_rps(100).in_(10), hold_for(60)))``."""
    return _throttle_steps(steps)


def _checked_protocols(protocols):
    """The protocols among ``protocols`` (one, or lists of them), each kind's rules checked."""
    flat = []
    for protocol in protocols:
        flat.extend(protocol if isinstance(protocol, (list, tuple)) else [protocol])
    for protocol in flat:
        if not isinstance(protocol, Protocol):
            kinds = " or ".join(kind.hint for kind in Protocol.kinds())
            raise DslError(f"a protocol is {kinds}, got {protocol!r}")
    for kind in Protocol.kinds():
        kind.check_given([p for p in flat if isinstance(p, kind)])
    return tuple(flat)


def setup(*populations, protocol=None, name=None, **options):
    """The simulation to run: populations (``scenario(...).inject(...)``), the protocol (HTTP's,
    databases', or a list of them: ``protocol=[http.base_url(...), sql.url(...)]``), and run
    options: ``max_duration`` (seconds), ``seed``, ``on_check_failure``
    ("continue", the default: a failed check makes its request KO and the user goes on, as in
    Gatling; or "stop_iteration": the user ends its scenario at its first failure),
    ``percentiles``, ``response_time_bounds_ms``, ``max_requests``, ``workers``,
    ``late_start_threshold`` (seconds: an arrival or throttle slot that starts later than this
    counts as late; 0.001 by default; ``horde sweep`` calls a level whose starts are more than
    1 % late "load not delivered"); and for a run on several machines (``--cluster``,
    docs/cluster.md) ``on_worker_loss`` ("continue", "replace" or "abort"), ``spares`` and
    ``allow_worker_loss``, which the flags of the same names override.

    >>> from horde import at_once_users, http, scenario
    >>> sim = setup(scenario("s").exec(http("home").get("/")).inject(at_once_users(1)), late_start_threshold=0.005)
    >>> sim.to_plan()["options"]["late_start_threshold_us"]
    5000
    """
    flat = []
    for population in populations:
        items = population if isinstance(population, (list, tuple)) else [population]
        for item in items:
            if not isinstance(item, Population):
                raise DslError(f"setup() takes scenario(...).inject(...), got {item!r}")
            flat.append(item)
    if not flat:
        raise DslError("setup() needs at least one scenario(...).inject(...)")
    converted = []
    for key, value in options.items():
        if key not in _OPTION_NAMES:
            raise DslError(f"setup(): unknown option {key!r} (known: {', '.join(sorted(_OPTION_NAMES))})")
        plan_key, convert = _OPTION_NAMES[key]
        converted.append((plan_key, convert(value)))
    given = _checked_protocols([protocol] if protocol is not None else [])
    simulation = Simulation(tuple(flat), given, name, tuple(converted))
    if _loading.module_name is not None and _importing_another_module(_loading.module_name):
        # Helpers imported from another simulation file: its setup() is that file's, not the
        # one being loaded (as `if __name__ == "__main__":` code does not run on import).
        return simulation
    if _loading.base_dir is not None and _loading.simulation is not None:
        raise DslError("setup() was already called: a simulation has one setup(...); pass every population to it")
    _loading.simulation = simulation
    return simulation


def _importing_another_module(simulation_module):
    """Whether the nearest module-level code calling us belongs to a module other than the
    simulation's: one it is importing."""
    import sys

    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_name == "<module>":
            return frame.f_globals.get("__name__") != simulation_module
        frame = frame.f_back
    return False
