"""Iron Cushion's two steps inside a simulation (seed 003), mixed with other traffic: while the
CRUD users work, a dashboard user polls the database's info. Any scenario of horde can do
the same, and `horde sweep` can sweep it.

    horde run examples/couchdb_mixed_traffic.py -D database_address=http://127.0.0.1:5984

The CouchDB steps report in Iron Cushion's format (console and summary.json's "couchdb"),
each operation also has its row of percentiles.
"""

import time

from horde import (
    at_once_users, constant_users_per_sec, couchdb_bulk_insert, couchdb_crud, http, jsonpath, param, scenario,
    setup, status,
)

address = param("database_address", "http://127.0.0.1:5984")
# A new database for every run by default. (Deleting and re-creating one name races in
# pouchdb-server: the delete can complete after the create has answered.)
database = param("database_name", f"horde_mixed_{int(time.time() * 1000)}")
connections = param("num_connections", 3)
schema = param("schema", "document_schema.json")
inserts, per_insert = 2, 50

create = scenario("create database").exec(http("create database").put(f"/{database}").check(status().in_(201, 202)))

bulk = scenario("bulk insert").exec(
    couchdb_bulk_insert("bulk insert", f"/{database}", schema, documents_per_insert=per_insert, inserts=inserts)
)

crud = scenario("crud").exec(
    couchdb_crud("crud", f"/{database}", schema, operations=80, create=2, read=3, update=2, delete=1,
                 bulk_documents_per_user=inserts * per_insert)
)

dashboard = scenario("dashboard").exec(
    http("database info").get(f"/{database}").check(status().is_(200), jsonpath("$.doc_count").exists())
)

setup(
    create.inject(at_once_users(1)).and_then(
        bulk.inject(at_once_users(connections)).and_then(
            crud.inject(at_once_users(connections)),
            dashboard.inject(constant_users_per_sec(10).during(1)),
        )
    ),
    protocol=http.base_url(address),
    name="couchdb_mixed_traffic",
    seed=2012,
)
