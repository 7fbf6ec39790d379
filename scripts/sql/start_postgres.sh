#!/usr/bin/env bash
# A throwaway PostgreSQL on 127.0.0.1 for the tests and benchmarks: a fresh cluster in DIR,
# durability off (fsync, synchronous_commit, full_page_writes: the tests measure horde, not the
# disk), database `bench` owned by bench/benchpw (password auth over TCP). Runs as root: the
# server itself runs as the postgres user. Prints the postmaster's PID on its last line.
# usage: start_postgres.sh DIR PORT        stop: kill -INT PID (fast shutdown)
set -euo pipefail
DIR=$(mkdir -p "$1" && cd "$1" && pwd)
PORT=$2
BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
RUN_AS=(runuser -u postgres --)
[ "$(id -u)" -eq 0 ] || RUN_AS=()
[ "$(id -u)" -ne 0 ] || chown postgres:postgres "$DIR"
echo postgres > "$DIR/pw"
[ "$(id -u)" -ne 0 ] || chown postgres "$DIR/pw"
"${RUN_AS[@]}" "$BIN/initdb" -D "$DIR/data" -U postgres --pwfile="$DIR/pw" --auth-local=trust \
    --auth-host=scram-sha-256 --no-sync -E UTF8 --locale=C.UTF-8 > "$DIR/initdb.log"
"${RUN_AS[@]}" "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w start \
    -o "-c listen_addresses=127.0.0.1 -p $PORT -k $DIR -c fsync=off -c synchronous_commit=off -c full_page_writes=off" > /dev/null
psql -q -h "$DIR" -p "$PORT" -U postgres -c "CREATE ROLE bench LOGIN PASSWORD 'benchpw'" -c "CREATE DATABASE bench OWNER bench"
head -1 "$DIR/data/postmaster.pid"
