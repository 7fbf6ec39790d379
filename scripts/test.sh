#!/usr/bin/env bash
# The second quickstart command: installs what the tests need, builds and installs horde, and
# runs every test, Rust and Python. The Python tests start their own servers on 127.0.0.1 (the
# built-in target, nginx with one worker, pouchdb-server, PostgreSQL, MariaDB, Cassandra) and stop
# them by PID when they are done.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

missing=()
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing+=(nginx)
# Headless Chromium opens the HTML reports in tests/test_report_html.py (driven by Playwright,
# which needs no browser of its own).
[ -x /usr/bin/chromium ] || missing+=(chromium)
# Real databases for `horde sql` (tests/test_sql.py starts its own throwaway servers with
# scripts/sql/start_*.sh and stops them by PID): PostgreSQL (with pgcrypto, in Debian's server
# package) and MariaDB, with their command-line clients, which the tests check counts with.
ls /usr/lib/postgresql/*/bin/initdb > /dev/null 2>&1 || missing+=(postgresql)
command -v psql > /dev/null 2>&1 || missing+=(postgresql-client)
[ -x /usr/sbin/mariadbd ] || command -v mariadbd > /dev/null 2>&1 || missing+=(mariadb-server)
command -v mariadb > /dev/null 2>&1 || missing+=(mariadb-client)
# An sshd of the tests' own for `horde bench --host` (tests/test_bench.py), and the ssh client.
[ -x /usr/sbin/sshd ] || missing+=(openssh-server)
command -v ssh > /dev/null 2>&1 || missing+=(openssh-client)
# Apache Cassandra for the CQL steps (tests/test_cql.py), run from Maven Central's jars on Java 17.
command -v java > /dev/null 2>&1 || missing+=(openjdk-17-jre-headless)
command -v mvn > /dev/null 2>&1 || missing+=(maven)
command -v cargo >/dev/null 2>&1 || { echo "cargo (Rust) is needed: https://rustup.rs" >&2; exit 1; }
if [ ${#missing[@]} -gt 0 ]; then
    step "installing ${missing[*]}"
    if [ "$(id -u)" -eq 0 ]; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
    else
        sudo apt-get update -qq
        sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
    fi
fi

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    step "installing Node.js (for pouchdb-server, the CouchDB-API test server)"
    if [ "$(id -u)" -eq 0 ]; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm
    else
        sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm
    fi
fi
if [ ! -x scripts/couchdb/node_modules/pouchdb-server/bin/pouchdb-server ]; then
    step "installing pouchdb-server (npm ci, the versions locked in scripts/couchdb)"
    # --ignore-scripts: the sqlite3 build is not needed for the in-memory backend.
    (cd scripts/couchdb && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
fi

if [ ! -d scripts/cassandra/lib ]; then
    step "fetching Apache Cassandra 5.0 (its jars from Maven Central, scripts/cassandra/pom.xml)"
    (cd scripts/cassandra && mvn -B -q dependency:copy-dependencies -DoutputDirectory=lib -DincludeScope=runtime)
fi

step "installing the Python test tools"
python3 -m pip install -q --disable-pip-version-check "pytest>=7" "jsonschema>=4" "maturin>=1.5,<2" "cryptography>=41" "django>=4.2,<6" "xmlschema>=3" "prometheus-client>=0.20" "playwright>=1.40" "hdrhistogram>=0.10" "bcrypt>=4" "cassandra-driver>=3.29"
# Dask distributed and asyncssh, for --cluster (tests/test_cluster_dask.py, test_cluster_ssh.py):
# the `cluster` extra of pyproject.toml.
python3 -m pip install -q --disable-pip-version-check "distributed>=2024.1" "asyncssh>=2.14"

step "building and installing horde (release)"
python3 -m pip install -q --disable-pip-version-check .

step "Rust style: rustfmt and clippy (warnings are errors)"
# Checked, not hoped for: the repository's rustfmt.toml, and clippy on every target.
if ! cargo fmt --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1; then
    command -v rustup >/dev/null 2>&1 && rustup component add rustfmt clippy
fi
if cargo fmt --version >/dev/null 2>&1 && cargo clippy --version >/dev/null 2>&1; then
    cargo fmt --all --check
    cargo clippy --workspace --all-targets --release --quiet -- -D warnings
else
    echo "warning: rustfmt or clippy is not installed (a Rust without rustup): the style is not checked" >&2
fi

step "Rust tests"
# Release, to share the build above; horde-py is a Python extension and is tested from Python.
cargo test --workspace --exclude horde-py --release

step "Python tests"
python3 -m pytest -q tests
