"""HTML as the importer reads it: the elements of a page with their attributes, the forms they
belong to, and the few CSS selectors the importer writes (``input[name="x"]``,
``form#login input[name="x"]``), evaluated as the engine's ``css()`` check does (the first
match, attribute values with their character references decoded), so that every extractor is
checked on the recorded page before it is written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Dict, List, Optional, Tuple

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr"}


@dataclass
class Element:
    tag: str
    attrs: Dict[str, str]
    ancestors: Tuple[int, ...]  # indexes of the open elements around it, outermost first
    form: Optional[int] = None  # the index of the form it belongs to
    text: str = ""


@dataclass
class Page:
    elements: List[Element] = field(default_factory=list)

    def forms(self) -> List[int]:
        return [i for i, e in enumerate(self.elements) if e.tag == "form"]

    def fields_of(self, form: int) -> List[Element]:
        return [e for e in self.elements if e.form == form and e.tag in ("input", "textarea", "select", "button")]

    def select(self, selector: str) -> List[Element]:
        compounds = parse_selector(selector)
        if compounds is None:
            return []
        found = []
        for index, element in enumerate(self.elements):
            if not _matches(compounds[-1], element):
                continue
            remaining = list(compounds[:-1])
            for ancestor in reversed(element.ancestors):
                if remaining and _matches(remaining[-1], self.elements[ancestor]):
                    remaining.pop()
            if not remaining:
                found.append(element)
        return found


class _Scanner(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.page = Page()
        self.open: List[int] = []
        self.form: Optional[int] = None
        self.text_of: Optional[int] = None

    def handle_starttag(self, tag, attrs):
        values: Dict[str, str] = {}
        for name, value in attrs:
            values.setdefault(name.lower(), value if value is not None else "")
        index = len(self.page.elements)
        element = Element(tag, values, tuple(self.open), self.form)
        self.page.elements.append(element)
        if tag == "form":
            self.form = index
            element.form = index
        if tag not in VOID:
            self.open.append(index)
        if tag in ("textarea", "title", "option"):
            self.text_of = index

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in VOID and self.open and self.page.elements[self.open[-1]].tag == tag:
            self.open.pop()

    def handle_endtag(self, tag):
        if tag == "form":
            self.form = None
        for position in range(len(self.open) - 1, -1, -1):
            if self.page.elements[self.open[position]].tag == tag:
                del self.open[position:]
                break
        self.text_of = None

    def handle_data(self, data):
        if self.text_of is not None:
            self.page.elements[self.text_of].text += data


def scan(html: str) -> Page:
    scanner = _Scanner()
    try:
        scanner.feed(html)
        scanner.close()
    except Exception:  # noqa: BLE001 - html.parser gives up on some broken markup; keep what it read
        pass
    return scanner.page


_COMPOUND = re.compile(r'([a-zA-Z][a-zA-Z0-9-]*)?((?:#[A-Za-z_][\w-]*)?)((?:\[[a-zA-Z_:][\w:.-]*="(?:[^"\\]|\\.)*"\])*)$')
_ATTRIBUTE = re.compile(r'\[([a-zA-Z_:][\w:.-]*)="((?:[^"\\]|\\.)*)"\]')


def parse_selector(selector: str):
    """The compound selectors of a descendant selector the importer writes; None otherwise."""
    compounds = []
    for token in re.findall(r'(?:[^\s"]|"(?:[^"\\]|\\.)*")+', selector):
        match = _COMPOUND.match(token)
        if not match or not token:
            return None
        tag, ident, attributes = match.groups()
        pairs = [(name, _unescape_css(value)) for name, value in _ATTRIBUTE.findall(attributes or "")]
        compounds.append((tag.lower() if tag else None, ident[1:] if ident else None, pairs))
    return compounds or None


def _matches(compound, element: Element) -> bool:
    tag, ident, pairs = compound
    if tag and element.tag != tag:
        return False
    if ident and element.attrs.get("id") != ident:
        return False
    return all(element.attrs.get(name) == value for name, value in pairs)


def css_string(value: str) -> str:
    """``value`` inside a double-quoted CSS string."""
    return value.replace("\\", "\\\\").replace('"', '\\"')


def _unescape_css(value: str) -> str:
    return re.sub(r"\\(.)", r"\1", value)


def css_identifier_ok(value: str) -> bool:
    return bool(re.fullmatch(r"[A-Za-z_][\w-]*", value))
