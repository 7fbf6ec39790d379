"""Checks: extract something from a response, validate it, optionally save it.

Gatling's names in snake_case::

    >>> from horde import status, regex, css, jsonpath
    >>> status().in_(200, 304).to_plan()["validate"]
    {'type': 'in', 'values': ['200', '304']}
    >>> regex(r'value="([^"]*)"').save_as("token").to_plan()["save_as"]
    'token'
"""

from dataclasses import dataclass, replace
from typing import Optional

from .errors import DslError


@dataclass(frozen=True)
class Check:
    """An immutable check; every method returns a new one."""

    source: dict
    validation: dict = None
    saved_as: Optional[str] = None

    def is_(self, value):
        """The extracted value must equal ``value`` (compared as text)."""
        return replace(self, validation={"type": "is", "value": _text(value)})

    def in_(self, *values):
        """The extracted value must be one of ``values``; a single list or tuple works too."""
        if len(values) == 1 and isinstance(values[0], (list, tuple, set, range)):
            values = tuple(values[0])
        if not values:
            raise DslError("in_() needs at least one value")
        return replace(self, validation={"type": "in", "values": [_text(v) for v in values]})

    def exists(self):
        """Something must be extracted (the default)."""
        return replace(self, validation={"type": "exists"})

    def not_exists(self):
        """Nothing must be extracted."""
        return replace(self, validation={"type": "not_exists"})

    def save_as(self, name):
        """Save the extracted value in the session as ``name``, for ``${name}`` templates."""
        if not isinstance(name, str) or not name:
            raise DslError(f"save_as() needs a variable name, got {name!r}")
        return replace(self, saved_as=name)

    def to_plan(self):
        plan = {"source": dict(self.source), "validate": dict(self.validation or {"type": "exists"})}
        if self.saved_as is not None:
            plan["save_as"] = self.saved_as
        return plan


def _text(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _string(value, what):
    if not isinstance(value, str) or not value:
        raise DslError(f"{what} needs a non-empty string, got {value!r}")
    return value


def status():
    """The response status: ``status().is_(200)``, ``status().in_(200, 304)``."""
    return Check({"type": "status"})


def header(name):
    """A response header's value: ``header("Content-Type").is_("application/json")``."""
    return Check({"type": "header", "name": _string(name, "header()")})


def substring(text):
    """The body contains ``text``."""
    return Check({"type": "substring", "value": _string(text, "substring()")})


def regex(pattern, group=None):
    """The first match of ``pattern`` in the body: its capture ``group`` (default 1, or the
    whole match when the pattern has no group)."""
    source = {"type": "regex", "pattern": _string(pattern, "regex()")}
    if group is not None:
        source["group"] = int(group)
    return Check(source)


def css(selector, attribute=None):
    """The first element matching ``selector``: its ``attribute``, or its text."""
    source = {"type": "css", "selector": _string(selector, "css()")}
    if attribute is not None:
        source["attribute"] = _string(attribute, "css(attribute=)")
    return Check(source)


def jsonpath(path):
    """The first value the JSONPath query selects (``$.items[0].id``)."""
    return Check({"type": "jsonpath", "path": _string(path, "jsonpath()")})
