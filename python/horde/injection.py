"""Injection profiles, with Gatling's names in snake_case.

Open model (users arrive, whatever the system's state)::

    >>> from horde import at_once_users, ramp_users, constant_users_per_sec, nothing_for
    >>> ramp_users(10).during(5).to_plan()
    {'type': 'ramp_users', 'users': 10, 'duration_ms': 5000}

Closed model (a fixed number of users, each replaced when it finishes)::

    >>> from horde import constant_concurrent_users
    >>> constant_concurrent_users(50).during(30).to_plan()["users"]
    50
"""

from dataclasses import dataclass, replace
from typing import Optional

from ._durations import to_ms
from .errors import DslError


def _count(value, what):
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise DslError(f"{what}: expected a whole number of users of at least 1, got {value!r}")
    return value


@dataclass(frozen=True)
class InjectionStep:
    plan: dict

    def to_plan(self):
        return dict(self.plan)


@dataclass(frozen=True)
class _NeedsDuration:
    """A step that is not complete until ``.during(seconds)`` is given."""

    kind: str
    fields: dict

    def during(self, duration):
        return InjectionStep({"type": self.kind, **self.fields, "duration_ms": to_ms(duration, f"{self.kind}().during()")})


@dataclass(frozen=True)
class _UsersPerSec:
    rate: float
    randomized_arrivals: bool = False

    def randomized(self):
        """Poisson arrivals: exponential gaps with the same mean rate."""
        return replace(self, randomized_arrivals=True)

    def during(self, duration):
        return InjectionStep({
            "type": "constant_users_per_sec",
            "rate": self.rate,
            "duration_ms": to_ms(duration, "constant_users_per_sec().during()"),
            "randomized": self.randomized_arrivals,
        })


def nothing_for(duration):
    return InjectionStep({"type": "nothing_for", "duration_ms": to_ms(duration, "nothing_for()")})


def at_once_users(users):
    return InjectionStep({"type": "at_once_users", "users": _count(users, "at_once_users()")})


def ramp_users(users):
    """``ramp_users(n).during(seconds)``: n users spread evenly over the duration."""
    return _NeedsDuration("ramp_users", {"users": _count(users, "ramp_users()")})


def constant_users_per_sec(rate):
    """``constant_users_per_sec(r).during(seconds)``, optionally ``.randomized()``."""
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or rate <= 0:
        raise DslError(f"constant_users_per_sec(): expected a positive rate, got {rate!r}")
    return _UsersPerSec(float(rate))


def constant_concurrent_users(users):
    """``constant_concurrent_users(n).during(seconds)``: keep n users running."""
    return _NeedsDuration("constant_concurrent_users", {"users": _count(users, "constant_concurrent_users()")})


def _rate(value, what, allow_zero=False):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or (value == 0 and not allow_zero):
        raise DslError(f"{what}: expected a {'non-negative' if allow_zero else 'positive'} number, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class _RampRate:
    start: float
    end: Optional[float] = None
    randomized_arrivals: bool = False

    def to(self, rate):
        return replace(self, end=_rate(rate, "ramp_users_per_sec().to()", allow_zero=True))

    def randomized(self):
        return replace(self, randomized_arrivals=True)

    def during(self, duration):
        if self.end is None:
            raise DslError("ramp_users_per_sec(a) needs .to(b) before .during(seconds)")
        return InjectionStep({
            "type": "ramp_users_per_sec",
            "from": self.start,
            "to": self.end,
            "duration_ms": to_ms(duration, "ramp_users_per_sec().during()"),
            "randomized": self.randomized_arrivals,
        })


def ramp_users_per_sec(rate):
    """``ramp_users_per_sec(a).to(b).during(seconds)``: the arrival rate goes linearly from a to
    b users per second; ``.randomized()`` for Poisson arrivals."""
    return _RampRate(_rate(rate, "ramp_users_per_sec()", allow_zero=True))


def stress_peak_users(users):
    """``stress_peak_users(n).during(seconds)``: n users along a smooth step, most in the middle."""
    return _NeedsDuration("stress_peak_users", {"users": _count(users, "stress_peak_users()")})


@dataclass(frozen=True)
class _RampConcurrent:
    start: int
    end: Optional[int] = None

    def to(self, users):
        if isinstance(users, bool) or not isinstance(users, int) or users < 0:
            raise DslError(f"ramp_concurrent_users().to(): expected a whole number of users, got {users!r}")
        return replace(self, end=users)

    def during(self, duration):
        if self.end is None:
            raise DslError("ramp_concurrent_users(a) needs .to(b) before .during(seconds)")
        return InjectionStep({
            "type": "ramp_concurrent_users",
            "from": self.start,
            "to": self.end,
            "duration_ms": to_ms(duration, "ramp_concurrent_users().during()"),
        })


def ramp_concurrent_users(users):
    """``ramp_concurrent_users(a).to(b).during(seconds)``: concurrency goes linearly from a to b."""
    if isinstance(users, bool) or not isinstance(users, int) or users < 0:
        raise DslError(f"ramp_concurrent_users(): expected a whole number of users, got {users!r}")
    return _RampConcurrent(users)


@dataclass(frozen=True)
class _Stairs:
    """The stairs meta-DSL: ``.times(k).each_level_lasting(d)``, then optionally
    ``.separated_by_ramps_lasting(d)`` and ``.starting_from(x)``."""

    kind: str
    increment: float
    levels: Optional[int] = None
    level_ms: Optional[int] = None
    ramp_ms: int = 0
    start: float = 0

    def times(self, levels):
        return replace(self, levels=_count(levels, f"{self.kind}().times()"))

    def each_level_lasting(self, duration):
        return replace(self, level_ms=to_ms(duration, f"{self.kind}().each_level_lasting()"))

    def separated_by_ramps_lasting(self, duration):
        return replace(self, ramp_ms=to_ms(duration, f"{self.kind}().separated_by_ramps_lasting()"))

    def starting_from(self, value):
        return replace(self, start=value)

    def to_plan(self):
        if self.levels is None or self.level_ms is None:
            raise DslError(f"{self.kind}(...) needs .times(k).each_level_lasting(seconds)")
        return {
            "type": self.kind,
            "increment": self.increment,
            "times": self.levels,
            "level_duration_ms": self.level_ms,
            "ramp_duration_ms": self.ramp_ms,
            "starting_from": self.start,
        }


def increment_users_per_sec(increment):
    """Stairs of arrival rates: ``increment_users_per_sec(x).times(k).each_level_lasting(d)
    .separated_by_ramps_lasting(r).starting_from(s)``: k levels, the first at s users/s."""
    return _Stairs("increment_users_per_sec", _rate(increment, "increment_users_per_sec()"))


def increment_concurrent_users(increment):
    """Stairs of concurrency: ``increment_concurrent_users(x).times(k).each_level_lasting(d)
    .separated_by_ramps_lasting(r).starting_from(n)``."""
    return _Stairs("increment_concurrent_users", _count(increment, "increment_concurrent_users()"))


def injection_steps(profile, scenario_name):
    """Plan dicts of a profile, refusing steps that are missing their ``.during()``."""
    steps = []
    for step in profile:
        if isinstance(step, (list, tuple)):
            steps.extend(injection_steps(step, scenario_name))
        elif isinstance(step, (InjectionStep, _Stairs)):
            steps.append(step.to_plan())
        elif isinstance(step, (_NeedsDuration, _UsersPerSec, _RampRate, _RampConcurrent)):
            name = getattr(step, "kind", None) or {
                _UsersPerSec: "constant_users_per_sec",
                _RampRate: "ramp_users_per_sec",
                _RampConcurrent: "ramp_concurrent_users",
            }[type(step)]
            raise DslError(f"scenario {scenario_name!r}: {name}(...) needs .during(seconds)")
        else:
            raise DslError(f"scenario {scenario_name!r}: inject() takes injection steps, got {step!r}")
    if not steps:
        raise DslError(f"scenario {scenario_name!r}: inject() needs at least one step")
    return steps
