"""Documents generated from a schema, as Iron Cushion generates them (seed 003), in any request
body: every request sends a new document shaped like the schema, with random values. The
schema is a JSON document used as a template (document_schema.json; any CouchDB document
works), or its XML twin (document_schema.xml). The run's seed makes the documents
reproducible.

    horde target            # prints its URL
    horde run examples/generated_documents.py -D base_url=http://127.0.0.1:PORT
"""

from horde import at_once_users, document_from_schema, http, jsonpath, param, scenario, setup, status

schema = param("schema", "document_schema.json")

post = (
    http("post a document")
    .post("/api/echo")
    .body(document_from_schema(schema))
    .check(
        status().is_(200),
        jsonpath("$.obj1.obj2.boolean2").exists(),
        jsonpath("$.array1[0][1]").exists(),
        jsonpath("$.string1").save_as("words"),
    )
)

setup(
    scenario("documents").repeat(param("documents", 20), post).inject(at_once_users(param("users", 5))),
    protocol=http.base_url(param("base_url", "http://127.0.0.1:8080")),
    name="generated_documents",
    seed=param("seed", 42),
)
