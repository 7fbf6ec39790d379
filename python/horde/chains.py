"""Chains of steps and scenarios. Plain Python functions compose them, so helpers such as
seed 000's ``jsfGet``/``jsfPost`` are ordinary functions returning requests or chains.

    >>> from horde import scenario, http, exec_, pause, repeat
    >>> scn = scenario("browse").exec(http("home").get("/")).pause(1).repeat(3, http("item").get("/item"), counter="i")
    >>> [s["type"] for s in scn.to_steps()]
    ['request', 'pause', 'repeat']
"""

import functools
import inspect
import itertools
import re
from dataclasses import dataclass, replace
from datetime import timedelta

from ._durations import to_ms
from ._protocol import Step
from .errors import DslError
from .feeders import Feeder
from .session import describe, register


def _is_session_function(item):
    return inspect.isfunction(item) or inspect.ismethod(item) or isinstance(item, functools.partial)


def _steps_of(items, where):
    """Plan steps from requests, chains, session functions and (nested) lists of them."""
    steps = []
    for item in items:
        if isinstance(item, Step):
            steps.append(item.to_step())
        elif _is_session_function(item):
            steps.append({"type": "session_function", "name": describe(item), "function": register(item, where)})
        elif isinstance(item, Chain):
            steps.extend(item.to_steps())
        elif isinstance(item, (list, tuple)):
            steps.extend(_steps_of(item, where))
        else:
            raise DslError(f"{where}: expected {', '.join(Step.hints())}, a chain or a function of the session, "
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

    def pause(self, duration, max_duration=None, *, exponential=False, std_dev=None):
        """Wait ``duration`` seconds (a number or a timedelta); with ``max_duration``, a uniform
        draw between the two; with ``exponential=True``, an exponential draw of mean
        ``duration``; with ``std_dev`` (seconds), a normal draw of mean ``duration``, a draw
        below 0 being 0 (Gatling's ``normalPausesWithStdDevDuration``).

        ``duration`` may also come from the session at each pass: a template
        (``"${think_time}"``, ``"#{t}"``, ``"${t}ms"``; a bare number is seconds, or it carries
        its unit: ``ms``, ``s``, ``m``, ``h``), or a function of the session returning seconds,
        a timedelta or such text (Gatling's ``pause(session -> ...)``; a session function,
        counted and timed as one).

        >>> [s["type"] for s in pause(1).pause(1, 2).pause(2, std_dev=0.5).pause("#{t}").to_steps()]
        ['pause', 'pause_uniform', 'pause_normal', 'pause_template']
        """
        return self._then(*_pause_steps(duration, max_duration, exponential, std_dev))

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
        # HTTP's step, offered on every chain as k6 offers http.batch.
        from .http import batch_step

        return self._then(batch_step(requests))

    def feed(self, feeder, count=1):
        """Take the feeder's next record: its columns become session variables. With
        ``count`` above 1, each variable holds a list of that many records' values."""
        if not isinstance(feeder, Feeder):
            raise DslError(f"feed() takes a feeder (csv(...), json_file(...), inline([...])), got {feeder!r}")
        step = {"type": "feed", "feeder": feeder.name, "_feeder": feeder}
        if count != 1:
            step["count"] = _whole(count, "feed() count", minimum=1)
        return self._then(step)

    def set(self, values=None, **named):
        """Set session variables: ``.set(token="none")``, or a dict for names that are no
        Python identifiers. Values are templates: ``.set(next="${page.next}")``."""
        merged = dict(values or {})
        merged.update(named)
        if not merged:
            raise DslError("set() needs at least one variable")
        return self._then({"type": "set", "values": [{"name": _name(n, "set()"), "value": _text(v)} for n, v in merged.items()]})

    def unset(self, *names):
        """Remove session variables."""
        return self._then({"type": "unset", "names": [_name(n, "unset()") for n in names]})

    def do_if(self, condition, *items):
        """Run ``items`` when the condition holds: ``"${role} == 'admin'"``,
        ``"${n} > 3 and exists(token)"``."""
        return self._then({"type": "do_if", "condition": _condition(condition, "do_if()"),
                           "steps": _steps_of(items, "do_if()")})

    def do_if_or_else(self, condition, then, otherwise):
        """Run ``then`` when the condition holds, else ``otherwise`` (each a chain, a
        request or a list of them)."""
        return self._then({"type": "do_if", "condition": _condition(condition, "do_if_or_else()"),
                           "steps": _steps_of([then], "do_if_or_else()"),
                           "else_steps": _steps_of([otherwise], "do_if_or_else()")})

    def do_if_equals(self, actual, expected, *items):
        """Run ``items`` when the two templates render the same text."""
        return self.do_if(_equals(actual, expected), *items)

    def do_if_equals_or_else(self, actual, expected, then, otherwise):
        return self.do_if_or_else(_equals(actual, expected), then, otherwise)

    def do_switch(self, value, *cases, otherwise=None):
        """Run the chain of the first case whose value equals ``value`` (a template):
        ``.do_switch("${kind}", ("book", chain_a), ("film", chain_b), otherwise=chain_c)``."""
        step = {"type": "do_switch", "value": _text(value),
                "cases": [{"value": _text(v), "steps": _steps_of([c], "do_switch()")} for v, c in _pairs(cases, "do_switch()")]}
        if otherwise is not None:
            step["else_steps"] = _steps_of([otherwise], "do_switch()")
        return self._then(step)

    def random_switch(self, *cases, otherwise=None):
        """Run one chain drawn by weight (percent; the weights add up to at most 100, the rest
        of the draws run ``otherwise`` or nothing): ``.random_switch((60, browse), (40, buy))``."""
        step = {"type": "random_switch",
                "cases": [{"weight": _weight(w), "steps": _steps_of([c], "random_switch()")} for w, c in _pairs(cases, "random_switch()")]}
        if otherwise is not None:
            step["else_steps"] = _steps_of([otherwise], "random_switch()")
        return self._then(step)

    def uniform_random_switch(self, *chains):
        """Run one of the chains, each as likely."""
        return self._then({"type": "uniform_random_switch", "cases": _cases(chains, "uniform_random_switch()")})

    def round_robin_switch(self, *chains):
        """Run the chains in turn, across all users of the run."""
        return self._then({"type": "round_robin_switch", "cases": _cases(chains, "round_robin_switch()")})

    def foreach(self, items_expression, element, *items, counter=None):
        """Run ``items`` once per element of a list: ``.foreach("${ids}", "id", http(...))``."""
        step = {"type": "foreach", "list": _text(items_expression), "element": _name(element, "foreach()"),
                "steps": _steps_of(items, "foreach()")}
        if counter is not None:
            step["counter"] = _name(counter, "foreach() counter")
        return self._then(step)

    def as_long_as(self, condition, *items, counter=None, exit_on_fail=False):
        """Run ``items`` while the condition holds (tested before each pass). With
        ``exit_on_fail``, a failed request ends the loop."""
        step = {"type": "as_long_as", "condition": _condition(condition, "as_long_as()"),
                "steps": _steps_of(items, "as_long_as()")}
        if counter is not None:
            step["counter"] = _name(counter, "as_long_as() counter")
        if exit_on_fail:
            step["exit_on_fail"] = True
        return self._then(step)

    def do_while(self, condition, *items, counter=None):
        """Run ``items``, then again while the condition holds (tested after each pass)."""
        step = {"type": "do_while", "condition": _condition(condition, "do_while()"), "steps": _steps_of(items, "do_while()")}
        if counter is not None:
            step["counter"] = _name(counter, "do_while() counter")
        return self._then(step)

    def try_max(self, times, *items, counter=None, name="try_max"):
        """Run ``items`` until a pass has no failed request, at most ``times`` passes. The
        block is one outcome in its row ``name``; failures of passes tried again count as
        ``retried`` in their rows, not as KOs."""
        step = {"type": "try_max", "name": _name_text(name, "try_max()"), "times": _whole(times, "try_max() times", minimum=1),
                "steps": _steps_of(items, "try_max()")}
        if counter is not None:
            step["counter"] = _name(counter, "try_max() counter")
        return self._then(step)

    def eventually(self, *items, times=None, pause=0.1, timeout=None, name="eventually", counter=None):
        """Seed 002's RetriableCondition: run ``items`` until every request and check in them
        passes, ``pause`` seconds apart, at most ``times`` attempts and within ``timeout``
        seconds of the first. One outcome in its row ``name``, whose duration is the time to
        consistency."""
        if times is None and timeout is None:
            raise DslError("eventually() needs times=, timeout= or both: it must end")
        step = {"type": "eventually", "name": _name_text(name, "eventually()"), "pause_ms": to_ms(pause, "eventually() pause"),
                "steps": _steps_of(items, "eventually()")}
        if times is not None:
            step["times"] = _whole(times, "eventually() times", minimum=1)
        if timeout is not None:
            step["timeout_ms"] = to_ms(timeout, "eventually() timeout")
        if counter is not None:
            step["counter"] = _name(counter, "eventually() counter")
        return self._then(step)

    def exit_here_if_failed(self):
        """End the virtual user here when one of its requests failed."""
        return self._then({"type": "exit_here_if_failed"})

    def exit_here(self):
        """End the virtual user here."""
        return self._then({"type": "exit_here"})

    def exit_here_if(self, condition):
        """End the virtual user here when the condition holds."""
        return self._then({"type": "exit_here", "condition": _condition(condition, "exit_here_if()")})

    def exit_block_on_fail(self, *items):
        """Run ``items``; a failed request leaves them at once and the chain goes on after."""
        return self._then({"type": "exit_block_on_fail", "steps": _steps_of(items, "exit_block_on_fail()")})

    def stop_load_generator(self, message, condition=None):
        """Stop the whole run gracefully (when ``condition`` holds, if given); the summary
        says ``message``."""
        step = {"type": "stop_load_generator", "message": _name_text(message, "stop_load_generator()")}
        if condition is not None:
            step["condition"] = _condition(condition, "stop_load_generator()")
        return self._then(step)

    def to_steps(self):
        return [dict(s) for s in self.steps]


def _text(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    raise DslError(f"expected text or a number, got {value!r}")


def _name(name, where):
    if not isinstance(name, str) or not name:
        raise DslError(f"{where} needs a variable name, got {name!r}")
    return name


def _name_text(text, where):
    if not isinstance(text, str) or not text.strip():
        raise DslError(f"{where} needs a name, got {text!r}")
    return text


def _whole(value, where, minimum=0):
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise DslError(f"{where} needs a whole number, {minimum} or more, got {value!r}")
    return value


def _weight(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise DslError(f"random_switch() weights are percentages, got {value!r}")
    return float(value)


def _condition(condition, where):
    if not isinstance(condition, str) or not condition.strip():
        raise DslError(f"{where} needs a condition such as \"${{role}} == 'admin'\", got {condition!r}")
    return condition


def _quoted(text):
    """A template as a quoted operand of a condition."""
    return "'" + _text(text).replace("\\", "\\\\").replace("'", "\\'") + "'"


def _equals(actual, expected):
    return f"{_quoted(actual)} == {_quoted(expected)}"


def _pairs(cases, where):
    if not cases:
        raise DslError(f"{where} needs at least one case")
    for case in cases:
        if not isinstance(case, tuple) or len(case) != 2:
            raise DslError(f"{where}: each case is a pair (value, chain), got {case!r}")
    return cases


def _cases(chains, where):
    if not chains:
        raise DslError(f"{where} needs at least one chain")
    return [{"steps": _steps_of([c], where)} for c in chains]


def _pause_steps(duration, max_duration, exponential, std_dev):
    if isinstance(duration, str) or _is_session_function(duration):
        if max_duration is not None or exponential or std_dev is not None:
            raise DslError("pause(): a duration from the session takes no range, exponential or std_dev")
        if isinstance(duration, str):
            if "${" in duration or "#{" in duration:
                return [{"type": "pause_template", "duration": duration}]
            return [{"type": "pause", "duration_ms": _text_duration_ms(duration)}]
        return _pause_function_steps(duration)
    if exponential:
        if max_duration is not None or std_dev is not None:
            raise DslError("pause(): an exponential pause takes a mean, not a range or a std_dev")
        return [{"type": "pause_exponential", "mean_ms": to_ms(duration, "pause()")}]
    if std_dev is not None:
        if max_duration is not None:
            raise DslError("pause(): a normal pause takes a mean and a std_dev, not a range")
        return [{"type": "pause_normal", "mean_ms": to_ms(duration, "pause()"),
                 "std_dev_ms": to_ms(std_dev, "pause() std_dev")}]
    if max_duration is not None:
        return [{"type": "pause_uniform", "min_ms": to_ms(duration, "pause()"), "max_ms": to_ms(max_duration, "pause()")}]
    return [{"type": "pause", "duration_ms": to_ms(duration, "pause()")}]


_UNIT_MS = {"": 1000, "s": 1000, "ms": 1, "m": 60_000, "h": 3_600_000}


def _text_duration_ms(text):
    """``"1.5"`` (seconds), ``"500ms"``, ``"2m"``: as a pause template's value is read."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*(ms|s|m|h)?\s*", text)
    if not match:
        raise DslError(f"pause(): {text!r} is not a duration: seconds (a number), a timedelta, text such as '500ms' "
                       "or '2s', a template ('${think_time}', '#{t}ms') or a function of the session")
    return int(round(float(match.group(1)) * _UNIT_MS[match.group(2) or ""]))


_pause_functions = itertools.count(1)


def _pause_function_steps(function):
    """A session function that saves the pause's length in a variable of its own (a name no
    Python identifier takes), then a pause of that length."""
    variable = f"horde-pause-{next(_pause_functions)}"

    def save_pause(session):
        value = function(session)
        if isinstance(value, timedelta):
            value = value.total_seconds()
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise DslError(f"a pause function returns seconds, a timedelta or text such as '500ms', not {value!r}")
        session.set(variable, value)

    return [{"type": "session_function", "name": describe(function), "function": register(save_pause, "pause()")},
            {"type": "pause_template", "duration": "${" + variable + "}"}]


def _starts_with(method):
    """A module-level function that starts a chain with ``Chain.method``."""
    def start(*args, **kwargs):
        return getattr(Chain(), method)(*args, **kwargs)

    start.__name__ = method
    start.__doc__ = getattr(Chain, method).__doc__
    return start


feed = _starts_with("feed")
set_ = _starts_with("set")
unset = _starts_with("unset")
do_if = _starts_with("do_if")
do_if_or_else = _starts_with("do_if_or_else")
do_if_equals = _starts_with("do_if_equals")
do_if_equals_or_else = _starts_with("do_if_equals_or_else")
do_switch = _starts_with("do_switch")
random_switch = _starts_with("random_switch")
uniform_random_switch = _starts_with("uniform_random_switch")
round_robin_switch = _starts_with("round_robin_switch")
foreach = _starts_with("foreach")
as_long_as = _starts_with("as_long_as")
do_while = _starts_with("do_while")
try_max = _starts_with("try_max")
eventually = _starts_with("eventually")
exit_here_if_failed = _starts_with("exit_here_if_failed")
exit_here = _starts_with("exit_here")
exit_here_if = _starts_with("exit_here_if")
exit_block_on_fail = _starts_with("exit_block_on_fail")
stop_load_generator = _starts_with("stop_load_generator")


def exec_(*items):
    """A chain of requests or chains (``exec`` in Gatling; ``exec`` is a Python builtin)."""
    return Chain().exec(*items)


def pause(duration, max_duration=None, *, exponential=False, std_dev=None):
    return Chain().pause(duration, max_duration, exponential=exponential, std_dev=std_dev)


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
