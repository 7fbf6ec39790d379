"""Assertions in Gatling's shape, written as thresholds (docs/thresholds.md).

``setup(...).assertions(...)`` takes these builders, or threshold strings as the CLI's
``--threshold`` takes them; both become the plan's ``thresholds``, judged by the engine. A
failed one makes ``horde run`` exit 99. Times are in milliseconds, as in Gatling::

    >>> global_().response_time().percentile(99).lt(500).text
    'p99<500ms'
    >>> for_all().failed_requests().percent().lte(1).text
    'each: errors<=1%'
    >>> details("checkout", "pay").response_time().max().lt(800).text
    '"checkout / pay": max<800ms'
    >>> global_().successful_requests().percent().gt(99).text
    'errors<1%'
    >>> global_().response_time().percentile(99).lt(2000).over(30).abort().text
    'p99<2000ms over 30000ms abort'
    >>> global_().requests_per_sec().gte(1000).text
    'rps>=1000'
    >>> global_().response_time(ok_only=True).percentile(95).lt(200).text
    'ok.p95<200ms'

A response-time assertion judges OK and KO responses together, as Gatling's does; with
``ok_only=True`` it judges OK responses only (k6's ``{expected_response:true}``). Either way, a
scope whose requests all failed fails it: there is no server latency to judge.
"""

import json
from dataclasses import dataclass
from ._durations import to_ms
from .errors import DslError


@dataclass(frozen=True)
class Assertion:
    """One threshold, as text in the thresholds' grammar; ``.over()`` and ``.abort()`` add a
    window and stop the run when it fails."""

    text: str

    def over(self, window):
        """Judge the last ``window`` seconds (or "30s") after every interval, not the whole run."""
        if " over " in self.text or " abort" in self.text:
            raise DslError(f"{self.text!r}: over() comes once, before abort()")
        return Assertion(f"{self.text} over {to_ms(window, 'over()')}ms")

    def abort(self, after=None):
        """Stop the run as soon as this fails (not before ``after`` seconds into it); the results
        so far are kept and the run is marked aborted_by_threshold."""
        if " abort" in self.text:
            raise DslError(f"{self.text!r}: abort() comes once")
        suffix = " abort" if after is None else f" abort after {to_ms(after, 'abort(after=)')}ms"
        return Assertion(self.text + suffix)

    def __str__(self):
        return self.text


def _number(value, what):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise DslError(f"{what}: expected a number, got {value!r}")
    return value


def _format(value):
    return f"{value:g}" if isinstance(value, float) else str(value)


@dataclass(frozen=True)
class _Metric:
    """A scope and a metric, waiting for its condition (lt, lte, gt, gte, is_, between)."""

    scope: str
    metric: str
    unit: str = ""
    #: Gatling's successful_requests().percent(): judged as errors with the comparison flipped.
    complement: bool = False

    def _condition(self, op, value):
        value = _number(value, f"{self.metric}{op}")
        if self.complement:
            op = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}[op]
            value = 100 - value
        prefix = "" if self.scope == "global" else f"{self.scope}: "
        return Assertion(f"{prefix}{self.metric}{op}{_format(value)}{self.unit}")

    def lt(self, value):
        return self._condition("<", value)

    def lte(self, value):
        return self._condition("<=", value)

    def gt(self, value):
        return self._condition(">", value)

    def gte(self, value):
        return self._condition(">=", value)

    def is_(self, value):
        return self._condition("==", value)

    def between(self, low, high):
        """Both bounds, inclusive: two assertions."""
        return [self.gte(low), self.lte(high)]


@dataclass(frozen=True)
class _ResponseTime:
    scope: str
    ok_only: bool = False

    def _metric(self, name):
        return _Metric(self.scope, f"ok.{name}" if self.ok_only else name, "ms")

    def min(self):
        return self._metric("min")

    def max(self):
        return self._metric("max")

    def mean(self):
        return self._metric("mean")

    def stddev(self):
        return self._metric("stddev")

    def percentile(self, p):
        p = _number(p, "percentile()")
        if not 0 < p <= 100:
            raise DslError(f"percentile({p}): expected more than 0 and at most 100")
        return self._metric(f"p{_format(p)}")

    # Gatling's defaults: percentile1..4 are the 50th, 75th, 95th and 99th.
    def percentile1(self):
        return self.percentile(50)

    def percentile2(self):
        return self.percentile(75)

    def percentile3(self):
        return self.percentile(95)

    def percentile4(self):
        return self.percentile(99)


@dataclass(frozen=True)
class _Requests:
    scope: str
    kind: str  # all, failed, successful

    def count(self):
        if self.kind == "all":
            return _Metric(self.scope, "count")
        if self.kind == "failed":
            return _Metric(self.scope, "errors.count")
        raise DslError("successful_requests().count() is not a threshold: use all_requests().count() and failed_requests().count()")

    def percent(self):
        if self.kind == "all":
            raise DslError("all_requests().percent() is always 100: use count()")
        return _Metric(self.scope, "errors", "%", complement=self.kind == "successful")


@dataclass(frozen=True)
class _Scope:
    scope: str

    def response_time(self, ok_only=False):
        """Response times of OK and KO responses together; ``ok_only=True``: of OK ones."""
        return _ResponseTime(self.scope, bool(ok_only))

    def all_requests(self):
        return _Requests(self.scope, "all")

    def failed_requests(self):
        return _Requests(self.scope, "failed")

    def successful_requests(self):
        return _Requests(self.scope, "successful")

    def requests_per_sec(self):
        return _Metric(self.scope, "rps")


def global_():
    """All requests together (Gatling's ``global``)."""
    return _Scope("global")


def for_all():
    """Every request row, each on its own (Gatling's ``forAll``)."""
    return _Scope("each")


def details(*path):
    """One request or group, by its path of group names then its own name (Gatling's
    ``details("Group" / "Request")``)."""
    if not path or not all(isinstance(p, str) and p for p in path):
        raise DslError(f"details() takes the names of groups and a request, got {path!r}")
    return _Scope(json.dumps(" / ".join(path), ensure_ascii=False))


def threshold_texts(items, what="assertions()"):
    """The plan's threshold strings from builders, strings and lists of them."""
    texts = []
    for item in items:
        if isinstance(item, (list, tuple)):
            texts.extend(threshold_texts(item, what))
        elif isinstance(item, Assertion):
            texts.append(item.text)
        elif isinstance(item, str) and item.strip():
            texts.append(item.strip())
        elif isinstance(item, (_Metric, _ResponseTime, _Requests, _Scope)):
            raise DslError(f"{what}: {item!r} has no condition yet: end it with lt(), lte(), gt(), gte() or is_()")
        else:
            raise DslError(f"{what}: expected global_()/for_all()/details() assertions or threshold strings, got {item!r}")
    return texts


__all__ = ["Assertion", "details", "for_all", "global_"]
