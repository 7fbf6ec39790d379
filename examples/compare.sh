#!/usr/bin/env bash
# Did a change make the server slower? Runs of "before" and "after", interleaved, then
# horde compare. The built-in target has no second version, so here the change is the
# endpoint: /delay/20 (before) against /delay/24 (after), 20 % slower by construction.
#   horde target &            # prints its URL
#   examples/compare.sh http://127.0.0.1:PORT [RESULTS_DIR]
set -euo pipefail
base_url="${1:-http://127.0.0.1:8080}"
results="${2:-results/compare-example}"
runs=5   # a side: 4 + 4 are the fewest that can reach p < 0.05; more narrow the interval

# Interleaved (before, after, after, before, ...), so that a drift over time weighs on both.
for round in $(seq 1 "$runs"); do
  order="before after"
  if (( round % 2 == 0 )); then order="after before"; fi
  for side in $order; do
    delay=20
    if [[ $side == after ]]; then delay=24; fi
    horde http "$base_url/delay/$delay" -c 4 -d 1s -q --results "$results/$side"
  done
done

# Each side is a directory of runs. The two plans differ in their path (in real use, the same
# plan against a new deployment differs only by base URL, which compare ignores): --force.
# --html writes the page to send along: the charts of the changes and of every run's value;
# --names labels the two sides there, in the JSON and on the console.
code=0
horde compare "$results/before" "$results/after" --force --names before,after --json "$results/compare.json" \
  --html "$results/compare.html" || code=$?
echo "horde compare exited $code (0: no regression beyond the tolerance, 99: a regression)"
# In a CI job, let the 99 fail the build instead: `horde compare base new`.
if (( code != 0 && code != 99 )); then exit "$code"; fi
