"""YCSB's workload B (95 % reads, 5 % updates, zipfian keys) as a step of a simulation of your own:
``cql.ycsb("b", record_count=...)`` is one operation on the cluster's ``usertable``, which
``horde cql --phase load`` made and filled. Your loop and injection decide the load; each
operation is a row of its own (``READ``, ``UPDATE``), as in ``horde cql``'s results.

    horde cql 127.0.0.1:9042 --phase load --keyspace ycsb --records 100000
    horde run examples/ycsb_in_a_scenario.py -D cluster=127.0.0.1:9042 -D records=100000
"""

from horde import at_once_users, cql, param, scenario, setup

cluster = cql.cluster(param("cluster", "127.0.0.1:9042"), keyspace=param("keyspace", "ycsb"))
records = int(param("records", 100_000))

store = scenario("workload b").repeat(
    int(param("operations_per_user", 250)),
    cql.ycsb("b", record_count=records, consistency="quorum"),
)

setup(store.inject(at_once_users(int(param("users", 4)))), protocol=[cluster], max_duration=60)
