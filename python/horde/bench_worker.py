"""The worker of ``horde bench``: each call is a fresh process that loads the benchmark file and
does one thing, printing JSON on stdout (what the file prints goes to stderr).

    python -m horde.bench_worker list FILE.py
    python -m horde.bench_worker calibrate FILE.py NAME PARAMS_JSON ITERATION_SECONDS
    python -m horde.bench_worker run FILE.py NAME PARAMS_JSON LOOPS WARMUP MEASURE
    python -m horde.bench_worker plan FILE.py NAME PARAMS_JSON WARMUP_MS MEASURE_MS

``calibrate`` finds the calls per iteration (doubling, as pyperf does) so that one iteration
lasts at least ITERATION_SECONDS; ``run`` is one trial: WARMUP iterations, then MEASURE, each
LOOPS calls, reported in seconds per call; ``plan`` prints the plan of one trial of a scenario. Exit 2 for a problem of the file, 130 on Ctrl-C.
"""

import contextlib
import json
import platform
import runpy
import sys
import time
from pathlib import Path

from . import bench
from .errors import HordeError
from .loader import _describe

INVALID = 2
INTERRUPTED = 130


class _Problem(Exception):
    pass


def _load(path):
    path = Path(path)
    if not path.is_file():
        raise _Problem(f"benchmark file not found: {path}")
    bench.forget()
    sys.path.insert(0, str(path.resolve().parent))
    try:
        with contextlib.redirect_stdout(sys.stderr):
            runpy.run_path(str(path), run_name="__horde_bench__")
    except KeyboardInterrupt:
        raise
    except SystemExit as exit:
        raise _Problem(f"{path}: the file called exit({exit.code})") from None
    except BaseException as error:  # noqa: BLE001 - the user's file may raise anything
        raise _Problem(_describe(path, error)) from None
    declared = bench.declared()
    if not declared:
        raise _Problem(f"{path}: the file declares no benchmark (bench.function, bench.command)")
    return declared


def _find(path, name, kind=bench.FunctionBenchmark):
    for declared in _load(path):
        if declared.name == name:
            if not isinstance(declared, kind):
                raise _Problem(f"{path}: {name} is not a {kind.__name__}")
            return declared
    raise _Problem(f"{path}: no benchmark named {name!r}")


def _time(func, kwargs, loops):
    """Seconds per call over `loops` calls."""
    timer = time.perf_counter
    start = timer()
    for _ in range(loops):
        func(**kwargs)
    return (timer() - start) / loops


def _calibrate(func, kwargs, seconds):
    loops = 1
    while True:
        per_call = _time(func, kwargs, loops)
        if per_call * loops >= seconds or loops >= 2**40:
            return loops
        # Jump close to the target when a first measure says how far it is, then double.
        if per_call > 0:
            wanted = int(seconds / per_call * 1.1) + 1
            loops = max(loops * 2, min(wanted, loops * 100))
        else:
            loops *= 10


def main(argv):
    try:
        with contextlib.redirect_stdout(sys.stderr):
            result = _command(argv)
    except _Problem as problem:
        print(problem, file=sys.stderr)
        return INVALID
    except HordeError as error:
        print(error, file=sys.stderr)
        return INVALID
    except KeyboardInterrupt:
        return INTERRUPTED
    if result is None:
        print(__doc__, file=sys.stderr)
        return INVALID
    print(json.dumps(result))
    return 0


def _command(argv):
    if len(argv) == 2 and argv[0] == "list":
        return {
            "python": platform.python_version(),
            "benchmarks": [b.to_data() for b in _load(argv[1])],
        }
    if len(argv) == 5 and argv[0] == "calibrate":
        declared = _find(argv[1], argv[2])
        kwargs = json.loads(argv[3])
        return {"loops": _calibrate(declared.func, kwargs, float(argv[4]))}
    if len(argv) == 7 and argv[0] == "run":
        declared = _find(argv[1], argv[2])
        kwargs = json.loads(argv[3])
        loops, warmup, measure = int(argv[4]), int(argv[5]), int(argv[6])
        warm = [_time(declared.func, kwargs, loops) for _ in range(warmup)]
        measured = [_time(declared.func, kwargs, loops) for _ in range(measure)]
        return {
            "warmup": warm,
            "iterations": measured,
            "timer_resolution_ns": time.get_clock_info("perf_counter").resolution * 1e9,
        }
    if len(argv) == 6 and argv[0] == "plan":
        declared = _find(argv[1], argv[2], bench.ScenarioBenchmark)
        plan = declared.to_plan(json.loads(argv[3]), int(argv[4]), int(argv[5]))
        plan["base_dir"] = str(Path(argv[1]).resolve().parent)
        return plan
    return None


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
