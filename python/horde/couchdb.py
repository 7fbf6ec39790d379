"""The CouchDB workload as steps of any scenario: Iron Cushion's bulk insert and CRUD steps
(seed 003), run natively by the engine, with Iron Cushion's report in summary.json and on the
console. One virtual user plays one of Iron Cushion's connections.

    >>> from horde import scenario, couchdb_bulk_insert, couchdb_crud
    >>> bulk = scenario("bulk").exec(couchdb_bulk_insert("bulk", "/bench", "doc.json", documents_per_insert=100, inserts=5))
    >>> crud = scenario("crud").exec(couchdb_crud("crud", "/bench", "doc.json", operations=1000,
    ...                                          create=2, read=3, update=2, delete=1, bulk_documents_per_user=500))
    >>> crud.to_steps()[0]["weights"]
    {'create': 2, 'read': 3, 'update': 2, 'delete': 1}
"""

from .chains import Chain
from .errors import DslError


def _count(value, what, minimum=0):
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise DslError(f"{what}: expected a whole number >= {minimum}, got {value!r}")
    return value


def couchdb_bulk_insert(name, database, schema, *, documents_per_insert, inserts):
    """Each user posts ``inserts`` batches of ``documents_per_insert`` generated documents to
    ``{database}/_bulk_docs``. ``database`` is a URL, or a path under the protocol's base URL;
    ``schema`` a JSON template or XML schema file, next to the simulation when relative."""
    step = {
        "type": "couchdb_bulk_insert",
        "name": name,
        "database": str(database),
        "schema": str(schema),
        "documents_per_insert": _count(documents_per_insert, "couchdb_bulk_insert(documents_per_insert=)", 1),
        "inserts": _count(inserts, "couchdb_bulk_insert(inserts=)"),
    }
    return Chain(steps=(step,))


def couchdb_crud(name, database, schema, *, operations, create=0, read=0, update=0, delete=0,
                 bulk_documents_per_user=0):
    """Each user performs ``operations`` single-document operations in a random order, in the
    proportions of the weights (Iron Cushion's rounding: 2/8 of 10,000 is 2,500 creates).
    Updates and deletes act on the document last created or read; reads pick an existing one:
    the user's own bulk-inserted documents (``bulk_documents_per_user``, from a
    :func:`couchdb_bulk_insert` step earlier in the same run with as many users) or those it
    created. Rows: ``{name} create``, ``{name} read``, ``{name} update``, ``{name} delete``."""
    weights = {
        "create": _count(create, "couchdb_crud(create=)"),
        "read": _count(read, "couchdb_crud(read=)"),
        "update": _count(update, "couchdb_crud(update=)"),
        "delete": _count(delete, "couchdb_crud(delete=)"),
    }
    step = {
        "type": "couchdb_crud",
        "name": name,
        "database": str(database),
        "schema": str(schema),
        "operations": _count(operations, "couchdb_crud(operations=)"),
        "weights": weights,
        "bulk_documents_per_user": _count(bulk_documents_per_user, "couchdb_crud(bulk_documents_per_user=)"),
    }
    return Chain(steps=(step,))
