"""Extractors: how a check finds a value in a response, written as the DSL's checks and
evaluated here on the recorded response exactly as the engine will at run time (the first
match). An extractor is written only when its evaluation gives exactly the recorded value.

Most robust first: a response header, a JSON path, a CSS selector on a form field or a meta
tag, then a regex with just enough left context to be unique and the character after the value
as its end.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Callable, List, Optional, Tuple
from urllib.parse import parse_qsl, quote, unquote_plus, urlsplit

from ..exchanges import Exchange, header_values, html_title
from ..htmlscan import Page, css_identifier_ok, css_string, scan


from ..codegen import py  # noqa: E402 - one way to write a string literal


class ResponseView:
    """A recorded response as checks see it: the response that ended the redirect chain."""

    def __init__(self, step: int, exchange: Exchange):
        self.step = step
        self.exchange = exchange
        self.response = exchange.final
        self.text = self.response.text or ""
        self._page: Optional[Page] = None
        self._json = None
        self._json_read = False

    @property
    def name(self) -> str:
        title = html_title(self.text) if self.response.is_html else None
        return title or f"{self.exchange.request.method} {self.exchange.request.path}"

    @property
    def page(self) -> Optional[Page]:
        if self._page is None and self.response.is_html and self.text:
            self._page = scan(self.text)
        return self._page

    @property
    def json(self):
        if not self._json_read:
            self._json_read = True
            self._json = self.response.json()
        return self._json

    def contains(self, value: str) -> bool:
        """Whether the response holds the value: in its text as it is, HTML- or JSON-escaped, in
        a header, a JSON leaf (whatever its escapes) or an attribute (whatever its character
        references)."""
        if not value:
            return False
        if any(form in self.text for form in _encodings(value)) or any(value == v for _, v in self.response.headers):
            return True
        if any(value in v for v in header_values(self.response.headers, "location")):
            return True
        if self.json is not None:
            from ..decisions import json_leaves

            if any(json_text(leaf) == value for _, leaf in json_leaves(self.json)):
                return True
        if self.page is not None and "&" in self.text:
            return any(value in element.attrs.values() for element in self.page.elements)
        return False


def _encodings(value: str) -> List[str]:
    """How a value may be written in a body: as is, HTML-escaped, JSON-escaped."""
    import html

    forms = [value, html.escape(value, quote=True), json.dumps(value)[1:-1]]
    return list(dict.fromkeys(forms))


@dataclass
class Extractor:
    kind: str  # the DSL function: css, jsonpath, regex, header
    code: str  # its DSL expression, without save_as
    evaluate: Callable[[ResponseView], Optional[str]]
    description: str

    def works_on(self, view: ResponseView, value: str) -> bool:
        try:
            return self.evaluate(view) == value
        except Exception:  # noqa: BLE001 - an extractor that cannot run on the response does not work
            return False


# Headers.

def header_extractor(name: str) -> Extractor:
    def evaluate(view):
        values = header_values(view.response.headers, name)
        return values[0] if values else None

    return Extractor("header", f"header({py(name)})", evaluate, f"header {name}")


def location_extractor(view: ResponseView, value: str) -> Optional[Extractor]:
    """A query parameter's value in a redirect's Location: ``header_regex("Location",
    "[?&]code=([^&#]*)")``, which a request that does not follow its redirect reads."""
    for location in header_values(view.response.headers, "location"):
        for name, found in parse_qsl(urlsplit(location).query, keep_blank_values=True):
            if found != value:
                continue
            pattern = "[?&]" + re.escape(quote(name, safe="")) + "=([^&#]*)"
            compiled = re.compile(pattern)

            def evaluate(view, compiled=compiled):
                for header in header_values(view.response.headers, "location"):
                    match = compiled.search(header)
                    if match:
                        return unquote_plus(match.group(1))
                return None

            extractor = Extractor("header_regex", f"header_regex(\"Location\", {py(pattern)})", evaluate,
                                  f"the {name} parameter of its Location")
            if extractor.works_on(view, value) and quote(value, safe="") == value:
                return extractor
    return None


# JSON.

def jsonpath_of(path: Tuple) -> str:
    text = "$"
    for key in path:
        if isinstance(key, int):
            text += f"[{key}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            text += f".{key}"
        else:
            text += "['" + key.replace("\\", "\\\\").replace("'", "\\'") + "']"
    return text


def json_text(value) -> Optional[str]:
    """A JSON value as the engine's check gives it: text as it is, others as JSON; null is
    nothing."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return json.dumps(value)


def jsonpath_extractor(path: Tuple) -> Extractor:
    def evaluate(view):
        value = view.json
        for key in path:
            if isinstance(key, int) and isinstance(value, list) and -len(value) <= key < len(value):
                value = value[key]
            elif isinstance(key, str) and isinstance(value, dict) and key in value:
                value = value[key]
            else:
                return None
        return json_text(value)

    text = jsonpath_of(path)
    return Extractor("jsonpath", f"jsonpath({py(text)})", evaluate, f"JSON {text}")


# HTML.

def css_extractor(selector: str, attribute: Optional[str], occurrence: int = 0) -> Extractor:
    def evaluate(view):
        page = view.page
        if page is None:
            return None
        found = page.select(selector)
        if len(found) <= occurrence:
            return None
        element = found[occurrence]
        return element.attrs.get(attribute) if attribute else element.text

    code = f"css({py(selector)}" + (f", {py(attribute)}" if attribute else "") + ")"
    if occurrence:
        code += f".find({occurrence})"
    where = f"{selector} {attribute}" if attribute else selector
    return Extractor("css", code, evaluate, f"HTML {where}" + (f" (match {occurrence + 1})" if occurrence else ""))


def html_extractors(view: ResponseView, value: str) -> List[Extractor]:
    """CSS extractors for the elements whose attribute holds ``value``: a form field's value,
    a meta tag's content, an element with an id."""
    page = view.page
    if page is None:
        return []
    candidates = []
    for index, element in enumerate(page.elements):
        for attribute, attribute_value in element.attrs.items():
            if attribute_value != value or attribute in ("name", "id", "class", "type"):
                continue
            candidates.extend(_selectors_for(page, index, attribute))
    return candidates


def _selectors_for(page: Page, index: int, attribute: str) -> List[Extractor]:
    element = page.elements[index]
    selectors = []
    if element.attrs.get("name"):
        base = f'{element.tag}[name="{css_string(element.attrs["name"])}"]'
        selectors.append(base)
        if element.form is not None:
            form = page.elements[element.form]
            if form.attrs.get("id") and css_identifier_ok(form.attrs["id"]):
                selectors.append(f"form#{form.attrs['id']} {base}")
    if element.attrs.get("id") and css_identifier_ok(element.attrs["id"]):
        selectors.append(f"{element.tag}#{element.attrs['id']}")
    if element.tag == "meta" and element.attrs.get("property"):
        selectors.append(f'meta[property="{css_string(element.attrs["property"])}"]')
    extractors = []
    for selector in selectors:
        matches = page.select(selector)
        occurrence = next((i for i, found in enumerate(matches) if found is element), None)
        if occurrence is not None:
            extractors.append(css_extractor(selector, attribute, occurrence))
    # The plain selector first, unless it needs an occurrence and a qualified one does not.
    extractors.sort(key=lambda e: (".find(" in e.code, len(e.code)))
    return extractors


# Text.

_REGEX_META = set("\\.+*?()|[]{}^$#&-~")
MIN_CONTEXT = 10
MAX_CONTEXT = 48


def regex_escape(text: str) -> str:
    """Escapes as the engine's regex crate does (regex::escape): only its meta characters."""
    return "".join("\\" + c if c in _REGEX_META else c for c in text)


def regex_extractors(view: ResponseView, value: str) -> List[Extractor]:
    """A regex around the value's first occurrence that the first match of finds it: the
    shortest left context that works, and the character after the value as the end."""
    text = view.text
    found = []
    start = text.find(value)
    tried = 0
    while start >= 0 and tried < 8:
        tried += 1
        end = start + len(value)
        if end < len(text):
            terminator = text[end]
            if terminator not in value and terminator not in "\r\n":
                capture = "([^" + ("\\" + terminator if terminator in "\\]^-" else terminator) + "]*)"
                # At least 10 characters of context, as BlazeMeter's recorder: fewer would
                # match other values of the same shape at run time.
                for size in range(min(MIN_CONTEXT, start), MAX_CONTEXT + 1, 2):
                    if size > start or size == 0:
                        break
                    context = text[start - size:start]
                    if "\n" in context:
                        context = context[context.rfind("\n") + 1:]
                        if len(context) < 3:
                            break
                    pattern = regex_escape(context) + capture + regex_escape(terminator)
                    extractor = _regex(pattern)
                    if extractor.works_on(view, value):
                        found.append(extractor)
                        return found
                    if context != text[start - size:start]:
                        break
        start = text.find(value, start + 1)
    return found


def _regex(pattern: str) -> Extractor:
    compiled = re.compile(pattern)

    def evaluate(view):
        match = compiled.search(view.text)
        return match.group(1) if match else None

    return Extractor("regex", f"regex({py(pattern)})", evaluate, f"regex {pattern}")


def regex_extractor(pattern: str) -> Extractor:
    return _regex(pattern)


def find_extractor(view: ResponseView, value: str, json_paths=None) -> Optional[Extractor]:
    """The most robust extractor that gives ``value`` from the response, or None."""
    for name, header_value_ in view.response.headers:
        if header_value_ == value and name.lower() not in ("set-cookie", "date", "content-length", "etag"):
            extractor = header_extractor(name)
            if extractor.works_on(view, value):
                return extractor
    extractor = location_extractor(view, value)
    if extractor is not None:
        return extractor
    if view.json is not None:
        for path in json_paths if json_paths is not None else _json_paths(view.json, value):
            extractor = jsonpath_extractor(path)
            if extractor.works_on(view, value):
                return extractor
    for extractor in html_extractors(view, value):
        if extractor.works_on(view, value):
            return extractor
    for extractor in regex_extractors(view, value):
        return extractor
    return None


def _json_paths(document, value: str) -> List[Tuple]:
    from ..decisions import json_leaves

    return [path for path, leaf in json_leaves(document) if json_text(leaf) == value]
