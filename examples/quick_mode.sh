#!/usr/bin/env bash
# Quick mode, like wrk and oha: one URL, a number of connections, a duration or a request count.
#   examples/quick_mode.sh http://127.0.0.1:8080/
set -euo pipefail
url="${1:-http://127.0.0.1:8080/}"
shift || true
# 10 connections for 2 seconds, then exactly 1,000 requests, then 500 req/s paced like wrk2.
horde http "$url" -c 10 -d 2s "$@"
horde http "$url" -c 10 -n 1000 "$@"
horde http "$url" -c 10 -d 2s --rate 500 "$@"
