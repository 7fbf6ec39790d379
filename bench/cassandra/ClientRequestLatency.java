// Cassandra's own record of client request latency, read over JMX from a node started with
// JMX_PORT (scripts/cassandra/start_cassandra.sh), printed as one JSON object:
//   {"Read": {"count": N, "total_us": T, "unit": "microseconds", "buckets": [...]}, ...,
//    "Queued": {...}, "offsets": [...]}
// per request kind of the coordinator's ClientRequest metrics (what `nodetool proxyhistograms`
// shows): the timer's count, the TotalLatency counter (microseconds: an exact mean between two
// readings) and the histogram's cumulative bucket counts, with the reservoir's bucket offsets.
// The difference of two readings is the server's view of what happened between them.
//
//   java -cp 'scripts/cassandra/lib/*' bench/cassandra/ClientRequestLatency.java JMX_PORT
import java.util.StringJoiner;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;
import org.apache.cassandra.metrics.DecayingEstimatedHistogramReservoir;

public class ClientRequestLatency {
    private static final String[] KINDS = {"Read", "Write", "RangeSlice"};

    public static void main(String[] args) throws Exception {
        JMXServiceURL url = new JMXServiceURL("service:jmx:rmi:///jndi/rmi://127.0.0.1:" + args[0] + "/jmxrmi");
        try (JMXConnector connector = JMXConnectorFactory.connect(url)) {
            MBeanServerConnection server = connector.getMBeanServerConnection();
            StringJoiner out = new StringJoiner(", ", "{", "}");
            for (String kind : KINDS) {
                ObjectName latency = name(kind, "Latency");
                long count = (Long) server.getAttribute(latency, "Count");
                String unit = (String) server.getAttribute(latency, "DurationUnit");
                long[] buckets = (long[]) server.invoke(latency, "values", null, null);
                long total = (Long) server.getAttribute(name(kind, "TotalLatency"), "Count");
                out.add("\"" + kind + "\": {\"count\": " + count + ", \"total_us\": " + total + ", \"unit\": \""
                        + unit + "\", \"buckets\": " + array(buckets) + "}");
            }
            // The time requests waited in the native transport's queue before the coordinator
            // started (and its ClientRequest timer with it): no total, a mean to the bucket.
            ObjectName queued = new ObjectName("org.apache.cassandra.metrics:type=Client,name=Queued");
            out.add("\"Queued\": {\"count\": " + server.getAttribute(queued, "Count") + ", \"unit\": \""
                    + server.getAttribute(queued, "DurationUnit") + "\", \"buckets\": "
                    + array((long[]) server.invoke(queued, "values", null, null)) + "}");
            out.add("\"offsets\": " + array(DecayingEstimatedHistogramReservoir.DEFAULT_WITHOUT_ZERO_BUCKET_OFFSETS));
            System.out.println(out);
        }
    }

    private static ObjectName name(String kind, String metric) throws Exception {
        return new ObjectName("org.apache.cassandra.metrics:type=ClientRequest,scope=" + kind + ",name=" + metric);
    }

    private static String array(long[] values) {
        StringJoiner joined = new StringJoiner(", ", "[", "]");
        for (long value : values) {
            joined.add(Long.toString(value));
        }
        return joined.toString();
    }
}
