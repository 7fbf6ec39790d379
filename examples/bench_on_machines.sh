#!/usr/bin/env bash
# Seed 002's job across machines: run one benchmark file on several machines and put them side
# by side in one table. Each HOST is `user@host` (reached with ssh, which must find horde and
# the file's imports there: `pip install horde bcrypt`) or `local` (this machine). Starting
# cloud machines is not horde's job; with the AWS CLI, for instance:
#   id=$(aws ec2 run-instances --instance-type c5.large --image-id ami-... --key-name k \
#        --query 'Instances[0].InstanceId' --output text)
#   ... examples/bench_on_machines.sh ubuntu@<its address> ...
#   aws ec2 terminate-instances --instance-ids "$id"
# On EC2 the machine's label is its instance type (read from DMI); elsewhere, its host name.
#
#   examples/bench_on_machines.sh FILE.py RESULTS_DIR HOST... [-- horde bench flags]
set -euo pipefail
file="$1"; results="$2"; shift 2
hosts=()
while [[ $# -gt 0 && $1 != -- ]]; do hosts+=("$1"); shift; done
[[ ${1:-} == -- ]] && shift
flags=("$@")
mkdir -p "$results"

pids=()
for host in "${hosts[@]}"; do
  if [[ $host == local ]]; then
    horde bench "$file" "${flags[@]}" --out "$results/local.json" > "$results/local.txt" &
  else
    # One at a time per host, all hosts at once: each machine measures only itself.
    (
      scp -q "$file" "$host:/tmp/horde-bench-file.py"
      ssh "$host" horde bench /tmp/horde-bench-file.py "${flags[@]}" --out /tmp/horde-bench-result.json \
        > "$results/$host.txt"
      scp -q "$host:/tmp/horde-bench-result.json" "$results/$host.json"
    ) &
  fi
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done

# The table here, the pictures (Scores with their Errors, each machine against the first) in
# compare.html.
horde bench compare "$results"/*.json --budget 100ms --html "$results/compare.html"
