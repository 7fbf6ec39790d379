"""The import's report, printed and written beside the simulation (``<stem>_import.md``): each
correlation (where it is used, where it comes from, the extractor, the rule or generic
matching), the values made at run time, the feeder's columns, what was dropped and why, and
warnings about what the recording could not tell (no bodies, no cookies, lossy uploads,
cookies JavaScript set, values sent as recorded that look like tokens).
"""

from __future__ import annotations

import os
from typing import List, Optional

from .codegen import OutputFiles
from .correlate.values import SECRET_NAMES
from .decisions import Decisions
from .har import Recording
from .normalize import Journey
from .validate import Validation


def _short(value: str, keep: int = 24) -> str:
    value = value.replace("|", "\\|").replace("\n", " ")
    return value if len(value) <= keep else value[:keep // 2] + "…" + value[-(keep // 2 - 1):]


def _row(cells) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def build_report(*, har_path: str, output: str, recording: Recording, journey: Journey, decisions: Decisions,
                 outputs: OutputFiles, request_names: List[str], warnings: List[str],
                 validation: Optional[Validation], correlate: bool) -> str:
    names = {i: f"{i + 1}. {name}" for i, name in enumerate(request_names)}
    hops = sum(len(step.hops) for step in journey.steps)
    resources = sum(len(step.resources) for step in journey.steps)
    lines = [f"# {outputs.stem}: imported from {os.path.basename(har_path)}", ""]
    recorder = f" by {recording.creator}" if recording.creator else ""
    lines.append(f"Recorded{recorder}: {len(recording.exchanges)} entries; {len(journey.steps)} requests to replay "
                 f"({hops} redirects the engine follows, {resources} resources fetched with their pages, "
                 f"{len(journey.dropped)} entries dropped). Simulation: {os.path.basename(output)}"
                 + (f"; feeder: {outputs.feeder_path}" if decisions.feeder else "")
                 + (f"; files: {outputs.files_dir}/" if any(v is not None for v in outputs.files.values()) else "")
                 + ".")
    lines.append("")

    correlated = [u for u in decisions.uses.values() if u.source_step is not None or u.origin.endswith("rule")]
    lines.append(f"## Correlations ({len(correlated)})")
    lines.append("")
    if not correlate:
        lines.append("None: imported with --no-correlate, every value is sent as recorded.")
    elif correlated:
        lines.append(_row(["request", "sends", "as", "recorded", "from", "extractor", "found by"]))
        lines.append(_row(["---"] * 7))
        extractors = {(e.step, e.variable): e.code for e in decisions.extractions}
        for use in sorted(correlated, key=lambda u: (u.slot.id.step, str(u.slot.id.key))):
            source = names.get(use.source_step, "the cookie jar") if use.source_step is not None else "the cookie jar"
            extractor = extractors.get((use.source_step, use.variable), "get_cookie_value") \
                if use.source_step is not None else "get_cookie_value"
            lines.append(_row([names[use.slot.id.step], use.slot.where, f"`{use.prefix}${{{use.expression}}}`",
                               f"`{_short(use.slot.value)}`", source, f"`{_short(extractor, 60)}`", use.origin]))
    else:
        lines.append("None found: no request sends a value an earlier response gave.")
    lines.append("")

    generated = [u for u in decisions.uses.values() if u.origin == "generated"]
    if generated:
        lines.append(f"## Values made at run time ({len(generated)})")
        lines.append("")
        lines.append(_row(["request", "sends", "as", "recorded", "how"]))
        lines.append(_row(["---"] * 5))
        for use in sorted(generated, key=lambda u: u.slot.id.step):
            lines.append(_row([names[use.slot.id.step], use.slot.where, f"`${{{use.expression}}}`",
                               f"`{_short(use.slot.value)}`", use.note.replace("generated: ", "")]))
        lines.append("")

    if decisions.feeder:
        lines.append(f"## Feeder columns ({outputs.feeder_path})")
        lines.append("")
        lines.append("What was typed, one row as recorded; add rows so that users log in as different accounts "
                     "(read in a circle).")
        lines.append("")
        lines.append(_row(["column", "recorded", "where"]))
        lines.append(_row(["---"] * 3))
        for column in decisions.feeder:
            shown = "(hidden)" if SECRET_NAMES.search(column.column) else f"`{_short(column.value)}`"
            lines.append(_row([column.column, shown, column.reason]))
        lines.append("")

    if journey.dropped:
        lines.append(f"## Dropped entries ({len(journey.dropped)})")
        lines.append("")
        lines.append(_row(["entry", "request", "why"]))
        lines.append(_row(["---"] * 3))
        for dropped in journey.dropped:
            lines.append(_row([dropped.index, f"{dropped.method} {_short(dropped.url, 70)}", dropped.reason]))
        lines.append("")

    all_warnings = list(warnings) + recording_warnings(recording, journey, decisions)
    if validation is not None:
        all_warnings += validation_lines(validation, names)
    lines.append(f"## Warnings ({len(all_warnings)})")
    lines.append("")
    lines.extend(f"- {warning}" for warning in all_warnings)
    if not all_warnings:
        lines.append("None.")
    lines.append("")
    return "\n".join(lines)


def recording_warnings(recording: Recording, journey: Journey, decisions: Decisions) -> List[str]:
    warnings = []
    steps = journey.steps
    if len(steps) > 1 and not any(r.set_cookies() for s in steps for r in s.responses()) and not any(
            name.lower() == "cookie" for s in steps for name, _ in s.request.headers):
        warnings.append("the recording holds no cookie at all: if the site has sessions, this is a sanitized export "
                        "(Chrome's default leaves out Cookie, Set-Cookie and Authorization): export it with its "
                        "sensitive data, or record with `horde record`")
    missing = [s for s in steps if s.final.body_missing]
    if missing:
        entries = ", ".join(str(s.index) for s in missing[:10])
        warnings.append(f"{len(missing)} responses have no body in the recording (entries {entries}): nothing in "
                        "them could be correlated")
    if recording.bodies_not_kept:
        warnings.append(f"{len(recording.bodies_not_kept)} response bodies were too large to search for values")
    for step in steps:
        body = step.request.body
        if body.kind == "multipart" and not body.exact and not body.rebuilt:
            warnings.append(f"entry {step.index}: the multipart body is not byte-exact in the recording (a browser "
                            "stores it as text): check the text parts")
    for index, name, value in decisions.script_cookies:
        warnings.append(f"request {index + 1}: the cookie {name} was set by JavaScript, not by a response: it is "
                        f"added as recorded (`{_short(value)}`)")
    for slot in decisions.unresolved:
        warnings.append(f"request {slot.id.step + 1}: {slot.where} `{_short(slot.value)}` looks made by the server but "
                        "no earlier response holds it: sent as recorded (try --validate or --second)")
    for exchange in journey.websockets:
        warnings.append(f"entry {exchange.index}: a WebSocket ({exchange.request.url}) was opened: noted, not replayed "
                        "(write its steps with ws(...))")
    for note in decisions.notes:
        warnings.append(note)
    return warnings


def validation_lines(validation: Validation, names) -> List[str]:
    if validation.failure:
        return [f"--validate: the replay could not run: {validation.failure}"]
    lines = [f"--validate: {validation.rounds} replay(s); {len(validation.learnt)} values learnt to be dynamic"]
    for difference in validation.differences:
        replayed = difference.replayed if difference.replayed is not None else "nothing"
        lines.append(f"--validate: request {names.get(difference.step, difference.step + 1)} answered {replayed}, "
                     f"recorded {difference.recorded}: {difference.why}")
    if not validation.differences:
        lines.append("--validate: every status matched the recording")
    return lines

