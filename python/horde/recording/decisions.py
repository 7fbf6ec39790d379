"""What correlation decided, as the code generator reads it.

A request is cut into *slots*: each value it sends that a simulation can template on its own (a
path segment, a query parameter, a form field, a multipart text part, a JSON leaf, a header).
Correlation turns a slot into ``${expression}`` (:class:`Use`) and adds what sets the variable:
a check saving it on an earlier response (:class:`Extraction`), a step before the request
(:class:`PreStep`: read a cookie, set a generated value), or a feeder column.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple
from urllib.parse import unquote, urlsplit

from .exchanges import Exchange

# Headers whose values are the browser's or the engine's, never data a server handed out.
STATIC_HEADERS = {
    "accept", "accept-encoding", "accept-language", "cache-control", "connection", "content-length", "content-type",
    "cookie", "dnt", "host", "if-modified-since", "if-none-match", "origin", "pragma", "priority", "referer",
    "te", "upgrade-insecure-requests", "user-agent", "keep-alive", "proxy-connection", "range", "if-range",
    "x-requested-with", "purpose", "sec-purpose", "upgrade",
}


@dataclass(frozen=True)
class SlotId:
    step: int
    kind: str  # path, query, form, part, json, header
    key: Tuple  # (index,) or a JSON path


@dataclass
class Slot:
    id: SlotId
    name: str  # the field, parameter, header or JSON key it belongs to
    value: str  # decoded, as the server reads it

    @property
    def where(self) -> str:
        kind = {"path": "path segment", "query": "query parameter", "form": "form field", "part": "multipart part",
                "json": "JSON field", "header": "header"}[self.id.kind]
        return f"{kind} {self.name}"


def request_slots(step_index: int, exchange: Exchange) -> List[Slot]:
    """Every value the request sends, in the order it sends them."""
    request = exchange.request
    slots = []
    for i, segment in enumerate(urlsplit(request.url).path.split("/")):
        if segment:
            slots.append(Slot(SlotId(step_index, "path", (i,)), segment, unquote(segment)))
    for i, (name, value) in enumerate(request.query()):
        slots.append(Slot(SlotId(step_index, "query", (i,)), name, value))
    body = request.body
    if body.kind == "form":
        for i, (name, value) in enumerate(body.fields):
            slots.append(Slot(SlotId(step_index, "form", (i,)), name, value))
    elif body.kind == "multipart":
        for i, part in enumerate(body.parts):
            text = part.text()
            if not part.is_file and text is not None:
                slots.append(Slot(SlotId(step_index, "part", (i,)), part.name, text))
    elif body.kind == "json":
        for path, value in json_leaves(body.json_value):
            if isinstance(value, bool) or value is None:
                continue
            name = next((str(k) for k in reversed(path) if isinstance(k, str)), "value")
            slots.append(Slot(SlotId(step_index, "json", path), name, _json_text(value)))
    for i, (name, value) in enumerate(request.headers):
        if name.lower() in STATIC_HEADERS or name.startswith(":") or name.lower().startswith("sec-"):
            continue
        slots.append(Slot(SlotId(step_index, "header", (i,)), name, value))
    return slots


def _json_text(value) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def json_leaves(value, path=()):
    """(path, leaf) of every scalar in a JSON value, depth first, in document order."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from json_leaves(item, path + (key,))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from json_leaves(item, path + (i,))
    else:
        yield path, value


@dataclass
class Use:
    """A slot sent as ``${expression}``; ``prefix`` is kept before it (``Bearer ``)."""

    slot: Slot
    expression: str
    origin: str  # a framework rule's name, "generic", "generated", "typed input", "replay"
    variable: Optional[str] = None
    source_step: Optional[int] = None
    prefix: str = ""
    note: str = ""


@dataclass
class Extraction:
    """A check saving ``variable`` on a step's response: ``code`` is its DSL expression."""

    step: int
    variable: str
    code: str
    kind: str  # css, jsonpath, regex, header
    optional: bool = False
    origin: str = "generic"


@dataclass
class PreStep:
    """A step before a request: ``code`` is its DSL expression (for ``exec``) or a chain call."""

    step: int
    code: str
    chain_call: bool = False  # .set(...) rather than .exec(...)


@dataclass
class FeederColumn:
    column: str
    value: str
    reason: str


@dataclass
class Decisions:
    uses: Dict[SlotId, Use] = field(default_factory=dict)
    extractions: List[Extraction] = field(default_factory=list)
    pre_steps: List[PreStep] = field(default_factory=list)
    feeder: List[FeederColumn] = field(default_factory=list)
    # Cookies a request sent that no response set (JavaScript set them): added as recorded.
    script_cookies: List[Tuple[int, str, str]] = field(default_factory=list)
    # Path segments taken out (;jsessionid=...: the cookie jar carries the session).
    stripped_path_params: Dict[int, str] = field(default_factory=dict)
    notes: List[str] = field(default_factory=list)
    # Values that look made by the server but that no earlier response holds: sent as recorded.
    unresolved: List[Slot] = field(default_factory=list)

    def extractions_at(self, step: int) -> List[Extraction]:
        return [e for e in self.extractions if e.step == step]

    def pre_steps_at(self, step: int) -> List[PreStep]:
        return [p for p in self.pre_steps if p.step == step]

    def uses_at(self, step: int) -> Dict[SlotId, Use]:
        return {slot: use for slot, use in self.uses.items() if slot.step == step}
