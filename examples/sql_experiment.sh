#!/usr/bin/env bash
# Seed 000's "Processing 10 Million SQL Rows in a Reasonable Amount of Time" in one command:
# create the two-column table, populate it row by row in transactions, with multi-row
# statements and by the database's own bulk path, select every row, add the hash column, and
# set every hash by four strategies, each timed and checked by the database.
#   examples/sql_experiment.sh                     # SQLite, in the results directory
#   examples/sql_experiment.sh postgres://bench:benchpw@127.0.0.1:5433/bench [more flags]
#   examples/sql_experiment.sh mysql://bench:benchpw@127.0.0.1:3307/bench --rows 10000000
# The seed's own sentences come first ("Inserted 100000 rows in 0 minutes and 0 seconds
# (...rows/second)"), then a table of every phase and strategy.
set -euo pipefail
url="${1:-}"
shift || true
horde sql ${url:+--url "$url"} --rows 100000 --seed 2015 --replace "$@"
