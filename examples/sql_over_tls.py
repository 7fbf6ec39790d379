"""Queries a PostgreSQL server over TLS, checking on the server's side that the connection is
encrypted and the certificate was checked the way the URL says (libpq's parameters).

    horde run examples/sql_over_tls.py \\
        -D url='postgres://app:secret@db.example.com:5432/shop?sslmode=verify-full&sslrootcert=ca.pem'

`sslmode=verify-full` checks the server's certificate chain against `sslrootcert` and its name
against the host; `require` only encrypts; `prefer` (the default, as libpq) encrypts when the
server offers it. `expect=tcp` or `expect=unix` checks the other transports (a Unix socket:
`postgres://app@/shop?host=/run/postgresql`). See docs/sql.md, "Database URLs".
"""

from horde import at_once_users, column, param, response_time_in_millis, scenario, setup, sql

TRANSPORT = (
    "SELECT CASE WHEN inet_client_addr() IS NULL THEN 'unix' "
    "WHEN (SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()) THEN 'tls' ELSE 'tcp' END AS transport, "
    "(SELECT version FROM pg_stat_ssl WHERE pid = pg_backend_pid()) AS tls_version"
)

check = (
    scenario("transport")
    .exec(sql("transport").query(TRANSPORT).check(column("transport").is_(param("expect", "tls"))))
    .repeat(int(param("queries", "20")), sql("select 1").query("SELECT 1").check(response_time_in_millis().lt(1000)))
)

setup(check.inject(at_once_users(int(param("users", "2")))), protocol=sql.url(param("url")))
