#!/usr/bin/env bash
# YCSB's workload A (50 % reads, 50 % updates, zipfian keys) on Apache Cassandra: load 1,000
# records into ycsb.usertable (made when missing), then run 5,000 operations on 8 threads at
# QUORUM. Each phase prints horde's summary, then YCSB's report (also in ycsb.txt).
#   examples/ycsb_cassandra.sh 127.0.0.1:9042 [more flags: --workload d, --target 2000, -d 30s ...]
set -euo pipefail
nodes="${1:-127.0.0.1:9042}"
shift || true
horde cql "$nodes" \
  --workload a \
  --records 1000 \
  --operations 5000 \
  --threads 8 \
  --consistency quorum \
  "$@"
