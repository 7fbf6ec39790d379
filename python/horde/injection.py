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


def injection_steps(profile, scenario_name):
    """Plan dicts of a profile, refusing steps that are missing their ``.during()``."""
    steps = []
    for step in profile:
        if isinstance(step, (list, tuple)):
            steps.extend(injection_steps(step, scenario_name))
        elif isinstance(step, InjectionStep):
            steps.append(step.to_plan())
        elif isinstance(step, (_NeedsDuration, _UsersPerSec)):
            name = getattr(step, "kind", "constant_users_per_sec")
            raise DslError(f"scenario {scenario_name!r}: {name}(...) needs .during(seconds)")
        else:
            raise DslError(f"scenario {scenario_name!r}: inject() takes injection steps, got {step!r}")
    if not steps:
        raise DslError(f"scenario {scenario_name!r}: inject() needs at least one step")
    return steps
