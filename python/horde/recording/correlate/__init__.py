"""Automatic correlation: every value a request sends that an earlier response gave becomes a
check saving it on that response and ``${variable}`` in that slot alone.

The journey is walked in order, with the browser's cookie jar simulated alongside. For each
slot of a request:

1. a value the client made or typed before keeps the variable it got then;
2. framework rules (``rules.py``): JSF ViewStates, Django's token and ``X-CSRFToken``, ASP.NET's
   hidden fields, Rails/Spring/Laravel tokens, bearer tokens from a login's JSON, ids in paths;
3. typed input (user names, passwords, search terms): a column of the feeder;
4. generic matching: a value worth correlating (``values.py``) found in the latest earlier
   response, with the most robust extractor that gives exactly the recorded value there
   (``extractors.py``), or in the cookie jar;
5. values the client made up (uuids, the clock, random state): template functions; an OAuth
   PKCE pair (a ``code_challenge`` that is the S256 of a ``code_verifier`` sent later) becomes
   a verifier of each user's own and its ``pkce_challenge()``.

A variable's first check is required; the same check on later responses refreshes it and is
optional, so that a page without the token passes. The correlator never rewrites text outside
the slot (k6-studio#848's ``replaceAll``).
"""

from __future__ import annotations

import base64
import hashlib
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set, Tuple
from urllib.parse import urlsplit

from ..codegen import identifier
from ..decisions import Decisions, Extraction, FeederColumn, PreStep, Slot, Use, request_slots
from ..exchanges import Exchange
from ..normalize import Journey, is_static
from .extractors import Extractor, ResponseView, find_extractor, jsonpath_extractor, json_text, py
from .jar import Cookie, Jar, sent_cookies
from .rules import TOKEN_KEYS, field_rule, header_rule, is_id_key
from .values import SECRET_NAMES, TOKEN_NAMES, generated_expression, is_typed, worth_correlating

# A response counts as a source only if it ended before the request started (with this slack
# for clocks that round).
CLOCK_SLACK = 0.002
# The client's clock as template functions make it, each a fresh reading at every request.
CLOCKS = {"__now_ms()": "epoch milliseconds", "__now_s()": "epoch seconds"}


@dataclass
class CorrelationOptions:
    enabled: bool = True
    # Recorded values shown to be dynamic (by a second recording or a replay): correlated even
    # where the filters would skip them.
    dynamic_values: Set[str] = field(default_factory=set)


@dataclass
class _ClientValue:
    expression: str
    origin: str
    note: str


def correlate(journey: Journey, options: Optional[CorrelationOptions] = None) -> Decisions:
    return _Correlator(journey, options or CorrelationOptions()).run()


class _Correlator:
    def __init__(self, journey: Journey, options: CorrelationOptions):
        self.journey = journey
        self.options = options
        self.decisions = Decisions()
        self.jar = Jar()
        self.views: List[ResponseView] = []
        self.static_text: List[str] = []
        # Variable name -> what sets it (an extractor's code, a cookie, a column, a function).
        self.variables: Dict[str, str] = {}
        self.client_values: Dict[str, _ClientValue] = {}
        self.client_sent: Set[str] = set()
        # Recorded value -> the correlation that gave it last, reused while nothing overwrote it.
        self.correlated: Dict[str, Use] = {}
        self.script_cookies_seen: Set[Tuple[str, str]] = set()
        # A PKCE challenge the journey sends -> the verifier it answers, sent later.
        self.pkce_verifiers: Dict[str, str] = pkce_pairs(journey)

    def run(self) -> Decisions:
        for index, step in enumerate(self.journey.steps):
            self.step(index, step)
            self.views.append(ResponseView(index, step))
            self.jar.receive(step)
            for resource in step.resources:
                self.jar.receive(resource)
                if resource.final.text and is_static(resource):
                    self.static_text.append(resource.final.text)
        self.finish()
        return self.decisions

    def finish(self) -> None:
        """The first check of each variable is required; the later ones refresh it."""
        first: Dict[str, int] = {}
        for extraction in sorted(self.decisions.extractions, key=lambda e: e.step):
            extraction.optional = extraction.variable in first
            first.setdefault(extraction.variable, extraction.step)

    # A step.

    def step(self, index: int, step: Exchange) -> None:
        path = urlsplit(step.request.url).path
        if self.options.enabled and ";jsessionid=" in path.lower():
            self.decisions.stripped_path_params[index] = "jsessionid="
            note = "the ;jsessionid= path parameter is taken out of URLs: the cookie jar carries JSESSIONID"
            if note not in self.decisions.notes:
                self.decisions.notes.append(note)
        self.script_cookies(index, step)
        for slot in request_slots(index, step):
            if slot.id.kind == "path" and ";" in slot.value and index in self.decisions.stripped_path_params:
                continue
            use = self.slot(index, step, slot)
            if use is not None:
                self.decisions.uses[slot.id] = use
                if use.source_step is not None:
                    self.correlated[slot.value] = use
            elif slot.value:
                self.client_sent.add(slot.value)

    def script_cookies(self, index: int, step: Exchange) -> None:
        """Cookies the request carried that no response set: JavaScript set them."""
        jar = {(c.name, c.value) for c in self.jar.for_url(step.request.url)}
        for name, value in sent_cookies(step):
            if (name, value) in jar or (name, value) in self.script_cookies_seen:
                continue
            self.script_cookies_seen.add((name, value))
            self.decisions.script_cookies.append((index, name, value))

    def slot(self, index: int, step: Exchange, slot: Slot) -> Optional[Use]:
        value = slot.value
        if not value:
            return None
        known = self.client_values.get(value)
        if known is not None and slot.id.kind != "header":
            return Use(slot, known.expression, known.origin, variable=known.expression, note=known.note)
        if self.options.enabled:
            use = self.pkce_challenge(index, slot) or self.still_held(slot, index) or self.by_rule(index, step, slot)
            if use is not None:
                return use
        if is_typed(slot) and (SECRET_NAMES.search(slot.name) or not any(view.contains(value) for view in self.views)):
            return self.typed(slot)
        if not self.options.enabled:
            return None
        use = self.generic(index, step, slot) or self.generated(index, step, slot)
        if use is None and worth_correlating(slot) and slot.value not in self.client_sent and _looks_made(slot):
            self.decisions.unresolved.append(slot)
        return use

    def pkce_challenge(self, index: int, slot: Slot) -> Optional[Use]:
        """A PKCE challenge: each user makes a verifier of its own here (as long as the
        recorded one) and sends its challenge; the later ``code_verifier`` sends the verifier.
        Replaying the recorded pair works only while the server lets a challenge be used again."""
        verifier = self.pkce_verifiers.get(slot.value)
        if verifier is None:
            return None
        made = self.client_values.get(verifier)
        if made is None:
            variable = self.variable_for("code_verifier", f"generated {verifier}", index, index)
            expression = f"__random_string({len(verifier)})"
            self.decisions.pre_steps.append(PreStep(index, f".set({{{py(variable)}: {py('${' + expression + '}')}}})",
                                                    chain_call=True))
            made = _ClientValue(variable, "generated",
                                f"generated: the user's own PKCE code verifier ({expression} once, then reused)")
            self.client_values[verifier] = made
        return Use(slot, f"{made.expression}.pkce_challenge()", "generated", variable=made.expression,
                   note=f"generated: the S256 challenge of the user's PKCE verifier `{made.expression}`")

    def still_held(self, slot: Slot, index: int) -> Optional[Use]:
        """The variable that already holds this recorded value, when no check has changed it
        since: one variable per value, not a new check on every response that repeats it."""
        earlier = self.correlated.get(slot.value)
        if earlier is None or earlier.variable is None:
            return None
        if any(e.variable == earlier.variable and earlier.source_step < e.step < index
               for e in self.decisions.extractions):
            return None
        return Use(slot, earlier.expression, earlier.origin, variable=earlier.variable, source_step=earlier.source_step,
                   prefix=earlier.prefix, note=earlier.note)

    # Sources.

    def sources(self, step: Exchange, value: str):
        """The earlier responses holding ``value``, latest first."""
        for view in reversed(self.views):
            if view.exchange.ended > step.started + CLOCK_SLACK:
                continue
            if view.contains(value):
                yield view

    def bind(self, index: int, slot: Slot, view: ResponseView, extractor: Extractor, name: str, origin: str,
             prefix: str = "", token: Optional[str] = None) -> Use:
        """``token`` names the logical value when several extractors read it (a rule's), else
        the extractor itself does."""
        variable = self.variable_for(name, token or extractor.code, view.step, index)
        if not any(e.step == view.step and e.variable == variable for e in self.decisions.extractions):
            self.decisions.extractions.append(Extraction(view.step, variable, extractor.code, extractor.kind,
                                                         origin=origin))
        note = f'{origin}: from "{view.name}" (request {view.step + 1}), {extractor.description}'
        return Use(slot, variable, origin, variable=variable, source_step=view.step, prefix=prefix, note=note)

    def variable_for(self, name: str, signature: str, source_step: int, use_step: int) -> str:
        """A variable for the value a check saves at ``source_step`` for ``use_step``: the same
        one as before for the same check, unless another step's check of it would overwrite
        the value in between."""
        base = identifier(name, "value")
        candidate, counter = base, 2
        while True:
            known = self.variables.get(candidate)
            if known is None:
                self.variables[candidate] = signature
                return candidate
            if known == signature and not any(
                    e.variable == candidate and source_step < e.step < use_step for e in self.decisions.extractions):
                return candidate
            candidate = f"{base}_{counter}"
            counter += 1

    def cookie_use(self, index: int, slot: Slot, cookie: Cookie, name: str, origin: str) -> Use:
        variable = self.variable_for(name, f"cookie {cookie.name}", index, index)
        domain = "" if cookie.domain == urlsplit(self.journey.base_origin).hostname else f", domain={py(cookie.domain)}"
        code = f"get_cookie_value({py(cookie.name)}{domain}).save_as({py(variable)})"
        if not any(p.step == index and p.code == code for p in self.decisions.pre_steps):
            self.decisions.pre_steps.append(PreStep(index, code))
        note = f"{origin}: the cookie {cookie.name} from the cookie jar"
        return Use(slot, variable, origin, variable=variable, note=note)

    # Rules.

    def by_rule(self, index: int, step: Exchange, slot: Slot) -> Optional[Use]:
        if slot.id.kind in ("form", "part", "query", "json"):
            rule = field_rule(slot.name)
            if rule is not None:
                for view in self.sources(step, slot.value):
                    for extractor in rule.extractors(slot.name):
                        if extractor.works_on(view, slot.value):
                            return self.bind(index, slot, view, extractor, rule.variable, f"{rule.framework} rule",
                                             token=f"rule {rule.variable} {slot.name}")
            return None
        if slot.id.kind == "header":
            if slot.name.lower() == "authorization":
                return self.bearer(index, step, slot)
            rule = header_rule(slot.name)
            if rule is None:
                return None
            for cookie in self.jar.for_url(step.request.url):
                if cookie.name in rule.cookies and cookie.value == slot.value:
                    return self.cookie_use(index, slot, cookie, rule.variable, f"{rule.framework} rule")
            for view in self.sources(step, slot.value):
                for extractor in rule.extractors():
                    if extractor.works_on(view, slot.value):
                        return self.bind(index, slot, view, extractor, rule.variable, f"{rule.framework} rule",
                                         token=f"rule {rule.variable} {slot.name}")
            return None
        if slot.id.kind == "path" and slot.value.isdigit():
            return self.path_id(index, step, slot)
        return None

    def bearer(self, index: int, step: Exchange, slot: Slot) -> Optional[Use]:
        scheme, _, token = slot.value.partition(" ")
        if scheme.lower() not in ("bearer", "token", "jwt") or not token.strip():
            return None
        token = token.strip()
        origin = "bearer token rule (JWT)" if token.startswith("eyJ") and token.count(".") == 2 else "bearer token rule"
        for view in self.sources(step, token):
            paths = []
            if view.json is not None:
                from ..decisions import json_leaves

                paths = [path for path, leaf in json_leaves(view.json) if json_text(leaf) == token]
                # A token under a token's name first.
                paths.sort(key=lambda path: not (path and path[-1] in TOKEN_KEYS))
            extractor = find_extractor(view, token, json_paths=paths)
            if extractor is not None:
                name = next((k for k in reversed(paths[0]) if isinstance(k, str)), "token") if paths else "token"
                return self.bind(index, slot, view, extractor, name, origin, prefix=scheme + " ")
        return None

    def path_id(self, index: int, step: Exchange, slot: Slot) -> Optional[Use]:
        """A number in a path that an earlier JSON response gave under an id key."""
        from ..decisions import json_leaves

        for view in self.sources(step, slot.value):
            if view.json is None:
                continue
            for path, leaf in json_leaves(view.json):
                if path and is_id_key(path[-1]) and json_text(leaf) == slot.value:
                    extractor = jsonpath_extractor(path)
                    if extractor.works_on(view, slot.value):
                        return self.bind(index, slot, view, extractor, _id_name(path, view), "REST id rule")
        return None

    # The rest.

    def typed(self, slot: Slot) -> Use:
        column = identifier(slot.name, "input")
        taken = {c.column for c in self.decisions.feeder}
        base, counter = column, 2
        while column in taken or (column in self.variables and self.variables[column] != f"column {column}"):
            column = f"{base}_{counter}"
            counter += 1
        self.variables[column] = f"column {column}"
        reason = f"typed into {slot.where}"
        self.decisions.feeder.append(FeederColumn(column, slot.value, reason))
        note = f"typed input: the feeder's column {column}"
        self.client_values[slot.value] = _ClientValue(column, "typed input", note)
        return Use(slot, column, "typed input", variable=column, note=note)

    def generic(self, index: int, step: Exchange, slot: Slot) -> Optional[Use]:
        value = slot.value
        dynamic = value in self.options.dynamic_values
        if not dynamic and (not worth_correlating(slot) or value in self.client_sent):
            return None
        if not dynamic and any(value in text for text in self.static_text):
            return None  # a constant of the site's scripts or styles
        if slot.id.kind != "header" or len(value) >= 8:
            cookie = self.jar.cookie_with_value(step.request.url, value)
            if cookie is not None:
                return self.cookie_use(index, slot, cookie, cookie.name, "generic")
        origin = "replay" if dynamic and not worth_correlating(slot) else "generic"
        for view in self.sources(step, value):
            extractor = find_extractor(view, value)
            if extractor is not None:
                return self.bind(index, slot, view, extractor, _slot_variable_name(slot, extractor), origin)
        return None

    def generated(self, index: int, step: Exchange, slot: Slot) -> Optional[Use]:
        expression = generated_expression(slot, step.started)
        if expression is None:
            return None
        if expression in CLOCKS:
            return Use(slot, expression, "generated", note=f"generated: the client's clock, in {CLOCKS[expression]}")
        variable = self.variable_for(slot.name, f"generated {slot.value}", index, index)
        self.decisions.pre_steps.append(PreStep(index, f".set({{{py(variable)}: {py('${' + expression + '}')}}})",
                                                chain_call=True))
        note = f"generated: made by the client ({expression} once, then reused)"
        self.client_values[slot.value] = _ClientValue(variable, "generated", note)
        return Use(slot, variable, "generated", variable=variable, note=note)


def pkce_pairs(journey: Journey) -> Dict[str, str]:
    """The S256 challenge of each ``code_verifier`` the journey sends (RFC 7636: 43 to 128
    characters), mapped to that verifier."""
    pairs = {}
    for index, step in enumerate(journey.steps):
        for slot in request_slots(index, step):
            if slot.name == "code_verifier" and 43 <= len(slot.value) <= 128:
                digest = hashlib.sha256(slot.value.encode()).digest()
                pairs[base64.urlsafe_b64encode(digest).rstrip(b"=").decode()] = slot.value
    return pairs


def _looks_made(slot: Slot) -> bool:
    """A token's name, or a long random-looking value."""
    value = slot.value
    if slot.id.kind == "header" and slot.name.lower() == "authorization":
        return True
    mixed = any(c.isdigit() for c in value) and any(c.isalpha() for c in value)
    return bool(TOKEN_NAMES.search(slot.name)) or (len(value) >= 16 and mixed)


def _id_name(path: Tuple, view: ResponseView) -> str:
    key = path[-1]
    if key.lower() != "id":
        return key
    parent = next((k for k in reversed(path[:-1]) if isinstance(k, str)), None)
    if parent is None:
        words = [w for w in view.exchange.request.path.split("/") if w and not w.isdigit() and w.isidentifier()]
        parent = words[-1] if words else "item"
    singular = parent[:-1] if parent.endswith("s") and len(parent) > 3 else parent
    return f"{singular}_id"


def _slot_variable_name(slot: Slot, extractor: Extractor) -> str:
    if slot.id.kind != "path" and (TOKEN_NAMES.search(slot.name) or slot.id.kind != "header"):
        return slot.name
    match = re.search(r"[\[.]'?([A-Za-z_][A-Za-z0-9_]*)'?\]?\"\)$", extractor.code)
    if extractor.kind == "jsonpath" and match:
        return match.group(1)
    return slot.name if slot.id.kind != "path" else "id"
