#!/usr/bin/env bash
# Iron Cushion's benchmark with Iron Cushion's flags (seed 003): 4 connections bulk insert
# 4 x 5 x 100 = 2,000 documents, then each performs 400 CRUD operations weighted 2:3:2:1.
#   examples/couchdb_benchmark.sh http://127.0.0.1:5984 [more flags]
# The report comes first in Iron Cushion's format, then horde's percentiles per operation;
# the last line checks the database's document count.
set -euo pipefail
address="${1:-http://127.0.0.1:5984}"
shift || true
here="$(cd "$(dirname "$0")" && pwd)"
horde couchdb \
  --database_address="$address" \
  --database_name=horde_benchmark \
  --num_connections=4 \
  --json_document_schema_filename="$here/document_schema.json" \
  --seed=2012 \
  --num_documents_per_bulk_insert=100 \
  --num_bulk_insert_operations=5 \
  --num_crud_operations=400 \
  --create_weight=2 --read_weight=3 --update_weight=2 --delete_weight=1 \
  "$@"
