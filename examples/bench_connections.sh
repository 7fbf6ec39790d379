#!/usr/bin/env bash
# How a server's throughput changes with the number of connections, measured as JMH measures
# (warm-up, several trials per cell, a Score with its Error), first from one horde process,
# then with every trial split over two Dask worker processes (pip install 'horde[cluster]';
# on machines of your own, --cluster tcp://HOST:8786), and the two side by side: does the
# load generator or the server set the number?
#   examples/bench_connections.sh URL RESULTS_DIR [horde bench flags]
set -euo pipefail
url="${1:-http://127.0.0.1:8080/}"
results="${2:-bench-connections}"
shift $(( $# < 2 ? $# : 2 ))
mkdir -p "$results"
horde bench http "$url" -L c=2,8 --metric throughput --machine one-process --out "$results/one-process.json" "$@"
horde bench http "$url" -L c=2,8 --metric throughput --machine local-2 --cluster local:2 \
  --out "$results/local-2.json" "$@"
# A row per connection count, a column per way of running; --html draws it. compare warns
# that both files come from one machine: here that is the point.
horde bench compare "$results/one-process.json" "$results/local-2.json" --html "$results/compare.html"
