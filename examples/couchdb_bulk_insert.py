"""Iron Cushion's bulk insert step (seed 003) as a simulation: each connection posts its share
of generated documents through CouchDB's _bulk_docs, and the database's own count is checked
at the end. Scenarios run one after the other with and_then.

    horde run examples/couchdb_bulk_insert.py -D database_address=http://127.0.0.1:5984 \\
        -D num_connections=4 -D num_bulk_insert_operations=5 -D num_documents_per_bulk_insert=100

The flags are Iron Cushion's names, passed as -D parameters.
"""

import time

from horde import at_once_users, bulk_documents_from_schema, http, jsonpath, param, scenario, setup, status

address = param("database_address", "http://127.0.0.1:5984")
# A new database for every run by default. (Deleting and re-creating one name races in
# pouchdb-server: the delete can complete after the create has answered.)
database = param("database_name", f"horde_{int(time.time() * 1000)}")
connections = param("num_connections", 4)
operations = param("num_bulk_insert_operations", 5)
per_bulk = param("num_documents_per_bulk_insert", 100)
schema = param("json_document_schema_filename", "document_schema.json")

fresh_database = scenario("fresh database").exec(
    http("create database").put(f"/{database}").check(status().in_(201, 202)),
)

bulk_insert = scenario("bulk insert").repeat(
    operations,
    http("bulk insert")
    .post(f"/{database}/_bulk_docs")
    .body(bulk_documents_from_schema(schema, per_bulk))
    .check(status().is_(201), jsonpath("$[0].ok").is_("true")),
)

count = scenario("count").exec(
    http("count documents").get(f"/{database}").check(jsonpath("$.doc_count").is_(connections * operations * per_bulk))
)

setup(
    fresh_database.inject(at_once_users(1)).and_then(
        bulk_insert.inject(at_once_users(connections)).and_then(count.inject(at_once_users(1)))
    ),
    protocol=http.base_url(address),
    name="couchdb_bulk_insert",
)
