#!/usr/bin/env bash
# CPU time (user + sys) per request of `horde http` against nginx, for two builds, interleaved
# ABBA, 6 repetitions. CPU time, not throughput: a build running beside it changes it little,
# which makes it the hot-path check on a shared machine (callgrind crashes here, valgrind 3.19).
#
#   bash bench/cpu_per_request.sh /path/to/horde-before /path/to/horde-after   # N=200000 by default
set -euo pipefail
before=$1 after=$2
here=$(cd "$(dirname "$0")/.." && pwd)
w=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
sed -e "s|{dir}|$w|g" -e "s|{port}|$port|g" "$here/scripts/nginx.conf.template" > "$w/nginx.conf"
nginx -c "$w/nginx.conf" -p "$w" & np=$!
trap 'kill $np; rm -rf "$w"' EXIT
for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.05; done
n=${N:-200000}
echo "# $(date -u +%F): horde http -c 10 -n $n --workers 1 against nginx, CPU per request"
for rep in 1 2 3 4 5 6; do
  if [ $((rep % 2)) = 1 ]; then order="before after"; else order="after before"; fi
  for which in $order; do
    binary=$before; [ "$which" = after ] && binary=$after
    /usr/bin/time -o "$w/t" -f "%U %S" "$binary" http "http://127.0.0.1:$port/" -c 10 -n "$n" --workers 1 -q \
      --results "$w/r" >/dev/null 2>/dev/null
    awk -v n="$n" -v which="$which" '{printf "%s %.3f us/request\n", which, ($1+$2)*1e6/n}' "$w/t"
  done
done
