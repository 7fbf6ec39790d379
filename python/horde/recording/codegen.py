"""Writing the simulation: a Python file in horde's DSL that a person can read and edit.

One scenario, one ``.exec(http(...))`` per step in recorded order with the recorded pauses;
headers every step sends alike on the protocol, the rest in shared ``headers_N`` dicts; bodies
as form fields, JSON, multipart parts (files written beside the simulation) or text; a status
check per request, the checks that save correlated values, and ``${...}`` in the slots that
use them, each with a comment saying where the value comes from. The injection and the base
URL are parameters (``-D users=20``), one user by default.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple
from urllib.parse import quote, urlsplit

from .decisions import Decisions, FeederColumn, SlotId, Use
from .exchanges import Exchange, html_title, media_type
from .normalize import Journey, is_page
from .validate import observed_variables

# Headers the engine writes itself, the cookie jar's, the browser's own and cache validators
# (a replay without a cache must get whole responses).
DROPPED_HEADERS = {
    "cookie", "host", "content-length", "connection", "keep-alive", "proxy-connection", "proxy-authorization",
    "transfer-encoding", "te", "trailer", "accept-encoding", "priority", "if-none-match", "if-modified-since",
    "if-match", "if-unmodified-since", "if-range", "cache-control", "pragma", "upgrade", "http2-settings",
    "purpose", "sec-purpose",
}


def dropped_header(name: str, body_kind: str, value: str) -> bool:
    lowered = name.lower()
    if lowered in DROPPED_HEADERS or lowered.startswith((":", "sec-")):
        return True
    if lowered == "content-type":
        # The engine writes it for forms and multipart bodies (with its own boundary), and
        # application/json for JSON bodies.
        return body_kind in ("form", "multipart") or (body_kind == "json" and media_type(value) == "application/json")
    return False


def py(text: str) -> str:
    """A Python string literal of ``text``: in single quotes when that spares escaping double
    quotes (CSS selectors)."""
    literal_ = json.dumps(text, ensure_ascii=False)
    if '\\"' in literal_ and "'" not in text and "\\" not in text and text.isprintable():
        return "'" + text + "'"
    return literal_


def literal(text: str) -> str:
    """Recorded text as a template that sends it unchanged: ``${`` would start an expression."""
    return text.replace("${", "$${")


def py_scalar(value) -> str:
    """A JSON number, boolean or null as Python source."""
    if isinstance(value, bool):
        return "True" if value else "False"
    return "None" if value is None else repr(value)


def identifier(text: str, fallback: str = "value") -> str:
    """A Python identifier made of ``text`` (lowercase, underscores)."""
    name = re.sub(r"[^0-9A-Za-z]+", "_", text).strip("_").lower()
    if not name:
        name = fallback
    if name[0].isdigit():
        name = f"{fallback}_{name}"
    if name in _RESERVED:
        name += "_"
    return name


_RESERVED = {
    "base_url", "users", "ramp", "duration", "think_time", "journey", "protocol", "injection", "inputs",
    "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del", "elif", "else", "except",
    "finally", "for", "from", "global", "if", "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass",
    "raise", "return", "try", "while", "with", "yield", "none", "true", "false", "http", "param", "csv",
}


@dataclass
class OutputFiles:
    """Where the simulation's data goes, relative to the simulation, and what to write."""

    stem: str
    files_dir: str  # "<stem>_files"
    feeder_path: str  # "<stem>_inputs.csv"
    report_path: str  # "<stem>_import.md"
    # Relative path -> bytes, for the writer; None means the bytes are not in the recording.
    files: Dict[str, Optional[bytes]] = field(default_factory=dict)

    def add_file(self, wanted_name: str, data: Optional[bytes]) -> str:
        name = re.sub(r"[^0-9A-Za-z._-]+", "_", wanted_name).strip("._") or "body.bin"
        path = f"{self.files_dir}/{name}"
        stem, dot, extension = name.rpartition(".")
        counter = 2
        while path in self.files and self.files[path] != data:
            path = f"{self.files_dir}/{stem or name}_{counter}{dot}{extension if stem else ''}"
            counter += 1
        self.files[path] = data
        return path


@dataclass
class Generated:
    source: str
    missing_files: List[Tuple[int, str, str]]  # (entry, part name, file name)
    request_names: List[str]


class SimulationWriter:
    def __init__(self, journey: Journey, decisions: Decisions, outputs: OutputFiles, *, name: str, har_name: str,
                 creator: str, base_url: Optional[str], entry_count: int, observe: bool = False):
        self.journey = journey
        self.decisions = decisions
        self.outputs = outputs
        self.name = name
        self.har_name = har_name
        self.creator = creator
        self.entry_count = entry_count
        # The variant --validate runs: it also saves every response and writes them out.
        self.observed = observed_variables(journey) if observe else None
        self.base_url = (base_url or journey.base_origin).rstrip("/")
        self.imports = {"http", "param", "scenario", "setup", "status", "at_once_users", "ramp_users",
                        "constant_concurrent_users"}
        self.origin_names = self._origin_names()
        self.header_sets: Dict[Tuple, str] = {}
        self.protocol_headers = self._protocol_headers()
        self.missing_files: List[Tuple[int, str, str]] = []
        self.request_names: List[str] = []

    # Origins and URLs.

    def _origin_names(self) -> Dict[str, str]:
        names = {self.journey.base_origin: "base_url"}
        taken = set(names.values())
        for origin in self.journey.origins():
            if origin in names:
                continue
            name = identifier(urlsplit(origin).netloc, "host") + "_url"
            while name in taken:
                name += "_"
            names[origin] = name
            taken.add(name)
        return names

    def origin_expression(self, origin: str) -> Optional[str]:
        return self.origin_names.get(origin.lower())

    def url_code(self, index: Optional[int], exchange: Exchange, uses: Dict[SlotId, Use]) -> Tuple[str, List[Tuple[str, str]]]:
        """The URL argument, and query parameters to add with .query_param when one of them is
        templated (the engine encodes those)."""
        parts = urlsplit(exchange.request.url)
        origin = f"{parts.scheme}://{parts.netloc}".lower()
        segments = parts.path.split("/") if parts.path else [""]
        stripped = self.decisions.stripped_path_params.get(index) if index is not None else None
        rendered = []
        for i, segment in enumerate(segments):
            use = uses.get(SlotId(index, "path", (i,))) if index is not None else None
            if use is not None:
                needs_encoding = quote(use.slot.value, safe="") != use.slot.value
                rendered.append("${" + use.expression + (".url_encode()" if needs_encoding else "") + "}")
            else:
                if stripped and ";" in segment and segment.lower().find(";" + stripped) >= 0:
                    segment = segment[:segment.lower().find(";" + stripped)]
                rendered.append(literal(segment))
        path = "/".join(rendered) or "/"
        query_uses = [(key, use) for key, use in uses.items() if key.kind == "query"] if index is not None else []
        params: List[Tuple[str, str]] = []
        if query_uses:
            for i, (name, value) in enumerate(exchange.request.query()):
                use = uses.get(SlotId(index, "query", (i,)))
                params.append((literal(name), self.template_of(use, value)))
        elif parts.query:
            path += "?" + literal(parts.query)
        expression = self.origin_expression(origin)
        if expression == "base_url":
            return py(path), params
        return f"{expression} + {py(path)}", params

    def template_of(self, use: Optional[Use], recorded: str) -> str:
        if use is None:
            return literal(recorded)
        return use.prefix + "${" + use.expression + "}"

    def rebased(self, value: str) -> Optional[str]:
        """``base_url + "/path"`` for a URL of a named origin (Origin, Referer)."""
        parts = urlsplit(value)
        if not parts.scheme or not parts.netloc:
            return None
        origin = f"{parts.scheme}://{parts.netloc}".lower()
        expression = self.origin_expression(origin)
        if expression is None:
            return None
        rest = value[len(origin):]
        return expression if not rest else f"{expression} + {py(literal(rest))}"

    # Headers.

    def kept_headers(self, index: Optional[int], exchange: Exchange, uses: Dict[SlotId, Use]):
        """(name, code, templated) of the headers a request sends itself."""
        kept = []
        for i, (name, value) in enumerate(exchange.request.headers):
            if dropped_header(name, exchange.request.body.kind, value):
                continue
            use = uses.get(SlotId(index, "header", (i,))) if index is not None else None
            if use is not None:
                kept.append((name, py(self.template_of(use, value)), True))
            elif name.lower() in ("origin", "referer") and self.rebased(value):
                kept.append((name, self.rebased(value), False))
            else:
                kept.append((name, py(literal(value)), False))
        return kept

    def _protocol_headers(self) -> List[Tuple[str, str]]:
        """Headers every step sends, each with its most frequent value (Gatling's rule)."""
        counts: Dict[str, Counter] = {}
        spelled: Dict[str, str] = {}
        for index, step in enumerate(self.journey.steps):
            seen = set()
            for name, code, templated in self.kept_headers(index, step, self.decisions.uses_at(index)):
                lowered = name.lower()
                if templated or lowered in ("origin", "referer") or lowered in seen:
                    continue
                seen.add(lowered)
                counts.setdefault(lowered, Counter())[code] += 1
                spelled.setdefault(lowered, name)
        steps = len(self.journey.steps)
        common = []
        for lowered, values in counts.items():
            if sum(values.values()) == steps:
                common.append((spelled[lowered], values.most_common(1)[0][0]))
        return common

    def header_lines(self, index, exchange, uses) -> List[str]:
        own = []
        protocol = {name.lower(): code for name, code in self.protocol_headers}
        inline = []
        for name, code, templated in self.kept_headers(index, exchange, uses):
            if templated:
                inline.append(f".header({py(name)}, {code})")
            elif protocol.get(name.lower()) != code:
                own.append((name, code))
        lines = []
        if own:
            key = tuple(own)
            if key not in self.header_sets:
                self.header_sets[key] = f"headers_{len(self.header_sets) + 1}"
            lines.append(f".headers({self.header_sets[key]})")
        return lines + inline

    # Requests.

    def request_name(self, exchange: Exchange, uses: Dict[SlotId, Use], index: Optional[int]) -> str:
        if index is not None and exchange.request.method == "GET" and is_page(exchange):
            title = html_title(exchange.final.text)
            if title:
                return title[:80]
        path_segments = urlsplit(exchange.request.url).path.split("/")
        shown = []
        for i, segment in enumerate(path_segments):
            use = uses.get(SlotId(index, "path", (i,))) if index is not None else None
            shown.append("{" + (use.variable or "id") + "}" if use is not None else segment)
        path = "/".join(shown) or "/"
        stripped = self.decisions.stripped_path_params.get(index) if index is not None else None
        if stripped and ";" in path:
            path = path.split(";")[0]
        origin = exchange.request.origin
        host = "" if origin == self.journey.base_origin else urlsplit(origin).netloc
        return f"{exchange.request.method} {host}{path}"

    def status_check(self, exchange: Exchange) -> str:
        status = exchange.final.status
        if status == 304:
            return "status().in_(200, 304)"
        return f"status().is_({status})"

    def body_lines(self, index, exchange: Exchange, uses: Dict[SlotId, Use]) -> List[str]:
        body = exchange.request.body
        lines = []
        if body.kind == "form":
            for i, (name, value) in enumerate(body.fields):
                use = uses.get(SlotId(index, "form", (i,))) if index is not None else None
                lines.append(f".form_param({py(literal(name))}, {py(self.template_of(use, value))})" + self.note(use))
        elif body.kind == "multipart":
            self.imports.add("string_body_part")
            for i, part in enumerate(body.parts):
                use = uses.get(SlotId(index, "part", (i,))) if index is not None else None
                if part.is_file:
                    lines.append(self.file_part(exchange, part))
                    continue
                text = part.text()
                if text is None:
                    lines.append(self.file_part(exchange, part))
                    continue
                lines.append(f".body_part(string_body_part({py(literal(part.name))}, {py(self.template_of(use, text))}))"
                             + self.note(use))
        elif body.kind == "json":
            json_uses = {key.key: use for key, use in uses.items() if key.kind == "json"}
            for use in json_uses.values():
                lines.append(f"# {use.slot.where}: {self.describe(use)}")
            numeric = any(not isinstance(_leaf(body.json_value, path), str) for path in json_uses)
            if numeric:
                # A number from a variable: JSON text with ${...} in place of the number.
                lines.append(f".body(string_body({py(self.json_template(body.json_value, json_uses))}))")
                lines.append(f".header(\"Content-Type\", {py(body.content_type or 'application/json')})")
                self.imports.add("string_body")
            else:
                self.imports.add("json_body")
                lines.append(f".body(json_body({self.json_code(body.json_value, json_uses)}))")
        elif body.kind == "text":
            self.imports.add("string_body")
            lines.append(f".body(string_body({py(literal(body.text))}))")
        elif body.kind == "binary":
            path = self.outputs.add_file(f"entry{exchange.index}_body.bin", body.data)
            lines.append(f"# TODO: a binary body of {len(body.data)} bytes ({path}) is not sent: the DSL has no raw file body")
        elif body.kind == "missing":
            lines.append("# TODO: the recording left this request's body out; nothing is sent")
        return [line for line in lines if line]

    def json_code(self, value, json_uses) -> str:
        def render(path, leaf):
            use = json_uses.get(path)
            if isinstance(leaf, str):
                return py(self.template_of(use, leaf))
            return py_scalar(leaf)

        return _render_nested(value, (), render, py)

    def json_template(self, value, json_uses) -> str:
        def render(path, leaf):
            use = json_uses.get(path)
            if use is None:
                return json.dumps(literal(leaf) if isinstance(leaf, str) else leaf, ensure_ascii=False)
            text = "${" + use.expression + "}"
            return json.dumps(text) if isinstance(leaf, str) else text

        return _render_nested(value, (), render, lambda key: json.dumps(key, ensure_ascii=False))

    def file_part(self, exchange: Exchange, part) -> str:
        self.imports.add("raw_file_body_part")
        file_name = part.file_name or f"{part.name}.bin"
        data = part.data if part.complete else None
        path = self.outputs.add_file(file_name, data)
        if data is None:
            self.missing_files.append((exchange.index, part.name, file_name))
        where = py(path)
        if data is not None:
            # The file is a typed input, as a user name is: a column of the feeder, so that
            # more rows upload other files (a file the recording lacks keeps its fixed path,
            # which horde checks before the run).
            where = py("${" + self.file_column(part.name, path) + "}")
        options = []
        if part.file_name is not None and (data is None or part.file_name != path.rpartition("/")[2]):
            options.append(f"file_name={py(part.file_name)}")
        if part.content_type:
            options.append(f"content_type={py(part.content_type)}")
        arguments = ", ".join([py(part.name), where] + options)
        suffix = "  # the recording lacks this file's bytes: put it there (or import with --files DIR)" if data is None else ""
        return f".body_part(raw_file_body_part({arguments}))" + suffix

    def file_column(self, part_name: str, path: str) -> str:
        """The feeder's column holding the path of the file uploaded as ``part_name`` (the same
        one when the simulation is written again)."""
        base = identifier(f"{part_name}_path", "upload_path")
        column, counter = base, 2
        while True:
            known = next((c for c in self.decisions.feeder if c.column == column), None)
            if known is None:
                self.decisions.feeder.append(FeederColumn(column, path, f"the file uploaded as part {part_name}"))
                return column
            if known.value == path:
                return column
            column, counter = f"{base}_{counter}", counter + 1

    def describe(self, use: Use) -> str:
        if use.note:
            return use.note
        return use.origin

    def note(self, use: Optional[Use]) -> str:
        if use is None:
            return ""
        return f"  # {self.describe(use)}"

    def request_code(self, index: Optional[int], exchange: Exchange, indent: str) -> List[str]:
        uses = self.decisions.uses_at(index) if index is not None else {}
        name = self.request_name(exchange, uses, index)
        if index is not None:
            self.request_names.append(name)
        url, params = self.url_code(index, exchange, uses)
        method = exchange.request.method.lower()
        lines = [f"http({py(literal(name))})", f".{method}({url})" if method in (
            "get", "post", "put", "patch", "delete", "head", "options") else f".get({url})"]
        for param_name, value in params:
            lines.append(f".query_param({py(param_name)}, {py(value)})")
        for use in uses.values():
            if use.slot.id.kind in ("path", "query", "header"):
                lines.append(f"# {use.slot.where}: {self.describe(use)}")
        lines += self.header_lines(index, exchange, uses)
        lines += self.body_lines(index, exchange, uses)
        if not exchange.follow_redirects:
            lines.append("# Its redirect is not followed: a value in its Location is sent again later")
            lines.append(".disable_follow_redirect()")
        checks = [self.status_check(exchange)]
        if index is not None and self.observed is not None:
            checks = self.observing_checks(index) + checks
        if index is not None:
            for extraction in self.decisions.extractions_at(index):
                code = extraction.code + (".optional()" if extraction.optional else "") + f".save_as({py(extraction.variable)})"
                checks.append(code)
                self.imports.add(extraction.kind)
        lines.append(_call(".check", checks, indent))
        if exchange.resources:
            self.imports.add("http")
            resources = []
            for resource in exchange.resources:
                resources.append("\n".join(self.request_code(None, resource, indent + "        ")))
            lines.append(".resources(\n" + ",\n".join(f"{indent}        {r}" for r in resources) + f",\n{indent}    )")
        return [lines[0]] + [f"{indent}    {line}" for line in lines[1:]]

    def observing_checks(self, index: int) -> List[str]:
        self.imports.update(("body_string", "header"))
        variables = self.observed[index]
        checks = [f"status().save_as({py(variables['status'])})", f"body_string().save_as({py(variables['body'])})"]
        for key, variable in variables.items():
            if key.startswith("header "):
                checks.append(f"header({py(key[len('header '):])}).find_all().optional().save_as({py(variable)})")
        return checks

    def observer_lines(self) -> List[str]:
        names = [variable for variables in self.observed.values() for variable in variables.values()]
        return [
            "import json as _json",
            "",
            "horde_observations = param(\"horde_observations\")",
            f"HORDE_OBSERVED = {names!r}",
            "",
            "",
            "def horde_observe(session):",
            "    with open(horde_observations, \"w\", encoding=\"utf-8\") as handle:",
            "        _json.dump({name: session.get(name) for name in HORDE_OBSERVED}, handle)",
            "",
            "",
        ]

    # The file.

    def write(self) -> Generated:
        body = []
        for index, step in enumerate(self.journey.steps):
            if step.pause_before:
                body.append(f"    .pause({step.pause_before} * think_time)")
            for pre in self.decisions.pre_steps_at(index):
                if "get_cookie_value(" in pre.code:
                    self.imports.add("get_cookie_value")
                if pre.chain_call:
                    body.append(f"    {pre.code}")
                else:
                    body.append(f"    .exec({pre.code})")
            for step_index, name, value in self.decisions.script_cookies:
                if step_index == index:
                    self.imports.add("add_cookie")
                    body.append(f"    .exec(add_cookie({py(name)}, {py(literal(value))}))  # set by JavaScript in the recording")
            response = step.final
            where = step.request.url if step.request.origin != self.journey.base_origin else (
                urlsplit(step.request.url).path or "/")
            statuses = " -> ".join(str(s) for s in [step.response.status] + [h.response.status for h in step.hops])
            body.append(f"    # {index + 1}. {step.request.method} {where} -> {statuses} {response.mime or ''}".rstrip()
                        + f" (entry {step.index})")
            code = self.request_code(index, step, "        ")
            body.append("    .exec(\n        " + "\n".join(code) + "\n    )")
        feeder_lines = []
        if self.decisions.feeder:
            self.imports.add("csv")
            feeder_lines = [
                "# Typed and uploaded while recording (one row: add rows for more accounts and files; read in a circle).",
                f"inputs = csv(param(\"inputs\", {py(self.outputs.feeder_path)})).circular()",
                "",
            ]
        header_lines = []
        for headers, variable in self.header_sets.items():
            entries = ",\n".join(f"    {py(name)}: {code}" for name, code in headers)
            header_lines.append(f"{variable} = {{\n{entries},\n}}")
        origin_lines = [f"base_url = param(\"base_url\", {py(self.base_url)})"]
        for origin, variable in self.origin_names.items():
            if variable != "base_url":
                origin_lines.append(f"{variable} = param({py(variable)}, {py(origin)})")
        protocol = "http.base_url(base_url)"
        if self.protocol_headers:
            entries = ",\n".join(f"    {py(name)}: {code}" for name, code in self.protocol_headers)
            protocol += f".headers({{\n{entries},\n}})"
        if self.journey.infer_resources:
            protocol += ".infer_html_resources()"
        if self.observed is not None:
            body.append("    .exec(horde_observe)")
        chain = [f"    scenario({py(self.name)})"]
        if self.decisions.feeder:
            chain.append("    .feed(inputs)")
        imports = ",\n".join(f"    {name}" for name in sorted(self.imports))
        inputs = f"; inputs (the feeder's file, {self.outputs.feeder_path})" if self.decisions.feeder else ""
        recorder = f"by {self.creator}, " if self.creator else ""
        doc = (f'"""{self.name}: a journey recorded in {self.har_name} ({recorder}{self.entry_count} entries) and '
               f"imported by\n`horde import`.\n\n"
               f"Replay it:\n\n    horde run {self.outputs.stem}.py -D base_url={self.base_url} -D users=20\n\n"
               "Parameters (-D NAME=VALUE): base_url; users (1); ramp (seconds to start them over, 0); duration\n"
               "(seconds: users go through the journey again and again that long, 0: once); think_time (a factor\n"
               f"on the recorded pauses, 0 for none){inputs}.\n\n"
               f"What was correlated, generated and dropped, and why: {self.outputs.report_path}.\n"
               '"""')
        source = "\n".join([
            doc,
            "",
            f"from horde import (\n{imports},\n)",
            "",
            *origin_lines,
            "users = param(\"users\", 1)",
            "ramp = param(\"ramp\", 0.0)",
            "duration = param(\"duration\", 0.0)",
            "think_time = param(\"think_time\", 1.0)",
            "",
            *feeder_lines,
            *[line + "\n" for line in header_lines],
            *(self.observer_lines() if self.observed is not None else []),
            "journey = (",
            *chain,
            *body,
            ")",
            "",
            "if duration:",
            "    injection = constant_concurrent_users(users).during(duration)",
            "elif ramp:",
            "    injection = ramp_users(users).during(ramp)",
            "else:",
            "    injection = at_once_users(users)",
            "",
            f"protocol = {protocol}",
            f"setup(journey.inject(injection), protocol=protocol, name={py(self.name)})",
            "",
        ])
        return Generated(source, self.missing_files, self.request_names)


def _call(method: str, arguments: List[str], indent: str) -> str:
    one_line = f"{method}({', '.join(arguments)})"
    if len(one_line) + len(indent) + 4 <= 110:
        return one_line
    inner = ",\n".join(f"{indent}        {a}" for a in arguments)
    return f"{method}(\n{inner},\n{indent}    )"


def _leaf(value, path):
    for key in path:
        value = value[key]
    return value


def _render_nested(value, path, render, key) -> str:
    """A JSON value written out with ``render(path, leaf)`` for its leaves and ``key(text)`` for
    its keys: as Python (``json_body``) or as JSON text (a templated raw body)."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key(str(k))}: {_render_nested(v, path + (k,), render, key)}"
                               for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_render_nested(v, path + (i,), render, key) for i, v in enumerate(value)) + "]"
    return render(path, value)
