#!/usr/bin/env bash
# A throwaway MariaDB on 127.0.0.1 for the tests and benchmarks: a fresh data directory in DIR,
# database `bench` with user bench/benchpw over TCP, root over DIR/mysqld.sock, the redo log
# flushed once a second (innodb_flush_log_at_trx_commit=2). Prints the server's PID on its
# last line.
# With TLS_DIR (holding ca.pem, server.pem and server.key, as tests/tls_material.py writes them),
# the server also speaks TLS with that certificate.
# usage: start_mariadb.sh DIR PORT [TLS_DIR]        stop: kill PID
set -euo pipefail
DIR=$(mkdir -p "$1" && cd "$1" && pwd)
PORT=$2
TLS=()
if [ -n "${3:-}" ]; then
    TLS=(--ssl-ca="$3/ca.pem" --ssl-cert="$3/server.pem" --ssl-key="$3/server.key")
fi
mariadb-install-db --no-defaults --datadir="$DIR/data" --user="$(id -un)" --auth-root-authentication-method=socket \
    --skip-test-db > "$DIR/install-db.log" 2>&1
nohup "$(command -v mariadbd || echo /usr/sbin/mariadbd)" --no-defaults --datadir="$DIR/data" --user="$(id -un)" \
    --bind-address=127.0.0.1 --port="$PORT" --socket="$DIR/mysqld.sock" --pid-file="$DIR/mysqld.pid" \
    --log-error="$DIR/error.log" --skip-log-bin --skip-name-resolve --innodb-buffer-pool-size=256M \
    --innodb-flush-log-at-trx-commit=2 --local-infile=1 ${TLS[@]+"${TLS[@]}"} > "$DIR/stdout.log" 2>&1 &
PID=$!
for _ in $(seq 1 600); do
    mariadb-admin --no-defaults --socket="$DIR/mysqld.sock" -uroot ping > /dev/null 2>&1 && break
    kill -0 $PID 2>/dev/null || { echo "mariadbd died:" >&2; tail -5 "$DIR/error.log" >&2; exit 1; }
    sleep 0.05
done
mariadb --no-defaults --socket="$DIR/mysqld.sock" -uroot -e "CREATE DATABASE bench;
  CREATE USER 'bench'@'127.0.0.1' IDENTIFIED BY 'benchpw'; GRANT ALL ON bench.* TO 'bench'@'127.0.0.1';
  CREATE USER 'bench'@'localhost' IDENTIFIED BY 'benchpw'; GRANT ALL ON bench.* TO 'bench'@'localhost';"
echo $PID
