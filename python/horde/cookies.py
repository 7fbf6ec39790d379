"""Steps on the virtual user's cookie jar, Gatling's ``addCookie``, ``getCookieValue``,
``flushCookieJar`` and ``flushSessionCookies``::

    >>> from horde import scenario, http, add_cookie, get_cookie_value, flush_session_cookies
    >>> scn = (scenario("s").exec(add_cookie("lang", "${lang}"), http("home").get("/"))
    ...        .exec(get_cookie_value("JSESSIONID").save_as("sid"), flush_session_cookies()))
    >>> [s["type"] for s in scn.to_steps()]
    ['add_cookie', 'request', 'get_cookie', 'flush_session_cookies']
    >>> get_cookie_value("JSESSIONID").save_as("sid").to_step()
    {'type': 'get_cookie', 'name': 'JSESSIONID', 'save_as': 'sid'}
"""

from dataclasses import dataclass, replace
from typing import Optional

from ._protocol import Step
from .errors import DslError


@dataclass(frozen=True)
class CookieStep(Step):
    """A step on the cookie jar; ``exec`` takes it as it takes a request."""

    hint = "a cookie step (add_cookie(...), ...)"

    step: dict

    def to_step(self):
        return dict(self.step)


@dataclass(frozen=True)
class CookieValue(CookieStep):
    """``get_cookie_value(name)``: saved as ``name`` unless ``save_as`` says otherwise."""

    def save_as(self, name):
        if not isinstance(name, str) or not name:
            raise DslError(f"save_as() needs a variable name, got {name!r}")
        return replace(self, step={**self.step, "save_as": name})


def _name(name, what):
    if not isinstance(name, str) or not name:
        raise DslError(f"{what} needs a cookie name, got {name!r}")
    return name


def add_cookie(name, value, domain: Optional[str] = None, path: Optional[str] = None, secure=False):
    """Put a cookie in the user's jar. ``value`` is a template; ``domain`` defaults to the
    protocol's base URL host (then the cookie goes to that host alone; with a domain, to its
    subdomains too), ``path`` to ``/``; a ``secure`` cookie goes only over https (and to
    loopback addresses, as in browsers). It has no expiry: ``flush_session_cookies`` drops it.
    """
    step = {"type": "add_cookie", "name": _name(name, "add_cookie()"), "value": str(value)}
    if domain is not None:
        step["domain"] = domain
    if path is not None:
        step["path"] = path
    if secure:
        step["secure"] = True
    return CookieStep(step)


def get_cookie_value(name, domain: Optional[str] = None):
    """Save a cookie's value from the user's jar (``.save_as(var)``; by default as the
    cookie's name): the cookie a request to ``domain`` (default: the base URL's host) would
    carry. No such cookie fails the user as a failed check does, counted in the row
    ``get_cookie {name}``."""
    step = {"type": "get_cookie", "name": _name(name, "get_cookie_value()")}
    if domain is not None:
        step["domain"] = domain
    step["save_as"] = name
    return CookieValue(step)


def flush_cookie_jar():
    """Empty the user's cookie jar."""
    return CookieStep({"type": "flush_cookie_jar"})


def flush_session_cookies():
    """Drop the user's cookies that have no expiry, as a browser does when it closes."""
    return CookieStep({"type": "flush_session_cookies"})
