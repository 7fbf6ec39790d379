"""CouchDB bulk insert: `horde couchdb` (documents generated per request, ids assigned, replies
parsed) against wrk posting one pre-generated `_bulk_docs` body over and over, on the same
pouchdb-server in the same run. wrk does no per-document work at all, so the ratio says how
much of the server's capacity horde's document generation costs. Also reports horde's
localProcessing per document (generation + encoding + decoding, from Iron Cushion's report).

    python3 bench/couchdb_vs_wrk.py [--runs 3] [--connections 4] [--seconds 2]

Needs pouchdb-server from scripts/couchdb (scripts/test.sh installs it), wrk, and horde
installed (`pip install .`). The server runs on core 0, the clients on core 1.
"""

import argparse
import json
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from local_nginx import free_port, pinned  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = ROOT / "examples" / "document_schema.json"
SERVER = ROOT / "scripts" / "couchdb" / "node_modules" / "pouchdb-server" / "bin" / "pouchdb-server"
DOCS_PER_INSERT = 100


def start_pouchdb(work):
    port = free_port()
    config = work / "config.json"
    config.write_text(json.dumps({"log": {"file": str(work / "pouchdb.log"), "level": "error"}}))
    process = subprocess.Popen(pinned(0, ["node", str(SERVER), "--host", "127.0.0.1", "--port", str(port),
                                          "--in-memory", "--config", str(config), "--no-stdout-logs"]),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url + "/", timeout=1).close()
            return process, url
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise SystemExit("pouchdb-server did not start")


def put(url):
    urllib.request.urlopen(urllib.request.Request(url, method="PUT"), timeout=10).close()


def horde_run(url, database, connections, inserts, work):
    results = work / "results"
    subprocess.run(pinned(1, ["horde", "couchdb", f"--database_address={url}", f"--database_name={database}",
                              f"--num_connections={connections}", f"--json_document_schema_filename={SCHEMA}",
                              "--seed=1", f"--num_documents_per_bulk_insert={DOCS_PER_INSERT}",
                              f"--num_bulk_insert_operations={inserts}", "--workers=1", "-q",
                              "--results", str(results)]),
                   check=True, capture_output=True)
    summary = json.loads(sorted(results.glob("*/summary.json"))[-1].read_text())
    [step] = summary["couchdb"]
    docs = step["documents"]["inserted"]
    # The median connection's local processing over its share of the documents.
    return docs / step["timeTaken"], 1e6 * step["localProcessing"]["median"] / (docs / connections)


def wrk_run(url, database, connections, seconds, work):
    # One bulk body of documents shaped like horde's, ids left to the server so repeated posts
    # never conflict.
    body = json.dumps({"docs": [generated_document() for _ in range(DOCS_PER_INSERT)]})
    script = work / "bulk.lua"
    script.write_text(
        'wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\n'
        f"wrk.body = {json.dumps(body)}\n"
    )
    out = subprocess.run(pinned(1, ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "-s", str(script),
                                    f"{url}/{database}/_bulk_docs"]),
                         check=True, capture_output=True, text=True).stdout
    rps = float(next(line for line in out.splitlines() if line.startswith("Requests/sec")).split()[1])
    return rps * DOCS_PER_INSERT


def generated_document():
    # Same shape and value sizes as horde's generator: the seed 003 example schema with a
    # five-word string (the longest horde makes) so wrk's bodies are never the smaller ones.
    return {"array1": [[0.8474894, 0.30425853], {}, False, None], "boolean1": True, "integer1": 1929847379,
            "obj1": {"array2": [], "obj2": {"boolean2": False}},
            "string1": "928lR8eM7DcBSgR 598A8VxzeFE2 uKTF FqiMEmxdLJmDni q1w2e3r4t5"}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--seconds", type=int, default=2, help="wrk duration; 2 s posts about as many documents as horde")
    parser.add_argument("--inserts", type=int, default=60, help="bulk inserts per connection for horde")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        process, url = start_pouchdb(work)
        try:
            rows = []
            for run in range(args.runs):
                database = f"bench_{run}"
                put(f"{url}/{database}")
                horde_docs, local_us = horde_run(url, database, args.connections, args.inserts, work)
                put(f"{url}/{database}_wrk")
                wrk_docs = wrk_run(url, f"{database}_wrk", args.connections, args.seconds, work)
                rows.append((horde_docs, wrk_docs, local_us))
                print(f"run {run + 1}: horde {horde_docs:,.0f} docs/s, wrk {wrk_docs:,.0f} docs/s, "
                      f"ratio {horde_docs / wrk_docs:.2f}, horde localProcessing {local_us:.1f} us/doc", flush=True)
        finally:
            process.terminate()
            process.wait(timeout=10)
    horde_mean = sum(r[0] for r in rows) / len(rows)
    wrk_mean = sum(r[1] for r in rows) / len(rows)
    local_mean = sum(r[2] for r in rows) / len(rows)
    print(f"mean: horde {horde_mean:,.0f} docs/s, wrk {wrk_mean:,.0f} docs/s, ratio {horde_mean / wrk_mean:.2f}, "
          f"localProcessing {local_mean:.1f} us/doc")


if __name__ == "__main__":
    main()
