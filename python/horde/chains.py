"""Chains of steps and scenarios. Plain Python functions compose them, so helpers such as
seed 000's ``jsfGet``/``jsfPost`` are ordinary functions returning requests or chains.

    >>> from horde import scenario, http, exec_, pause, repeat
    >>> scn = scenario("browse").exec(http("home").get("/")).pause(1).repeat(3, http("item").get("/item"), counter="i")
    >>> [s["type"] for s in scn.to_steps()]
    ['request', 'pause', 'repeat']
"""

from dataclasses import dataclass, replace

from ._durations import to_ms
from .cookies import CookieStep
from .errors import DslError
from .http import HttpRequest
from .sockets import SocketStep


def _steps_of(items, where):
    """Plan steps from requests, chains and (nested) lists of them."""
    steps = []
    for item in items:
        if isinstance(item, (HttpRequest, SocketStep, CookieStep)):
            steps.append(item.to_step())
        elif isinstance(item, Chain):
            steps.extend(item.to_steps())
        elif isinstance(item, (list, tuple)):
            steps.extend(_steps_of(item, where))
        else:
            raise DslError(f"{where}: expected a request (http(...)), a socket step (ws(...), sse(...)), a cookie step "
                           f"(add_cookie(...), ...) or a chain, "
                           f"got {item!r}")
    return steps


@dataclass(frozen=True)
class Chain:
    """An immutable sequence of steps; every method returns a new chain."""

    steps: tuple = ()

    def _then(self, *steps):
        return replace(self, steps=self.steps + tuple(steps))

    def exec(self, *items):
        """Append requests or chains (lists of them work too)."""
        return self._then(*_steps_of(items, "exec()"))

    def pause(self, duration, max_duration=None, *, exponential=False):
        """Wait ``duration`` seconds; with ``max_duration``, a uniform draw between the two; with
        ``exponential=True``, an exponential draw of mean ``duration``."""
        return self._then(_pause_step(duration, max_duration, exponential))

    def pace(self, duration):
        """Wait so that successive passes through this step are at least ``duration`` seconds
        apart: put it in a loop to run the loop at a steady rate."""
        return self._then({"type": "pace", "duration_ms": to_ms(duration, "pace()")})

    def repeat(self, times, *items, counter=None):
        """Run ``items`` ``times`` times; ``counter`` names a variable holding 0, 1, ..."""
        if isinstance(times, bool) or not isinstance(times, int) or times < 0:
            raise DslError(f"repeat() needs a whole number of times, got {times!r}")
        step = {"type": "repeat", "times": times, "steps": _steps_of(items, "repeat()")}
        if counter is not None:
            step["counter"] = counter
        return self._then(step)

    def during(self, duration, *items, counter=None):
        """Run ``items`` again and again until ``duration`` seconds have passed."""
        step = {"type": "during", "duration_ms": to_ms(duration, "during()"), "steps": _steps_of(items, "during()")}
        if counter is not None:
            step["counter"] = counter
        return self._then(step)

    def group(self, name, *items):
        """Run ``items`` as a group with its own statistics; its requests are named
        ``name / request``."""
        if not isinstance(name, str) or not name:
            raise DslError(f"group() needs a name, got {name!r}")
        return self._then({"type": "group", "name": name, "steps": _steps_of(items, "group()")})

    def batch(self, *requests):
        """Send ``requests`` at once and wait for them all (k6's ``http.batch``): streams on one
        HTTP/2 connection, or up to 6 HTTP/1.1 connections per host. Each keeps its own row,
        checks and saved values (saved in the order given)."""
        return self._then(_batch_step(requests))

    def to_steps(self):
        return [dict(s) for s in self.steps]


def _batch_step(requests):
    if not requests:
        raise DslError("batch() needs at least one request")
    for request in requests:
        if not isinstance(request, HttpRequest):
            raise DslError(f"batch() takes requests (http(...).get(...)), got {request!r}")
        if request.resource_requests:
            raise DslError(f"batch(): request {request.name!r} has resources; a batch sends requests, not pages")
    return {"type": "batch", "requests": [r.to_request() for r in requests]}


def _pause_step(duration, max_duration, exponential):
    if exponential:
        if max_duration is not None:
            raise DslError("pause(): an exponential pause takes a mean, not a range")
        return {"type": "pause_exponential", "mean_ms": to_ms(duration, "pause()")}
    if max_duration is not None:
        return {"type": "pause_uniform", "min_ms": to_ms(duration, "pause()"), "max_ms": to_ms(max_duration, "pause()")}
    return {"type": "pause", "duration_ms": to_ms(duration, "pause()")}


def exec_(*items):
    """A chain of requests or chains (``exec`` in Gatling; ``exec`` is a Python builtin)."""
    return Chain().exec(*items)


def pause(duration, max_duration=None, *, exponential=False):
    return Chain().pause(duration, max_duration, exponential=exponential)


def repeat(times, *items, counter=None):
    return Chain().repeat(times, *items, counter=counter)


def pace(duration):
    return Chain().pace(duration)


def during(duration, *items, counter=None):
    return Chain().during(duration, *items, counter=counter)


def group(name, *items):
    return Chain().group(name, *items)


def batch(*requests):
    """A chain that sends ``requests`` at once (see :meth:`Chain.batch`).

    >>> from horde import http
    >>> batch(http("a").get("/a"), http("b").get("/b")).to_steps()[0]["type"]
    'batch'
    """
    return Chain().batch(*requests)


@dataclass(frozen=True)
class Scenario(Chain):
    """A named chain; ``inject()`` says how users arrive to run it."""

    name: str = ""

    def inject(self, *profile):
        """Injection steps, run one after the other: open (``at_once_users``, ``ramp_users``,
        ``constant_users_per_sec``, ``nothing_for``) or closed (``constant_concurrent_users``)."""
        from .injection import injection_steps

        return Population(self, tuple(injection_steps(profile, self.name)))


def scenario(name):
    """Start a scenario: ``scenario("browse").exec(...)``."""
    if not isinstance(name, str) or not name:
        raise DslError(f"scenario() needs a name, got {name!r}")
    return Scenario(name=name)


@dataclass(frozen=True)
class Population:
    """A scenario with its injection profile: what ``setup()`` takes."""

    scenario: Scenario
    injection: tuple
    children: tuple = ()

    def and_then(self, *populations):
        """Gatling's ``andThen``: these start once this one has finished (its injection ended
        and all its users done); their profiles count from then."""
        for population in populations:
            if not isinstance(population, Population):
                raise DslError(f"and_then() takes scenario(...).inject(...), got {population!r}")
        return replace(self, children=self.children + tuple(populations))

    def to_plans(self, after=None):
        """This scenario's plan, then its children's, each naming the scenario it waits for."""
        plan = {"name": self.scenario.name, "steps": self.scenario.to_steps(), "injection": [dict(i) for i in self.injection]}
        if after is not None:
            plan["after"] = after
        plans = [plan]
        for child in self.children:
            plans.extend(child.to_plans(after=self.scenario.name))
        return plans
