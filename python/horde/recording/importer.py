"""``horde import``: a HAR recording in, a simulation and its data out.

Nothing is written until everything is ready: the files are made in a temporary folder beside
the simulation, then moved into place, so a failure (bad input, a full disk, Ctrl-C) leaves no
half-written simulation behind.
"""

from __future__ import annotations

import csv
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from typing import List, Optional
from urllib.parse import urlsplit

from .codegen import OutputFiles, SimulationWriter, identifier
from .correlate import CorrelationOptions, correlate
from .decisions import Decisions
from .har import HarError, Recording, read_har
from .normalize import EmptyJourney, Journey, normalize
from .report import build_report
from .uploads import resolve_uploads
from .validate import Validation, compare, replay_once, second_recording_dynamic


class InvalidImport(Exception):
    """Bad input to the import (exit 2); the message says what and where."""


@dataclass
class ImportOptions:
    har: str
    output: Optional[str] = None
    base_url: Optional[str] = None
    files: Optional[str] = None
    resources: str = "keep"
    correlate: bool = True
    validate: Optional[str] = None
    second: Optional[str] = None
    rounds: int = 5
    name: Optional[str] = None
    force: bool = False


@dataclass
class ImportResult:
    simulation: str
    written: List[str]
    report: str
    warnings: List[str] = field(default_factory=list)
    still_differing: List[str] = field(default_factory=list)


def check_options(options: ImportOptions) -> None:
    if options.base_url is not None:
        parts = urlsplit(options.base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise InvalidImport(f"--base-url {options.base_url}: not an http:// or https:// URL")
    if options.validate is not None:
        parts = urlsplit(options.validate)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise InvalidImport(f"--validate {options.validate}: not an http:// or https:// URL")
    if options.files is not None and not os.path.isdir(options.files):
        raise InvalidImport(f"--files {options.files}: not a directory")


def output_files(options: ImportOptions) -> (str, OutputFiles):
    output = options.output or os.path.splitext(os.path.basename(options.har))[0] + ".py"
    if not output.endswith(".py"):
        raise InvalidImport(f"-o {output}: a simulation is a Python file: name it *.py")
    stem = os.path.splitext(os.path.basename(output))[0]
    if not stem.isidentifier():
        stem = identifier(stem, "journey")
        output = os.path.join(os.path.dirname(output), stem + ".py")
    return output, OutputFiles(stem=stem, files_dir=f"{stem}_files", feeder_path=f"{stem}_inputs.csv",
                               report_path=f"{stem}_import.md")


def load(options: ImportOptions) -> (Recording, Journey, List[str]):
    recording = read_har(options.har)
    try:
        journey = normalize(recording.exchanges, options.resources)
    except EmptyJourney as empty:
        reasons = sorted({d.reason for d in empty.dropped})
        raise InvalidImport(f"{options.har}: no request left to replay: all {len(empty.dropped)} entries were dropped "
                           f"({'; '.join(reasons)})") from None
    warnings = resolve_uploads(journey, options.files)
    return recording, journey, warnings


def generate(options: ImportOptions, recording: Recording, journey: Journey, decisions: Decisions,
             outputs: OutputFiles, observe: bool = False):
    name = options.name or outputs.stem
    writer = SimulationWriter(journey, decisions, outputs, name=name, har_name=os.path.basename(options.har),
                              creator=recording.creator, base_url=options.base_url,
                              entry_count=len(recording.exchanges), observe=observe)
    return writer.write()


def run_import(options: ImportOptions, out=sys.stdout) -> ImportResult:
    check_options(options)
    output, outputs = output_files(options)
    directory = os.path.dirname(os.path.abspath(output))
    targets = [output, os.path.join(directory, outputs.files_dir), os.path.join(directory, outputs.feeder_path),
               os.path.join(directory, outputs.report_path)]
    if not options.force:
        existing = [path for path in targets if os.path.exists(path)]
        if existing:
            raise InvalidImport(f"{existing[0]} exists: pass --force to overwrite it (or -o elsewhere)")
    if not os.path.isdir(directory):
        raise InvalidImport(f"-o {output}: the directory {directory} does not exist")
    recording, journey, warnings = load(options)
    dynamic = set()
    if options.second:
        _, second_journey, _ = load(ImportOptions(har=options.second, resources=options.resources))
        dynamic = second_recording_dynamic(journey, second_journey)
    decisions = correlate(journey, CorrelationOptions(enabled=options.correlate, dynamic_values=dynamic))
    validation = None
    if options.validate:
        validation, decisions = validate_by_replay(options, recording, journey, decisions, dynamic, directory, out)
    generated = generate(options, recording, journey, decisions, outputs)
    for entry, part, file_name in generated.missing_files:
        print(f"warning: entry {entry}: the recording lacks the bytes of the uploaded file {file_name!r} (part "
              f"{part!r}); put it in {outputs.files_dir}/ or import again with --files DIR", file=sys.stderr)
    report = build_report(har_path=options.har, output=output, recording=recording, journey=journey,
                          decisions=decisions, outputs=outputs, request_names=generated.request_names,
                          warnings=warnings, validation=validation, correlate=options.correlate)
    written = write_outputs(directory, output, outputs, generated.source, report, decisions)
    print(report, file=out)
    print(f"horde import: {len(journey.steps)} requests from {len(recording.exchanges)} entries -> {output} "
          f"(report: {os.path.join(os.path.dirname(output), outputs.report_path)})", file=out)
    result = ImportResult(output, written, report, warnings)
    if validation is not None:
        result.still_differing = [f"{d.step + 1}. {d.name}" for d in validation.differences]
    return result


def validate_by_replay(options, recording, journey, decisions, dynamic, directory, out):
    """Replays with one user against --validate, learns what differs, correlates it, again."""
    validation = Validation()
    staging = tempfile.mkdtemp(prefix=".horde-validate-", dir=directory)
    try:
        for round_number in range(1, options.rounds + 1):
            _, outputs = output_files(options)
            generated = generate(options, recording, journey, decisions, outputs, observe=True)
            write_into(staging, outputs, generated.source, decisions)
            replayed, failure = replay_once(os.path.join(staging, outputs.stem + ".py"), staging, options.validate,
                                            journey)
            validation.rounds = round_number
            if failure:
                validation.failure = failure
                break
            learnt, validation.differences = compare(journey, replayed, generated.request_names)
            matched = len(journey.steps) - len(validation.differences)
            print(f"horde import: replay {round_number} against {options.validate}: {matched} of "
                  f"{len(journey.steps)} statuses as recorded", file=out)
            new = learnt - dynamic
            if not validation.differences or not new or not options.correlate:
                break
            dynamic = dynamic | new
            validation.learnt |= new
            revised = correlate(journey, CorrelationOptions(enabled=True, dynamic_values=dynamic))
            if set(revised.uses) == set(decisions.uses) and len(revised.extractions) == len(decisions.extractions):
                break  # nothing the replay showed is sent by a later request
            decisions = revised
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return validation, decisions


def write_into(directory: str, outputs: OutputFiles, source: str, decisions: Decisions) -> None:
    """The simulation (``<stem>.py``) and its data, in ``directory``."""
    with open(os.path.join(directory, outputs.stem + ".py"), "w", encoding="utf-8") as handle:
        handle.write(source)
    for relative, data in outputs.files.items():
        if data is None:
            continue
        path = os.path.join(directory, relative)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(data)
    if decisions.feeder:
        with open(os.path.join(directory, outputs.feeder_path), "w", encoding="utf-8", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow([column.column for column in decisions.feeder])
            writer.writerow([column.value for column in decisions.feeder])


def write_outputs(directory: str, output: str, outputs: OutputFiles, source: str, report: str,
                  decisions: Decisions) -> List[str]:
    """Writes everything into a temporary folder, then moves it into place."""
    staging = tempfile.mkdtemp(prefix=".horde-import-", dir=directory)
    try:
        write_into(staging, outputs, source, decisions)
        with open(os.path.join(staging, outputs.report_path), "w", encoding="utf-8") as handle:
            handle.write(report)
        moves = [(os.path.join(staging, outputs.stem + ".py"), output),
                 (os.path.join(staging, outputs.report_path), os.path.join(directory, outputs.report_path))]
        if decisions.feeder:
            moves.append((os.path.join(staging, outputs.feeder_path), os.path.join(directory, outputs.feeder_path)))
        files_dir = os.path.join(directory, outputs.files_dir)
        if os.path.isdir(files_dir):
            shutil.rmtree(files_dir)
        if os.path.isdir(os.path.join(staging, outputs.files_dir)):
            moves.append((os.path.join(staging, outputs.files_dir), files_dir))
        for source_path, target in moves:
            os.replace(source_path, target)
        return [target for _, target in moves]
    finally:
        shutil.rmtree(staging, ignore_errors=True)


__all__ = ["ImportOptions", "ImportResult", "InvalidImport", "HarError", "run_import"]
