#!/usr/bin/env bash
# Record a journey, import it, replay it with 20 users: the orders API of the built-in target
# (docs/cli.md), driven with curl through `horde record`. The import correlates the bearer
# token the login returns and the order id the list returns; the user name typed into the login
# becomes a feeder column, so that 20 users log in as 20 buyers, each with orders of its own.
#
#   horde target                                   # prints its URL
#   examples/record_and_import.sh http://127.0.0.1:PORT [DIR]
#
# DIR (default: a new temporary directory) receives orders.har, orders.py, orders_inputs.csv,
# orders_import.md (what was correlated and why) and the run's results.
set -euo pipefail
site=$1
work=${2:-$(mktemp -d)}
cd "$work"

horde record --port 0 -o orders.har --ca-dir ca > record.log &
recorder=$!
# The recorder's first line names its URL.
until grep -q "listening on" record.log; do
    kill -0 "$recorder" 2> /dev/null || { cat record.log; exit 1; }
    sleep 0.05
done
proxy=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' record.log)

json() { python3 -c "import json, sys; print(json.load(sys.stdin)$1)"; }
token=$(curl -sf -x "$proxy" "$site/api/login" -H 'Content-Type: application/json' -d '{"user": "ann"}' | json '["token"]')
order=$(curl -sf -x "$proxy" "$site/api/orders" -H "Authorization: Bearer $token" | json '["orders"][0]["id"]')
curl -sf -x "$proxy" "$site/api/orders/$order" -H "Authorization: Bearer $token" > /dev/null
curl -sf -x "$proxy" -X POST "$site/api/orders/$order/cancel" -H "Authorization: Bearer $token" > /dev/null
kill -INT "$recorder"
wait "$recorder"

horde import orders.har -o orders.py
# One row per buyer: users read the feeder's rows in turn.
{ echo user; for i in $(seq 1 20); do echo "buyer-$i"; done; } > orders_inputs.csv
horde run orders.py -D base_url="$site" -D users=20 -D think_time=0 --results results
