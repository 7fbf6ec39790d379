"""Turns a simulation file into a plan. The engine calls :func:`load_simulation` in-process;
``python -m horde.loader load sim.py -D name=value`` does the same for the standalone binary.
"""

import contextlib
import json
import runpy
import sys
import traceback
from pathlib import Path

from . import simulation as _simulation
from .errors import HordeError, SimulationError


def load_simulation(path, params=None):
    """Runs the simulation file and returns its plan as JSON text. Raises SimulationError with
    the file and line of the problem."""
    path = Path(path)
    if not path.is_file():
        raise SimulationError(f"simulation file not found: {path}")
    loading = _simulation._loading
    saved = (loading.params, loading.read, loading.simulation, loading.base_dir, loading.module_name)
    loading.params = dict(params or {})
    loading.read = set()
    loading.simulation = None
    loading.base_dir = str(path.resolve().parent)
    loading.module_name = SIMULATION_MODULE
    # The simulation may import helpers sitting next to it.
    sys.path.insert(0, loading.base_dir)
    try:
        try:
            # stdout carries the plan (`horde plan sim.py > plan.json`): what the simulation
            # prints goes to stderr.
            with contextlib.redirect_stdout(sys.stderr):
                runpy.run_path(str(path), run_name=SIMULATION_MODULE)
        except KeyboardInterrupt:
            raise
        except SystemExit as exit:
            raise SimulationError(f"{_where(path, exit)}: the simulation called exit({exit.code})") from None
        except BaseException as error:
            # BaseException too: a simulation's own exception classes need not be Exceptions.
            raise SimulationError(_describe(path, error)) from None
        if loading.simulation is None:
            raise SimulationError(f"{path}: the simulation never called setup(...)")
        unread = sorted(set(loading.params) - loading.read)
        if unread:
            raise SimulationError(_unread_parameters(path, unread, loading.read))
        try:
            return json.dumps(loading.simulation.to_plan())
        except HordeError as error:
            raise SimulationError(f"{path}: {error}") from None
    finally:
        sys.path.remove(loading.base_dir)
        loading.params, loading.read, loading.simulation, loading.base_dir, loading.module_name = saved


# The name the simulation file runs under (its `__name__`).
SIMULATION_MODULE = "__horde_simulation__"


def _unread_parameters(path, unread, read):
    """`-D USER`: not a parameter of the simulation, with the names it does read."""
    import difflib

    problems = []
    for name in unread:
        close = difflib.get_close_matches(name, sorted(read), n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        problems.append(f"-D {name}: the simulation does not read this parameter{hint}")
    known = ", ".join(sorted(read)) if read else "none"
    return (f"{path}: " + "; ".join(problems) + f". It reads: {known} (with horde.param(NAME)); a parameter read "
            "only under some condition counts when that condition held for this load")


def _where(path, error):
    """`sim.py:12`: the deepest frame in the simulation file, or where its syntax broke."""
    if isinstance(error, SyntaxError) and error.filename and Path(error.filename).resolve() == path.resolve():
        return f"{path}:{error.lineno}"
    frames = [f for f in traceback.extract_tb(error.__traceback__) if Path(f.filename).resolve() == path.resolve()]
    return f"{path}:{frames[-1].lineno}" if frames else str(path)


def _describe(path, error):
    """`sim.py:12: DslError: ...`."""
    if isinstance(error, SyntaxError):
        return f"{_where(path, error)}: SyntaxError: {error.msg}"
    return f"{_where(path, error)}: {type(error).__name__}: {error}"


# The exit code of a load stopped by Ctrl-C; the horde binary reads it as "interrupted".
INTERRUPTED = 130


def demo_simulation_path():
    """The seed-000 JSF journey that ``horde demo`` runs (examples/jsf_journey.py)."""
    return str(Path(__file__).resolve().parent / "demo" / "jsf_journey.py")


def main(argv):
    if argv[:1] == ["demo-path"]:
        print(demo_simulation_path())
        return 0
    if len(argv) >= 2 and argv[0] == "load":
        params = {}
        rest = argv[2:]
        while rest:
            if rest[0] != "-D" or len(rest) < 2 or "=" not in rest[1]:
                print("usage: python -m horde.loader load SIM.py [-D NAME=VALUE]...", file=sys.stderr)
                return 2
            name, value = rest[1].split("=", 1)
            params[name] = value
            rest = rest[2:]
        try:
            print(load_simulation(argv[1], params))
        except SimulationError as error:
            print(error, file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            return INTERRUPTED
        return 0
    print("usage: python -m horde.loader (load SIM.py [-D NAME=VALUE]... | demo-path)", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
