"""The ``horde`` console script: forwards argv to the command line defined in Rust.

Exit codes are the Rust command line's (README: 0, 2, 3, 99, 130). An exception escaping it
is a bug in horde: it exits 3 like any failure of horde's own, never 1 (what Python returns for
an uncaught exception, which CI scripts could not tell from a test failure) and never 99 (the
thresholds' verdict).
"""

import os
import sys
import traceback

RUN_FAILED = 3
INTERRUPTED = 130


def main():
    # `horde bench` starts fresh interpreters for its Python trials: this one, whose packages
    # (horde among them) the benchmark file can import.
    os.environ.setdefault("HORDE_PYTHON", sys.executable)
    try:
        from ._engine import cli_main

        code = cli_main(["horde", *sys.argv[1:]])
    except KeyboardInterrupt:
        code = INTERRUPTED
    except Exception:  # noqa: BLE001 - every escape is reported the same way
        traceback.print_exc()
        print("error: internal error in horde (a bug: please report it with the traceback above)", file=sys.stderr)
        code = RUN_FAILED
    sys.exit(code)


if __name__ == "__main__":
    main()
