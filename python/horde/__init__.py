"""horde: load testing and benchmarking. Scenarios are Python code shaped like Gatling's;
a native Rust engine runs them.

    from horde import scenario, http, status, regex, at_once_users, setup

    scn = scenario("home").exec(http("home").get("/").check(status().is_(200)))
    setup(scn.inject(at_once_users(10)), protocol=http.base_url("http://127.0.0.1:8080"))

Run it with ``horde run sim.py``; ``horde plan sim.py`` prints the Plan it makes.
"""

from .chains import (
    Chain,
    Population,
    Scenario,
    as_long_as,
    batch,
    do_if,
    do_if_equals,
    do_if_equals_or_else,
    do_if_or_else,
    do_switch,
    do_while,
    during,
    eventually,
    exec_,
    exit_block_on_fail,
    exit_here,
    exit_here_if,
    exit_here_if_failed,
    feed,
    foreach,
    group,
    pace,
    pause,
    random_switch,
    repeat,
    round_robin_switch,
    scenario,
    set_,
    stop_load_generator,
    try_max,
    uniform_random_switch,
    unset,
)
from .feeders import Feeder, csv, inline, json_file, jsonl, ssv, tsv
from .session import Session, after, before
from .checks import (
    Check,
    body_bytes,
    body_length,
    body_string,
    css,
    current_location,
    header,
    header_regex,
    jmespath,
    jsonpath,
    md5,
    regex,
    response_time_in_millis,
    sha1,
    sha256,
    status,
    substring,
    xpath,
)
from .couchdb import couchdb_bulk_insert, couchdb_crud
from .assertions import Assertion, details, for_all, global_
from .errors import DslError, HordeError, ParameterError, PlanError, SimulationError
from .http import (
    HttpProtocol,
    HttpRequest,
    bulk_documents_from_schema,
    document_from_schema,
    http,
    json_body,
    raw_file_body_part,
    string_body,
    string_body_part,
)
from .injection import (
    at_once_users,
    constant_concurrent_users,
    constant_users_per_sec,
    increment_concurrent_users,
    increment_users_per_sec,
    nothing_for,
    ramp_concurrent_users,
    ramp_users,
    ramp_users_per_sec,
    stress_peak_users,
)
from .sockets import sse, ws
from .cookies import add_cookie, flush_cookie_jar, flush_session_cookies, get_cookie_value
from .sql import SqlDatabase, column, row_count, sql
from .cql import CqlCluster, applied, cql
from .simulation import Simulation, hold_for, jump_to_rps, param, reach_rps, setup, throttle

# Gatling spells it exec; here exec_ avoids the builtin, and exec works on chains.
__all__ = [
    "Assertion", "details", "for_all", "global_",
    "Chain", "Check", "DslError", "HordeError", "HttpProtocol", "HttpRequest", "ParameterError",
    "PlanError", "Population", "Scenario", "Simulation", "SimulationError",
    "at_once_users", "constant_concurrent_users", "constant_users_per_sec", "css", "during",
    "exec_", "group", "header", "header_regex", "http", "json_body", "jsonpath", "nothing_for", "param", "pause",
    "ramp_users", "raw_file_body_part", "regex", "repeat", "scenario", "setup", "status",
    "string_body", "string_body_part", "substring", "validate",
    "pace", "ramp_users_per_sec", "stress_peak_users", "increment_users_per_sec",
    "ramp_concurrent_users", "increment_concurrent_users", "throttle", "reach_rps", "jump_to_rps",
    "hold_for", "document_from_schema", "bulk_documents_from_schema",
    "couchdb_bulk_insert", "couchdb_crud", "batch", "ws", "sse",
    "Feeder", "csv", "tsv", "ssv", "json_file", "jsonl", "inline", "feed", "set_", "unset",
    "do_if", "do_if_or_else", "do_if_equals", "do_if_equals_or_else", "do_switch", "random_switch",
    "uniform_random_switch", "round_robin_switch", "foreach", "as_long_as", "do_while", "try_max",
    "eventually", "exit_here_if_failed", "exit_here", "exit_here_if", "exit_block_on_fail",
    "stop_load_generator", "Session", "before", "after",
    "jmespath", "xpath", "body_string", "body_bytes", "body_length", "md5", "sha1", "sha256", "current_location",
    "response_time_in_millis", "add_cookie", "get_cookie_value", "flush_cookie_jar", "flush_session_cookies",
    "sql", "row_count", "column", "SqlDatabase", "cql", "CqlCluster", "applied",
]


def validate(simulation):
    """Checks a simulation's plan with the engine's own validation; raises PlanError listing
    every problem with its path."""
    import json as _json

    from ._engine import validate_plan

    problems = validate_plan(_json.dumps(simulation.to_plan()))
    if problems:
        raise PlanError(problems)
    return simulation
