"""Seed 002 on a real Apache Cassandra: writes the store makes visible later, read back until
they are, with the time to consistency measured instead of a sleep(500).

Each user subscribes a source, then reads it from a materialized view (which Cassandra updates
asynchronously, after the base table) until the view agrees; then it deletes the subscription
with an asynchronous write (a driver's executeAsync: the user goes on at once, the delete is
still timed and counted) and reads the base table until the row is gone. Each `eventually` is one
outcome in its group, whose duration is the time to consistency.

    horde run examples/cassandra_eventually.py -D cluster=127.0.0.1:9042 -D users=20

Needs materialized views on (`materialized_views_enabled: true` in cassandra.yaml; the tests'
server has it). In summary.json: groups[] "view agrees" and "gone" (`duration`, `attempts`),
the rows "subscribe", "by source?", "unsubscribe" and "gone?".
"""

from horde import at_once_users, column, cql, param, row_count, scenario, setup

cluster = param("cluster", "127.0.0.1:9042")
users = param("users", 10)

schema = scenario("schema").exec(
    cql("keyspace").execute("CREATE KEYSPACE IF NOT EXISTS seed002 WITH replication = "
                            "{'class': 'SimpleStrategy', 'replication_factor': 1}"),
    cql("table").execute("CREATE TABLE IF NOT EXISTS seed002.subscriptions "
                         "(user_id int, source text, since timestamp, PRIMARY KEY (user_id, source))"),
    cql("view").execute("CREATE MATERIALIZED VIEW IF NOT EXISTS seed002.subscriptions_by_source AS "
                        "SELECT source, user_id, since FROM seed002.subscriptions "
                        "WHERE source IS NOT NULL AND user_id IS NOT NULL PRIMARY KEY (source, user_id)"),
)

by_source = "SELECT user_id FROM seed002.subscriptions_by_source WHERE source = ?"
mine = "SELECT source FROM seed002.subscriptions WHERE user_id = ?"

subscribers = (scenario("subscribers")
    .exec(cql("subscribe").execute("INSERT INTO seed002.subscriptions (user_id, source, since) VALUES (?, ?, ?)",
                                   params=["${__user_id}", "feed-${__user_id}", "${__now_ms()}"]).consistency("quorum"))
    .eventually(cql("by source?").query(by_source, params=["feed-${__user_id}"])
                .check(row_count().is_(1), column("user_id").find(0).is_("${__user_id}")),
                timeout=10, pause=0.02, name="view agrees")
    .exec(cql("unsubscribe").execute_async("DELETE FROM seed002.subscriptions WHERE user_id = ?",
                                           params=["${__user_id}"]))
    .eventually(cql("gone?").query(mine, params=["${__user_id}"]).check(row_count().is_(0)),
                timeout=10, pause=0.02, name="gone"))

setup(schema.inject(at_once_users(1)).and_then(subscribers.inject(at_once_users(users))),
      protocol=[cql.cluster(cluster)], max_duration=120)
