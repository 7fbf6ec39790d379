"""The Python side of ``horde import`` and ``horde record``: the Rust command line parses the
flags (crates/horde-cli/src/args.rs) and calls :func:`run` with them as JSON, in-process
through the binding or as ``python -m horde.recording COMMAND FLAGS_JSON`` for the standalone
binary. Exit codes are the README's: 0 done, 2 bad input, 3 failure, 130 interrupted.
"""

from __future__ import annotations

import json
import sys

OK = 0
INVALID_INPUT = 2
FAILED = 3
INTERRUPTED = 130


def error(message: str) -> None:
    print(f"error: {message}", file=sys.stderr, flush=True)


def run(command: str, flags_json: str) -> int:
    flags = json.loads(flags_json)
    if command == "import":
        return _import(flags)
    if command == "record":
        from .record import run_record

        return run_record(flags)
    error(f"unknown command {command!r}")
    return INVALID_INPUT


def _import(flags) -> int:
    from .har import HarError
    from .importer import ImportOptions, InvalidImport, run_import

    options = ImportOptions(**flags)
    try:
        run_import(options)
    except (HarError, InvalidImport) as problem:
        error(str(problem))
        return INVALID_INPUT
    except KeyboardInterrupt:
        print("horde import: interrupted; nothing was written", file=sys.stderr)
        return INTERRUPTED
    except OSError as problem:
        error(f"cannot write the simulation: {problem}")
        return FAILED
    return OK


def main(argv) -> int:
    if len(argv) != 2:
        print("usage: python -m horde.recording (import|record) FLAGS_JSON  (run by `horde import`, `horde record`)",
              file=sys.stderr)
        return INVALID_INPUT
    try:
        return run(argv[0], argv[1])
    except KeyboardInterrupt:
        return INTERRUPTED
