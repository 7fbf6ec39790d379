"""Proving the simulation by replaying it, and learning from a second recording.

``--validate URL``: the simulation runs once, one user, against the live site, as a variant
that also saves what every response was (status, body, headers) and writes it out at the end.
Requests are paired in order (not by URL: correlated URLs change). A value that differs between
the recorded and the replayed response at the same place (a form field, a meta tag, a JSON
leaf, a header, a cookie) is dynamic: if a later request sent its recorded value, that slot is
correlated, whatever the filters thought of it. Then again, until every status matches the
recording, or nothing new is learnt, or the rounds run out; what still differs is reported with
the replayed response's first words.

``--second B.har``: the same comparison between two recordings of the same journey (k6's "spot
the differences"), before anything runs: values that differ between the two are dynamic.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set, Tuple
from urllib.parse import urlsplit

from .decisions import json_leaves, request_slots
from .exchanges import Exchange, Headers, media_type
from .htmlscan import scan
from .normalize import Journey

# Response headers that differ between any two responses and carry nothing a request sends.
NOISE_HEADERS = {"date", "expires", "last-modified", "age", "content-length", "server", "etag", "x-request-id",
                 "x-runtime", "via", "connection", "keep-alive", "transfer-encoding", "vary"}
OBSERVED_PREFIX = "horde_observed_"


def response_leaves(text: Optional[str], mime: str, headers: Headers) -> Dict[str, str]:
    """The values of a response that a later request may send back, by where they are."""
    leaves: Dict[str, str] = {}
    for name, value in headers:
        lowered = name.lower()
        if lowered == "set-cookie":
            for line in value.split("\n"):
                cookie, _, rest = line.partition(";")
                cookie_name, separator, cookie_value = cookie.strip().partition("=")
                if separator:
                    leaves[f"cookie {cookie_name}"] = cookie_value
        elif lowered not in NOISE_HEADERS:
            leaves.setdefault(f"header {lowered}", value)
    if not text:
        return leaves
    if "html" in mime or "xml" in mime:
        page = scan(text)
        counts: Dict[str, int] = {}
        for element in page.elements:
            key = None
            if element.tag in ("input", "button", "select", "textarea") and element.attrs.get("name"):
                key, value = f"field {element.attrs['name']}", element.attrs.get("value")
            elif element.tag == "meta" and element.attrs.get("name"):
                key, value = f"meta {element.attrs['name']}", element.attrs.get("content")
            if key is None or value is None:
                continue
            counts[key] = counts.get(key, 0) + 1
            leaves[f"{key} #{counts[key]}"] = value
        for match in re.finditer(r'<update id="([^"]*)"><!\[CDATA\[([^\]]*)\]\]>', text):
            leaves[f"partial {match.group(1)}"] = match.group(2)
    if "json" in mime or text.lstrip().startswith(("{", "[")):
        try:
            document = json.loads(text)
        except ValueError:
            document = None
        if document is not None:
            for path, leaf in json_leaves(document):
                if leaf is not None and not isinstance(leaf, bool):
                    leaves["json " + "/".join(map(str, path))] = leaf if isinstance(leaf, str) else json.dumps(leaf)
    return leaves


def differing_values(recorded: Dict[str, str], other: Dict[str, str]) -> Set[str]:
    """The recorded values whose place holds something else in the other response."""
    return {value for key, value in recorded.items() if key in other and other[key] != value and value}


# A second recording.

_ID_SEGMENT = re.compile(r"^(\d+|[0-9a-fA-F]{8,}|[0-9a-fA-F-]{36})$")


def _shape(exchange: Exchange) -> str:
    path = "/".join("{id}" if _ID_SEGMENT.match(segment) else segment
                    for segment in urlsplit(exchange.request.url).path.split("/"))
    return f"{exchange.request.method} {path}"


def second_recording_dynamic(first: Journey, second: Journey) -> Set[str]:
    """The values of the first recording that differ in the second at the same place: in a
    request slot, or in a response."""
    dynamic: Set[str] = set()
    matcher = difflib.SequenceMatcher(a=[_shape(s) for s in first.steps], b=[_shape(s) for s in second.steps],
                                      autojunk=False)
    for block in matcher.get_matching_blocks():
        for offset in range(block.size):
            a, b = first.steps[block.a + offset], second.steps[block.b + offset]
            slots_b = {(slot.id.kind, slot.id.key, slot.name): slot.value
                       for slot in request_slots(block.b + offset, b)}
            for slot in request_slots(block.a + offset, a):
                other = slots_b.get((slot.id.kind, slot.id.key, slot.name))
                if other is not None and other != slot.value and slot.value:
                    dynamic.add(slot.value)
            dynamic |= differing_values(
                response_leaves(a.final.text, a.final.mime, a.final.headers),
                response_leaves(b.final.text, b.final.mime, b.final.headers))
    return dynamic


# Replays.

@dataclass
class ReplayedResponse:
    status: Optional[int]
    body: str
    headers: Headers


@dataclass
class Difference:
    step: int
    name: str
    recorded: int
    replayed: Optional[int]
    why: str


@dataclass
class Validation:
    rounds: int = 0
    learnt: Set[str] = field(default_factory=set)
    differences: List[Difference] = field(default_factory=list)
    failure: Optional[str] = None  # the replay could not run at all


def observed_variables(journey: Journey) -> Dict[int, Dict[str, str]]:
    """For each step, the variables the observing variant saves: status, body, each header."""
    names = {}
    for index, step in enumerate(journey.steps):
        variables = {"status": f"{OBSERVED_PREFIX}{index}_status", "body": f"{OBSERVED_PREFIX}{index}_body"}
        seen = set()
        for position, (name, _) in enumerate(step.final.headers):
            lowered = name.lower()
            if lowered in NOISE_HEADERS or lowered in seen:
                continue
            seen.add(lowered)
            variables[f"header {name}"] = f"{OBSERVED_PREFIX}{index}_header_{position}"
        names[index] = variables
    return names


def replay_once(source_path: str, directory: str, url: str, journey: Journey) -> Tuple[Dict[int, ReplayedResponse], str]:
    """Runs the observing variant once with one user; the responses it saw, by step."""
    observations = os.path.join(directory, "observed.json")
    if os.path.exists(observations):
        os.unlink(observations)
    results = tempfile.mkdtemp(prefix="results-", dir=directory)
    os.rmdir(results)
    command = [sys.executable, "-m", "horde", "run", source_path, "--results-dir", results, "-q",
               "-D", f"base_url={url}", "-D", "users=1", "-D", "think_time=0", "-D", f"horde_observations={observations}"]
    completed = subprocess.run(command, capture_output=True, text=True, cwd=directory)
    if completed.returncode not in (0, 99) or not os.path.exists(observations):
        return {}, (completed.stderr.strip() or f"horde run exited {completed.returncode}")
    with open(observations, encoding="utf-8") as handle:
        saved = json.load(handle)
    responses = {}
    for index, variables in observed_variables(journey).items():
        status = saved.get(variables["status"])
        headers = []
        for key, variable in variables.items():
            if key.startswith("header ") and saved.get(variable) is not None:
                values = saved[variable]
                for value in values if isinstance(values, list) else [values]:
                    headers.append((key[len("header "):], str(value)))
        responses[index] = ReplayedResponse(int(status) if status is not None else None,
                                            str(saved.get(variables["body"]) or ""), headers)
    return responses, ""


def compare(journey: Journey, replayed: Dict[int, ReplayedResponse], names: List[str]) -> Tuple[Set[str], List[Difference]]:
    learnt: Set[str] = set()
    differences = []
    for index, step in enumerate(journey.steps):
        response = replayed.get(index)
        recorded = step.final
        if response is None or response.status is None:
            differences.append(Difference(index, names[index], recorded.status, None,
                                          "not sent: a value it needed was never saved (an earlier request failed)"))
            continue
        mime = media_type(next((v for k, v in response.headers if k.lower() == "content-type"), recorded.mime))
        learnt |= differing_values(response_leaves(recorded.text, recorded.mime, recorded.headers),
                                   response_leaves(response.body, mime, response.headers))
        expected = {recorded.status} if recorded.status != 304 else {200, 304}
        if response.status not in expected:
            words = " ".join(re.sub(r"<[^>]+>", " ", response.body).split())[:160]
            differences.append(Difference(index, names[index], recorded.status, response.status,
                                          f"the replay answered: {words}" if words else "an empty response"))
    return learnt, differences
