"""Checks: extract something from a response, validate it, optionally save it.

Gatling's names in snake_case::

    >>> from horde import status, regex, css, jsonpath
    >>> status().in_(200, 304).to_plan()["validate"]
    {'type': 'in', 'values': ['200', '304']}
    >>> regex(r'value="([^"]*)"').save_as("token").to_plan()["save_as"]
    'token'

A check takes, in Gatling's order: the source's values, the one ``find(n)`` picks (or all of
them, ``find_all()``, or how many, ``count()``), each ``transform``-ed, ``with_default(v)``
when nothing was found, then the validation (``exists()`` unless another is given), then
``save_as``. Expected values are templates, rendered from the session when the check runs::

    >>> jsonpath("$.items[*].id").find_all().save_as("ids").to_plan()
    {'source': {'type': 'jsonpath', 'path': '$.items[*].id'}, 'validate': {'type': 'exists'}, 'select': {'type': 'all'}, 'save_as': 'ids'}
    >>> jsonpath("$.owner").is_("${me}").to_plan()["validate"]
    {'type': 'is', 'value': '${me}'}
    >>> regex(r"id=(\\d+)").find(2).transform("to_int").gt(100).to_plan()["select"]
    {'type': 'nth', 'index': 2}
"""

import base64
import json
from dataclasses import dataclass, replace
from typing import Optional

from .errors import DslError

# Sources with more than one value, which find(n), find_all() and count() choose among.
_MULTIVALUED = {"header", "header_regex", "regex", "css", "jsonpath", "jmespath", "xpath", "column"}

TRANSFORMS = ("lowercase", "uppercase", "trim", "to_int", "to_number", "length")


@dataclass(frozen=True)
class Check:
    """An immutable check; every method returns a new one."""

    source: dict
    validation: dict = None
    saved_as: Optional[str] = None
    selection: Optional[dict] = None
    transforms: tuple = ()
    default: Optional[str] = None
    is_optional: bool = False

    # Which value.

    def find(self, n=0):
        """The ``n``-th value, counting from 0 (``find()`` is the first, the default).

        >>> css("li").find(1).to_plan()["select"]
        {'type': 'nth', 'index': 1}
        >>> css("li").find(-1)
        Traceback (most recent call last):
        ...
        horde.errors.DslError: find() counts from 0, got -1
        """
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise DslError(f"find() counts from 0, got {n!r}")
        self._multivalued("find()")
        return replace(self, selection=None if n == 0 else {"type": "nth", "index": n})

    def find_all(self):
        """Every value, as a list (saved as a JSON array, which ``foreach`` walks). Finding
        none is finding nothing. A list is validated by ``exists``, ``not_exists``, ``is_`` or
        ``not_`` (``is_(["a", "b"])``, compared as JSON)."""
        self._multivalued("find_all()")
        return replace(self, selection={"type": "all"})

    def count(self):
        """How many values there are, as text; always found ("0" included). Also counts a
        substring's occurrences.

        >>> substring("<li>").count().gte(3).to_plan()["validate"]
        {'type': 'gte', 'value': '3'}
        """
        if self.source["type"] != "substring":
            self._multivalued("count()")
        return replace(self, selection={"type": "count"})

    def _multivalued(self, what):
        if self.source["type"] not in _MULTIVALUED:
            raise DslError(f"{what}: a {self.source['type']} check has one value; "
                           f"find, find_all and count apply to {', '.join(sorted(_MULTIVALUED))}")

    # What to do with it.

    def transform(self, *names):
        """Native transforms, applied in order to the value found (to each element of a
        ``find_all`` list): ``lowercase``, ``uppercase``, ``trim``, ``to_int`` and
        ``to_number`` (a value that is not one fails the check), ``length`` (of a text, a JSON
        array or object).

        >>> css("h1").transform("trim", "lowercase").to_plan()["transform"]
        ['trim', 'lowercase']
        """
        for name in names:
            if name not in TRANSFORMS:
                raise DslError(f"transform() takes {', '.join(TRANSFORMS)}; got {name!r}")
        if not names:
            raise DslError("transform() needs at least one transform")
        return replace(self, transforms=self.transforms + tuple(names))

    def with_default(self, value):
        """When nothing is found, ``value`` instead (a template)."""
        return replace(self, default=_expected(value))

    def optional(self):
        """Finding nothing passes and saves nothing (the variable keeps what it held); a
        value that is found must still pass the validation."""
        return replace(self, is_optional=True)

    # Validations: expected values are templates (``"${me}"``).

    def is_(self, value):
        """The value must equal ``value``, compared as text; bytes (for ``body_bytes()``) as
        base64; a list (for ``find_all()``) as a JSON array.

        >>> body_bytes().is_(b"ok").to_plan()["validate"]
        {'type': 'is', 'value': 'b2s='}
        """
        return replace(self, validation={"type": "is", "value": _expected(value)})

    def not_(self, value):
        """The value must differ from ``value``."""
        return replace(self, validation={"type": "not", "value": _expected(value)})

    def in_(self, *values):
        """The extracted value must be one of ``values``; a single list or tuple works too."""
        if len(values) == 1 and isinstance(values[0], (list, tuple, set, range)):
            values = tuple(values[0])
        if not values:
            raise DslError("in_() needs at least one value")
        return replace(self, validation={"type": "in", "values": [_expected(v) for v in values]})

    def lt(self, value):
        """Less than ``value``: as numbers when both read as numbers, else as text.

        >>> response_time_in_millis().lt(500).to_plan()
        {'source': {'type': 'response_time_in_millis'}, 'validate': {'type': 'lt', 'value': '500'}}
        """
        return replace(self, validation={"type": "lt", "value": _expected(value)})

    def lte(self, value):
        """Less than or equal to ``value``."""
        return replace(self, validation={"type": "lte", "value": _expected(value)})

    def gt(self, value):
        """Greater than ``value``."""
        return replace(self, validation={"type": "gt", "value": _expected(value)})

    def gte(self, value):
        """Greater than or equal to ``value``."""
        return replace(self, validation={"type": "gte", "value": _expected(value)})

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
        if self.selection is not None:
            plan["select"] = dict(self.selection)
        if self.transforms:
            plan["transform"] = list(self.transforms)
        if self.default is not None:
            plan["default"] = self.default
        if self.is_optional:
            plan["optional"] = True
        if self.saved_as is not None:
            plan["save_as"] = self.saved_as
        return plan


def _text(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _expected(value):
    """An expected value as the plan holds it: text, bytes as base64, a list as JSON."""
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, (list, tuple)):
        return json.dumps(list(value))
    return _text(value)


def _string(value, what):
    if not isinstance(value, str) or not value:
        raise DslError(f"{what} needs a non-empty string, got {value!r}")
    return value


def status():
    """The response status: ``status().is_(200)``, ``status().in_(200, 304)``."""
    return Check({"type": "status"})


def header(name):
    """A response header's value (each line of a repeated header is one value):
    ``header("Content-Type").is_("application/json")``."""
    return Check({"type": "header", "name": _string(name, "header()")})


def header_regex(name, pattern, group=None):
    """The matches of ``pattern`` in a response header's values (Gatling's ``headerRegex``):
    each one's capture ``group`` (default 1, or the whole match). With a request that does not
    follow redirects, the code a redirect carries to the next page:

    >>> header_regex("Location", "code=([^&]+)").save_as("code").to_plan()["source"]
    {'type': 'header_regex', 'name': 'Location', 'pattern': 'code=([^&]+)'}
    """
    source = {"type": "header_regex", "name": _string(name, "header_regex()"), "pattern": _string(pattern, "header_regex()")}
    if group is not None:
        source["group"] = int(group)
    return Check(source)


def substring(text):
    """The body contains ``text``; ``.count()`` says how many times."""
    return Check({"type": "substring", "value": _string(text, "substring()")})


def regex(pattern, group=None):
    """The matches of ``pattern`` in the body: each one's capture ``group`` (default 1, or
    the whole match when the pattern has no group)."""
    source = {"type": "regex", "pattern": _string(pattern, "regex()")}
    if group is not None:
        source["group"] = int(group)
    return Check(source)


def css(selector, attribute=None):
    """The elements matching ``selector``: each one's ``attribute``, or its text."""
    source = {"type": "css", "selector": _string(selector, "css()")}
    if attribute is not None:
        source["attribute"] = _string(attribute, "css(attribute=)")
    return Check(source)


def jsonpath(path):
    """The values the JSONPath query selects (``$.items[*].id``); JSON null is no value."""
    return Check({"type": "jsonpath", "path": _string(path, "jsonpath()")})


def jmespath(expression):
    """The result of a JMESPath expression on the JSON body (``items[?price < `20`].name``):
    an array's elements are its values, null is none.

    >>> jmespath("items[*].id").count().to_plan()["select"]
    {'type': 'count'}
    """
    return Check({"type": "jmespath", "expression": _string(expression, "jmespath()")})


def xpath(expression):
    """An XPath 3.1 expression on the body parsed as XML: each node's string value, or the
    values it computes (``count(//item)``). HTML that is not XML has nothing: use ``css``."""
    return Check({"type": "xpath", "expression": _string(expression, "xpath()")})


def body_string():
    """The whole body as text."""
    return Check({"type": "body_string"})


def body_bytes():
    """The whole body's bytes, as base64: ``body_bytes().is_(b"...")`` compares bytes."""
    return Check({"type": "body_bytes"})


def body_length():
    """The body's length in bytes."""
    return Check({"type": "body_length"})


def md5():
    """The MD5 digest of the body, lowercase hex."""
    return Check({"type": "md5"})


def sha1():
    """The SHA-1 digest of the body, lowercase hex."""
    return Check({"type": "sha1"})


def sha256():
    """The SHA-256 digest of the body, lowercase hex."""
    return Check({"type": "sha256"})


def current_location():
    """The URL that answered, after redirects."""
    return Check({"type": "current_location"})


def response_time_in_millis():
    """The exchange's response time in whole milliseconds: ``response_time_in_millis().lt(500)``."""
    return Check({"type": "response_time_in_millis"})
