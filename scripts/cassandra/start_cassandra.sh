#!/usr/bin/env bash
# A throwaway single-node Apache Cassandra 5.0 on 127.0.0.1 for the tests and benchmarks, run from
# the jars of Maven Central (pom.xml; fetched into lib/ by `mvn dependency:copy-dependencies`, see
# scripts/test.sh) on Java 17: data, commit log and logs in DIR, CQL on PORT, internode traffic on
# STORAGE_PORT. Starts it in the background and prints the JVM's PID; readiness is the CQL port
# accepting connections (about 10 s). Stop: kill PID (SIGTERM; it flushes and exits in seconds).
# usage: start_cassandra.sh DIR PORT STORAGE_PORT [HEAP]        e.g. HEAP=512M
# JMX_PORT=N: JMX on 127.0.0.1:N (the benchmarks read the server's ClientRequest metrics there).
# A node of a cluster on one machine: ADDRESS=127.0.0.2 SEED=127.0.0.1 start_cassandra.sh ... (every
# node on its own loopback address, the same ports; the seed started first). TLS: below.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
DIR=$(mkdir -p "$1" && cd "$1" && pwd)
PORT=$2
STORAGE_PORT=$3
HEAP=${4:-512M}
[ -d "$HERE/lib" ] || { echo "no $HERE/lib: run mvn -B -q dependency:copy-dependencies -DoutputDirectory=lib -DincludeScope=runtime in $HERE" >&2; exit 1; }
ADDRESS=${ADDRESS:-127.0.0.1}
SEED=${SEED:-$ADDRESS}
sed -e "s#DATA/#$DIR/#g" -e "s#^listen_address: .*#listen_address: $ADDRESS#" -e "s#^rpc_address: .*#rpc_address: $ADDRESS#" -e "s#^native_transport_port: .*#native_transport_port: $PORT#" \
    -e "s#^storage_port: .*#storage_port: $STORAGE_PORT#" -e "s#127.0.0.1:7000#$SEED:$STORAGE_PORT#" \
    "$HERE/conf/cassandra.yaml" > "$DIR/cassandra.yaml"
# TLS_PEM=FILE (a private key and its certificate chain, PEM): clients may speak TLS on the CQL
# port, or not (optional: true), as a cluster moving to TLS accepts both.
if [ -n "${TLS_PEM:-}" ]; then
    cat >> "$DIR/cassandra.yaml" <<YAML
client_encryption_options:
  enabled: true
  optional: true
  ssl_context_factory:
    class_name: org.apache.cassandra.security.PEMBasedSslContextFactory
  keystore: $TLS_PEM
YAML
fi
# The JVM options of Cassandra 5.0's own conf/jvm17-server.options, which Java 17 needs.
OPENS=(java.base/java.lang.module java.base/jdk.internal.loader java.base/jdk.internal.ref
       java.base/jdk.internal.reflect java.base/jdk.internal.math java.base/jdk.internal.module
       java.base/jdk.internal.util.jar jdk.management/com.sun.management.internal java.base/sun.nio.ch
       java.base/java.io java.base/java.lang.reflect jdk.compiler/com.sun.tools.javac java.base/java.lang
       java.base/java.util)
EXPORTS=(java.base/jdk.internal.misc java.management.rmi/com.sun.jmx.remote.internal.rmi
         java.rmi/sun.rmi.registry java.rmi/sun.rmi.server java.sql/java.sql java.base/java.lang.ref
         jdk.unsupported/sun.misc jdk.compiler/com.sun.tools.javac.file jdk.attach/sun.tools.attach)
flags=()
[ -z "${JMX_PORT:-}" ] || flags+=("-Dcassandra.jmx.local.port=$JMX_PORT")
for m in "${OPENS[@]}"; do flags+=(--add-opens "$m=ALL-UNNAMED"); done
for m in "${EXPORTS[@]}"; do flags+=(--add-exports "$m=ALL-UNNAMED"); done
nohup java "-Xms$HEAP" "-Xmx$HEAP" -Xss256k -XX:+UseG1GC -XX:+ParallelRefProcEnabled \
    -XX:MaxTenuringThreshold=1 -XX:G1HeapRegionSize=16m -Djdk.attach.allowAttachSelf=true "${flags[@]}" \
    -Dio.netty.tryReflectionSetAccessible=true -Dio.netty.allocator.useCacheForAllThreads=true \
    -Dio.netty.allocator.maxOrder=11 -Dcassandra-foreground=yes \
    "-Dcassandra.config=file://$DIR/cassandra.yaml" "-Dlogback.configurationFile=$HERE/conf/logback.xml" \
    "-Dcassandra.logdir=$DIR/logs" "-Dcassandra.storagedir=$DIR" \
    -Dcassandra.skip_wait_for_gossip_to_settle=0 -Dcassandra.ring_delay_ms=100 \
    -Dcassandra.superuser_setup_delay_ms=0 -cp "$HERE/lib/*" \
    org.apache.cassandra.service.CassandraDaemon > "$DIR/server.log" 2>&1 < /dev/null &
echo $!
