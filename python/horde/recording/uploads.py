"""Uploads a browser recording lost.

Chrome's and Playwright's HARs leave out the bytes of uploaded files: Chrome writes the
multipart text with empty file parts, Playwright (Chromium) no body at all for a form with a
file. horde never sends an empty file in their place silently:

- a file part without its bytes takes them from ``--files DIR``, by file name (or the folder's
  only file, when the recording does not even name it);
- an upload whose body is missing altogether is rebuilt from the form that sent it (the latest
  page with a multipart form posting to that URL): its hidden fields with their values, its
  file inputs, and its other fields, whose typed values are not in the recording;
- what is still missing is named in the report and on the console, and the simulation points
  at a file that does not exist yet, so that ``horde run`` stops before sending anything.
"""

from __future__ import annotations

import os
from typing import List, Optional
from urllib.parse import urljoin, urlsplit

from .exchanges import Body, Exchange, Part, header_value, media_type
from .htmlscan import scan
from .normalize import Journey

REPLACEMENT_CHARACTER = "\ufffd".encode("utf-8")


def resolve_uploads(journey: Journey, files_dir: Optional[str]) -> List[str]:
    """Mends the journey's uploads in place; returns warnings for the report."""
    warnings = []
    available = _files_in(files_dir)
    for position, step in enumerate(journey.steps):
        body = step.request.body
        where = f"entry {step.index} ({step.request.method} {urlsplit(step.request.url).path})"
        if body.kind == "missing":
            rebuilt = _rebuild_from_form(step, journey.steps[:position])
            if rebuilt is None:
                warnings.append(f"{where}: the recording has no body for this request, and no form on an earlier "
                                f"page posts to it: it is sent without one")
                continue
            step.request.body, page, unknown = rebuilt
            warnings.append(f"{where}: the recording left the upload's body out (browsers do); rebuilt from the form "
                            f"on entry {page.index}" + (f"; typed values not recorded, sent empty: {', '.join(unknown)}"
                                                        if unknown else ""))
            body = step.request.body
        if body.kind != "multipart":
            continue
        for part in body.parts:
            if not part.is_file:
                continue
            if not body.exact and (not part.data or REPLACEMENT_CHARACTER in part.data):
                part.complete = False
            if part.complete:
                continue
            found = _find_file(part, available)
            if found is None:
                named = f"'{part.file_name}'" if part.file_name else "(its name is not recorded either)"
                warnings.append(f"{where}: the recording lacks the bytes of the file {named} of part '{part.name}': "
                                f"import again with --files DIR holding it, or put it where the simulation says")
                continue
            with open(found, "rb") as handle:
                part.data = handle.read()
            if not part.file_name:
                part.file_name = os.path.basename(found)
            part.complete = True
            warnings.append(f"{where}: the file of part '{part.name}' is taken from {found}")
    return warnings


def _files_in(files_dir: Optional[str]) -> List[str]:
    if not files_dir:
        return []
    return sorted(os.path.join(files_dir, name) for name in os.listdir(files_dir)
                  if os.path.isfile(os.path.join(files_dir, name)))


def _find_file(part: Part, available: List[str]) -> Optional[str]:
    if part.file_name:
        for path in available:
            if os.path.basename(path) == os.path.basename(part.file_name):
                return path
        return None
    return available[0] if len(available) == 1 else None


def _rebuild_from_form(step: Exchange, earlier: List[Exchange]):
    """A multipart body from the form that posted to this URL, or None."""
    content_type = header_value(step.request.headers, "content-type")
    if media_type(content_type) != "multipart/form-data":
        return None
    target = urlsplit(step.request.url)
    for page in reversed(earlier):
        text = page.final.text
        if not text or not page.final.is_html:
            continue
        document = scan(text)
        for form in document.forms():
            attrs = document.elements[form].attrs
            if attrs.get("method", "get").lower() != "post" or attrs.get("enctype", "").lower() != "multipart/form-data":
                continue
            action = urlsplit(urljoin(page.final_url, attrs.get("action") or page.final_url))
            if (action.netloc, action.path) != (target.netloc, target.path):
                continue
            parts, unknown = [], []
            for element in document.fields_of(form):
                name = element.attrs.get("name")
                kind = element.attrs.get("type", "text").lower()
                if not name or element.tag == "button" or kind in ("submit", "button", "reset", "image"):
                    continue
                if kind == "file":
                    parts.append(Part(name=name, data=b"", complete=False, file_input=True))
                elif kind == "hidden":
                    parts.append(Part(name=name, data=element.attrs.get("value", "").encode("utf-8")))
                elif kind in ("checkbox", "radio"):
                    if "checked" in element.attrs:
                        parts.append(Part(name=name, data=element.attrs.get("value", "on").encode("utf-8")))
                else:
                    parts.append(Part(name=name, data=b""))
                    unknown.append(name)
            body = Body(kind="multipart", content_type=content_type, exact=False, parts=parts, rebuilt=True)
            return body, page, unknown
    return None
