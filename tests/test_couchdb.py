"""`horde couchdb` and the CouchDB steps against a real CouchDB-API server (pouchdb-server in
memory): document counts read from the server after each step, operation counts per type,
reproducible documents for a seed, every validation rule of seed 003, the report's fields,
and servers that refuse, fail or lack the database."""

import itertools
import json
import re
import urllib.request

import pytest

from conftest import EXAMPLES, free_port, get_json

SCHEMA = EXAMPLES / "document_schema.json"
XML_SCHEMA = EXAMPLES / "document_schema.xml"
_names = itertools.count()

IRON_CUSHION_FIELDS = ["timeTaken", "totalJsonBytesSent", "totalJsonBytesReceived", "localProcessing", "sendData",
                       "receiveData"]
BULK_FIELDS = ["remoteProcessing", "remoteProcessingRate", "localInsertRate"]
CRUD_FIELDS = [f"remote{op}Processing{suffix}" for op in ("Create", "Read", "Update", "Delete") for suffix in ("", "Rate")]


def fresh_name():
    return f"horde_test_{next(_names)}"


def benchmark(horde, couchdb, database, *flags):
    return horde("couchdb", f"--database_address={couchdb.url}", f"--database_name={database}", *flags)


def doc_count(couchdb, database):
    return get_json(f"{couchdb.url}/{database}")["doc_count"]


def test_bulk_insert_step_leaves_every_document_in_the_database(horde, couchdb):
    database = fresh_name()
    result = benchmark(horde, couchdb, database, "--num_connections=3", f"--json_document_schema_filename={SCHEMA}",
                       "--num_documents_per_bulk_insert=40", "--num_bulk_insert_operations=5")
    assert result.code == 0, result.stderr
    # 3 x 40 x 5, counted by the server itself.
    assert doc_count(couchdb, database) == 600
    [step] = result.summary["couchdb"]
    assert step["kind"] == "bulk_insert" and step["connections"] == 3
    assert step["documents"] == {"inserted": 600}
    assert result.row("bulk insert")["ok"] == 15
    # Iron Cushion's report, in its names, on the console and in summary.json.
    assert "BULK INSERT BENCHMARK RESULTS" in result.stdout
    for field in IRON_CUSHION_FIELDS + BULK_FIELDS:
        assert field in step, field
        assert re.search(rf"^  {field}=", result.stdout, re.M), field
    for spread in ("localProcessing", "sendData", "remoteProcessing", "receiveData"):
        s = step[spread]
        assert 0 <= s["min"] <= s["median"] <= s["max"] and s["sd"] >= 0
    assert step["remoteProcessing"]["max"] <= step["timeTaken"]
    assert step["totalJsonBytesSent"] > 600 * 50
    assert step["remoteProcessingRate"] >= step["localInsertRate"] > 0
    assert "database %s: 600 documents (as expected" % database in result.stdout


def test_crud_step_performs_the_weighted_counts_in_iron_cushions_split(horde, couchdb):
    database = fresh_name()
    result = benchmark(horde, couchdb, database, "--num_connections=3", f"--xml_document_schema_filename={XML_SCHEMA}",
                       "--seed=42", "--num_documents_per_bulk_insert=20", "--num_bulk_insert_operations=2",
                       "--num_crud_operations=80", "--create_weight=2", "--read_weight=3", "--update_weight=2",
                       "--delete_weight=1")
    assert result.code == 0, result.stderr
    summary = result.summary
    assert summary["global"]["ko"] == 0, summary["errors"]
    # Per connection: 2/8, 3/8, 2/8, 1/8 of 80 = 20, 30, 20, 10.
    counts = {op: result.row(f"crud {op}")["ok"] for op in ("create", "read", "update", "delete")}
    assert counts == {"create": 60, "read": 90, "update": 60, "delete": 30}
    bulk, crud = summary["couchdb"]
    assert crud["kind"] == "crud" and crud["documents"] == counts
    for field in IRON_CUSHION_FIELDS + CRUD_FIELDS:
        assert field in crud, field
        assert re.search(rf"^  {field}=", result.stdout, re.M), field
    # The server's own count: 120 bulk inserted + 60 created - 30 deleted.
    assert doc_count(couchdb, database) == 150
    # Updates really changed documents: some surviving documents are at revision 2 or more.
    docs = get_json(f"{couchdb.url}/{database}/_all_docs?include_docs=true")["rows"]
    assert any(not row["doc"]["_rev"].startswith("1-") for row in docs)


def test_kebab_case_aliases_and_a_plan_to_reuse(horde, couchdb, tmp_path):
    result = horde("couchdb", f"--database-address={couchdb.url}", "--database-name=unused", f"--json-document-schema-filename={SCHEMA}",
                   "--num-crud-operations=10", "--create-weight=1", "--print-plan", results=False)
    assert result.code == 0, result.stderr
    plan = json.loads(result.stdout)
    [crud] = plan["scenarios"]
    assert crud["steps"][0]["type"] == "couchdb_crud" and crud["steps"][0]["operations"] == 10


def documents_by_number(couchdb, database):
    """Documents without _id and _rev, keyed by their number (ids differ per run)."""
    rows = get_json(f"{couchdb.url}/{database}/_all_docs?include_docs=true")["rows"]
    out = {}
    for row in rows:
        doc = dict(row["doc"])
        number = int(doc.pop("_id").rsplit("-", 1)[1])
        doc.pop("_rev")
        out[number] = doc
    return out


def test_the_same_seed_generates_the_same_documents(horde, couchdb):
    runs = {}
    for database, seed in ((fresh_name(), 7), (fresh_name(), 7), (fresh_name(), 8)):
        result = benchmark(horde, couchdb, database, "--num_connections=2", f"--json_document_schema_filename={SCHEMA}",
                           f"--seed={seed}", "--num_documents_per_bulk_insert=10", "--num_bulk_insert_operations=2")
        assert result.code == 0, result.stderr
        runs.setdefault(seed, []).append(documents_by_number(couchdb, database))
    first, again = runs[7]
    assert len(first) == 40 and first == again
    assert runs[8][0] != first
    # Shaped as the schema: every document has its top-level names.
    template = json.loads(SCHEMA.read_text())
    assert all(set(doc) == set(template) - {"_id", "_rev"} for doc in first.values())


RULES = [
    (["--num_connections=0"], "--num_connections must be > 0"),
    (["--create_weight=-1"], "--create_weight must be >= 0"),
    (["--num_crud_operations=-5"], "--num_crud_operations must be >= 0"),
    ([f"--xml_document_schema_filename={XML_SCHEMA}"], "exactly one of --json_document_schema_filename or --xml_document_schema_filename"),
    (["--create_weight=0", "--read_weight=0", "--update_weight=0", "--delete_weight=0"], "positive sum"),
    (["--create_weight=1", "--read_weight=1", "--delete_weight=3"], "--create_weight + --read_weight vs --delete_weight"),
    (["--create_weight=0", "--read_weight=0", "--update_weight=1", "--delete_weight=0"], "create + read must be more than 0 when update is more than 0"),
    (["--create_weight=1", "--delete_weight=1", "--num_crud_operations=10"], None),
    (["--num_bulk_insert_operations=0", "--num_documents_per_bulk_insert=0", "--create_weight=0", "--read_weight=1", "--delete_weight=0"],
     "--read_weight: 10 reads per connection but no document to read"),
    (["--num_bulk_insert_operations=1", "--num_documents_per_bulk_insert=1", "--create_weight=0", "--read_weight=1", "--delete_weight=1"],
     "--delete_weight: 5 deletes per connection > 1 documents bulk inserted + 0 created"),
]


@pytest.mark.parametrize("flags, message", RULES)
def test_every_validation_rule_is_refused_with_its_flag(horde, couchdb, flags, message):
    base = {"--num_connections": "2", "--num_crud_operations": "10", "--create_weight": "1", "--read_weight": "1",
            "--update_weight": "0", "--delete_weight": "0", "--num_bulk_insert_operations": "1", "--num_documents_per_bulk_insert": "5"}
    for flag in flags:
        name, value = flag.split("=", 1)
        base[name] = value
    argv = [f"{k}={v}" for k, v in base.items()] + [f"--json_document_schema_filename={SCHEMA}"]
    result = benchmark(horde, couchdb, fresh_name(), *argv, "--print_plan")
    if message is None:
        assert result.code == 0, result.stderr
        return
    assert result.code == 2, result.stderr
    assert message in result.stderr, result.stderr


def test_missing_and_broken_inputs_are_refused(horde, couchdb, tmp_path):
    missing = horde("couchdb", f"--json_document_schema_filename={SCHEMA}", "--num_crud_operations=1", "--create_weight=1", results=False)
    assert missing.code == 2
    assert "--database_address must be provided" in missing.stderr and "--database_name must be provided" in missing.stderr
    broken = tmp_path / "broken.xml"
    broken.write_text("<object>\n  <entry><name>a</name><value><integer/></value></entry>\n  <entry>\n</object>\n")
    result = benchmark(horde, couchdb, "x", f"--xml_document_schema_filename={broken}", "--num_crud_operations=1", "--create_weight=1")
    assert result.code == 2
    assert "--xml_document_schema_filename" in result.stderr and "line 4" in result.stderr, result.stderr
    unknown = horde("couchdb", "--num_conections=3", results=False)
    assert unknown.code == 2 and "--num_conections" in unknown.stderr


def test_a_dead_server_is_a_clear_error(horde):
    result = horde("couchdb", f"--database_address=http://127.0.0.1:{free_port()}", "--database_name=x",
                   f"--json_document_schema_filename={SCHEMA}", "--num_crud_operations=1", "--create_weight=1")
    assert result.code == 3
    assert "cannot reach CouchDB" in result.stderr and "refused" in result.stderr


def write_simulation(tmp_path, body):
    path = tmp_path / "sim.py"
    path.write_text("from horde import *\n" + body)
    return path


def test_a_missing_database_is_counted_by_kind(horde, couchdb, tmp_path):
    sim = write_simulation(tmp_path, f"""
crud = scenario("crud").exec(couchdb_crud("crud", "/no_such_database", {str(SCHEMA)!r}, operations=6, create=1))
setup(crud.inject(at_once_users(2)), protocol=http.base_url({couchdb.url!r}))
""")
    result = horde("run", sim, "-q")
    assert result.code == 0, result.stderr
    [error] = result.summary["errors"]
    assert error["kind"] == "missing_database" and error["count"] == 12, error
    assert "does not exist" in error["message"]
    # The connections finished their step and are in the report, with nothing done.
    [step] = result.summary["couchdb"]
    assert step["connections"] == 2 and step["documents"]["create"] == 0


def test_conflicts_and_server_errors_are_counted_not_fatal(horde, couchdb, target, tmp_path):
    database = fresh_name()
    urllib.request.urlopen(urllib.request.Request(f"{couchdb.url}/{database}", method="PUT"), timeout=5).close()
    # The same bulk insert twice in one run: same run, same users, same ids: every document of
    # the second pass conflicts.
    sim = write_simulation(tmp_path, f"""
step = couchdb_bulk_insert("bulk", "/{database}", {str(SCHEMA)!r}, documents_per_insert=5, inserts=2)
first = scenario("first").exec(step)
second = scenario("second").exec(step)
failing = scenario("failing").exec(
    couchdb_crud("failing", {target.url + "/status/500"!r}, {str(SCHEMA)!r}, operations=4, create=1, read=1))
setup(first.inject(at_once_users(2)).and_then(second.inject(at_once_users(2)), failing.inject(at_once_users(1))),
      protocol=http.base_url({couchdb.url!r}))
""")
    result = horde("run", sim, "-q")
    assert result.code == 0, result.stderr
    kinds = {e["kind"]: e["count"] for e in result.summary["errors"]}
    # 2 users x 2 inserts conflicted; 2 creates got a 500, and their reads had no document.
    assert kinds == {"bulk_conflict": 4, "server_error": 2, "no_document": 2}, result.summary["errors"]
    assert doc_count(couchdb, database) == 20
    # The built-in target saw exactly the two creates (reads were never sent).
    assert target.stats()["total"] == 2


def test_a_server_that_refuses_connections_mid_simulation_is_counted(horde, tmp_path):
    sim = write_simulation(tmp_path, f"""
bulk = scenario("bulk").exec(couchdb_bulk_insert("bulk", "/db", {str(SCHEMA)!r}, documents_per_insert=3, inserts=4))
crud = scenario("crud").exec(couchdb_crud("crud", "/db", {str(SCHEMA)!r}, operations=5, create=1, update=1))
setup(bulk.inject(at_once_users(2)).and_then(crud.inject(at_once_users(2))),
      protocol=http.base_url("http://127.0.0.1:{free_port()}"))
""")
    result = horde("run", sim, "-q")
    assert result.code == 0, result.stderr
    kinds = {}
    for error in result.summary["errors"]:
        kinds[error["kind"]] = kinds.get(error["kind"], 0) + error["count"]
    # Every bulk insert and create was tried and refused; the updates had no document.
    counts = {op: result.row(f"crud {op}")["ko"] for op in ("create", "update")}
    assert kinds["connect_refused"] == 8 + counts["create"] and kinds["no_document"] == counts["update"]
    assert counts["create"] + counts["update"] == 10 and result.row("bulk")["ko"] == 8
    assert [s["connections"] for s in result.summary["couchdb"]] == [2, 2]


def test_eventually_waits_for_a_view_that_indexes_after_it_answers(horde, couchdb, tmp_path):
    """A second, real eventually consistent store for seed 002's retry: a CouchDB view read with
    `stale=update_after` answers from its index as it was, then brings it up to date, so a
    document just written is missing from the first read and present in a later one."""
    database = fresh_name()
    request = urllib.request.Request(f"{couchdb.url}/{database}", method="PUT")
    urllib.request.urlopen(request).read()
    design = json.dumps({"views": {"kind": {"map": "function (doc) { emit(doc.kind, 1); }"}}}).encode()
    request = urllib.request.Request(f"{couchdb.url}/{database}/_design/by", data=design, method="PUT",
                                     headers={"Content-Type": "application/json"})
    urllib.request.urlopen(request).read()
    get_json(f"{couchdb.url}/{database}/_design/by/_view/kind")  # builds the index
    sim = write_simulation(tmp_path, f"""
view = http("view").get("/{database}/_design/by/_view/kind?stale=update_after&key=%22k-${{i}}%22") \\
    .check(jsonpath("$.rows[0].id").save_as("found"))
scn = (scenario("writes then reads")
       .repeat(5, exec_(
           http("write").put("/{database}/doc-${{i}}").body(json_body({{"kind": "k-${{i}}"}})).check(status().is_(201)),
           eventually(view, pause=0.05, timeout=10, name="indexed")), counter="i"))
setup(scn.inject(at_once_users(1)), protocol=http.base_url({couchdb.url!r}))
""")
    result = horde("run", sim, "-q")
    assert result.code == 0, result.stderr
    assert result.summary["global"]["ko"] == 0, result.summary["errors"]
    [indexed] = [g for g in result.summary["groups"] if g["name"] == "indexed"]
    assert (indexed["ok"], indexed["ko"]) == (5, 0)
    # Every first read answered from the index as it was before the write.
    assert indexed["attempts"]["retried_passes"] == 5
    view = next(r for r in result.summary["requests"] if r["name"] == "view")
    assert view["retried"] == indexed["attempts"]["total"] - 5 >= 5
    rows = get_json(f"{couchdb.url}/{database}/_design/by/_view/kind")["rows"]
    assert sorted(r["id"] for r in rows) == [f"doc-{i}" for i in range(5)]
