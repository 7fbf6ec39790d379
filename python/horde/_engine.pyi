"""Type stubs of the native module (crates/horde-py)."""

__version__: str
PLAN_VERSION: int

def cli_main(argv: list[str]) -> int:
    """Runs the horde command line; argv[0] is the program name. Returns the exit code."""

def validate_plan(plan_json: str) -> list[tuple[str, str]]:
    """Every (path, message) problem of a plan (type errors first, then the meaning); empty when valid."""

def plan_schema() -> str:
    """The JSON Schema of the plan format."""
