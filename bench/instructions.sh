#!/usr/bin/env bash
# Instructions per request of `horde http`, counted by callgrind: repeatable whatever else the
# machine is doing, so it compares two builds fairly where wall-clock numbers are noisy.
#   bench/instructions.sh [HORDE_BINARY] [REQUESTS]
# Starts its own nginx (one worker) on a free loopback port and stops it at the end.
set -euo pipefail
horde="${1:-target/release/horde}"
requests="${2:-20000}"
command -v valgrind >/dev/null || { echo "needs valgrind (apt-get install valgrind)" >&2; exit 1; }
work=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
sed -e "s|{dir}|$work|g" -e "s|{port}|$port|g" "$(dirname "$0")/../scripts/nginx.conf.template" > "$work/nginx.conf"
nginx -c "$work/nginx.conf" -p "$work" & nginx_pid=$!
trap 'kill $nginx_pid 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.05; done
valgrind --tool=callgrind --callgrind-out-file="$work/callgrind.out" \
    "$horde" http "http://127.0.0.1:$port/" -c 10 -n "$requests" --workers 1 -q --results "$work/results" 2> "$work/valgrind.log"
total=$(grep -oE 'Collected : [0-9]+' "$work/valgrind.log" | grep -oE '[0-9]+')
echo "$horde: $total instructions for $requests requests: $((total / requests)) per request (startup included)"
