"""WebSockets and server-sent events, in Gatling's shape. A virtual user holds its sockets by
name (``"default"`` unless ``.socket(name)`` says otherwise, Gatling's ``wsName``) until it
closes them or ends.

    >>> from horde import ws, sse, substring, jsonpath
    >>> say = ws("say hello").send_text("hello").await_(5).on(ws.check_text_message("echo").check(substring("hello")))
    >>> say.to_step()["await"]["messages"][0]["name"]
    'echo'
    >>> sse("ticks").get("/sse/events").await_(5).on(sse.check_message("tick").check(jsonpath("$.event").is_("tick"))).to_step()["type"]
    'sse_connect'

Each expected message is its own statistics row, timed from the end of the send (or the
opening) to its arrival; the opening is timed on the step's row. Checks read a WebSocket
message's text, or an event as JSON ``{"event", "id", "data"}``.
"""

import base64
from dataclasses import dataclass, replace
from typing import Optional

from ._durations import to_ms
from ._protocol import Step
from .checks import Check
from .errors import DslError


def _checks(checks, where):
    for check in checks:
        if not isinstance(check, Check):
            raise DslError(f"{where} takes checks such as substring(...) or jsonpath(...), got {check!r}")
        if check.source.get("type") in ("status", "header"):
            raise DslError(f"{where}: a message has no status or headers; check its text")
    return tuple(checks)


@dataclass(frozen=True)
class MessageCheck:
    """One expected message: the first that passes ``matching`` (others are skipped), then
    ``check``-ed. Its name is its row."""

    name: str
    matching_checks: tuple = ()
    checks: tuple = ()

    def matching(self, *checks):
        """Only messages passing these checks count as this one (Gatling's ``matching``)."""
        return replace(self, matching_checks=self.matching_checks + _checks(checks, "matching()"))

    def check(self, *checks):
        return replace(self, checks=self.checks + _checks(checks, "check()"))

    def to_plan(self):
        plan = {"name": self.name}
        if self.matching_checks:
            plan["matching"] = [c.to_plan() for c in self.matching_checks]
        if self.checks:
            plan["checks"] = [c.to_plan() for c in self.checks]
        return plan


def _message_name(name, what):
    if not isinstance(name, str) or not name:
        raise DslError(f"{what}() needs a non-empty name (the message's row), got {name!r}")
    return MessageCheck(name)


@dataclass(frozen=True)
class SocketStep(Step):
    """A step on a socket; ``await_(seconds).on(...)`` waits for messages after it."""

    hint = "a socket step (ws(...), sse(...))"

    step: dict

    def header(self, name, value):
        """A header of the opening request."""
        if "url" not in self.step:
            raise DslError("header(): only an opening (connect, get) sends headers")
        headers = list(self.step.get("headers", [])) + [{"name": str(name), "value": str(value)}]
        return SocketStep({**self.step, "headers": headers})

    def await_(self, seconds):
        """Wait at most ``seconds`` for the messages given to ``.on(...)``, in order."""
        if self.step["type"].endswith("_close"):
            raise DslError("await_(): nothing to wait for after a close")
        return _Awaiting(self.step, to_ms(seconds, "await_()"))

    def to_step(self):
        return dict(self.step)


@dataclass(frozen=True)
class _Awaiting:
    step: dict
    timeout_ms: int

    def on(self, *messages):
        if not messages:
            raise DslError("on() needs at least one expected message, such as ws.check_text_message(name)")
        for message in messages:
            if not isinstance(message, MessageCheck):
                raise DslError(f"on() takes ws.check_text_message(...) or sse.check_message(...), got {message!r}")
        expected = {"timeout_ms": self.timeout_ms, "messages": [m.to_plan() for m in messages]}
        return SocketStep({**self.step, "await": expected})


@dataclass(frozen=True)
class _SocketName:
    kind: str
    name: str
    socket_name: str = "default"

    def socket(self, name):
        """Which of the user's sockets this step uses (Gatling's ``wsName``)."""
        if not isinstance(name, str) or not name:
            raise DslError(f"socket() needs a name, got {name!r}")
        return replace(self, socket_name=name)

    def _step(self, action, **fields):
        return SocketStep({"type": f"{self.kind}_{action}", "name": self.name, "socket": self.socket_name, **fields})

    def await_(self, seconds):
        """Wait for messages without sending anything first."""
        return self._step("await").await_(seconds)

    def close(self):
        return self._step("close")


@dataclass(frozen=True)
class WsName(_SocketName):
    def connect(self, url):
        """Open the WebSocket: ``ws://``, ``wss://``, or relative to the base URL."""
        return self._step("connect", url=str(url))

    def send_text(self, text):
        """Send a text message (templated)."""
        return self._step("send", text=str(text))

    def send_bytes(self, data):
        """Send a binary message."""
        if not isinstance(data, (bytes, bytearray)):
            raise DslError(f"send_bytes() takes bytes, got {type(data).__name__}")
        return self._step("send", binary_base64=base64.b64encode(bytes(data)).decode())


@dataclass(frozen=True)
class SseName(_SocketName):
    def get(self, url):
        """Open the event stream: a GET with ``Accept: text/event-stream``."""
        return self._step("connect", url=str(url))


def _step_name(name, what):
    if not isinstance(name, str) or not name:
        raise DslError(f"{what}() needs a non-empty name, got {name!r}")
    return name


class _Ws:
    """``ws(name)`` starts a WebSocket step; ``ws.check_text_message(name)`` expects a message."""

    def __call__(self, name):
        return WsName("ws", _step_name(name, "ws"))

    def check_text_message(self, name):
        return _message_name(name, "check_text_message")

    def check_binary_message(self, name):
        return _message_name(name, "check_binary_message")


class _Sse:
    """``sse(name)`` starts an event stream step; ``sse.check_message(name)`` expects an event."""

    def __call__(self, name):
        return SseName("sse", _step_name(name, "sse"))

    def check_message(self, name):
        return _message_name(name, "check_message")


ws = _Ws()
sse = _Sse()
