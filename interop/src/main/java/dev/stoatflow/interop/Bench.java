package dev.stoatflow.interop;

import java.time.Duration;
import java.util.List;

import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.EmitStrategy;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.StreamJoined;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.WindowedSerdes;

/**
 * The throughput topologies of stoatctl's comparison harness
 * (internal/benchcompare), the mirrors of its Go builders: the same
 * operations over String keys and byte-array values, so that neither side
 * pays for a serde the other skips. Topic names carry a prefix, so that
 * runs on one broker do not share topics: PREFIX-in (PREFIX-left and
 * PREFIX-right for the join) and PREFIX-out.
 */
final class Bench {
    private Bench() {}

    static final String PREFIX = "bench-";

    /** The tumbling window of the windowed counts: one minute, no grace. */
    static final Duration WINDOW = Duration.ofMinutes(1);

    /** The join window: records of a key within a second of each other. */
    static final Duration JOIN_WINDOW = Duration.ofSeconds(1);

    private static final Serde<String> STRING = Serdes.String();
    private static final Serde<byte[]> BYTES = Serdes.ByteArray();

    /** The spec of bench topology name (e.g. "bench-count") over topics prefix-*, or null. */
    static Topologies.Spec spec(String name, String prefix) {
        String in = prefix + "-in", out = prefix + "-out";
        Serde<?> windowed = WindowedSerdes.timeWindowedSerdeFrom(String.class, WINDOW.toMillis());
        switch (name) {
            case "bench-map":
                return new Topologies.Spec(name, () -> map(in, out), List.of(in),
                        List.of(new Topologies.Sink(out, STRING, BYTES)));
            case "bench-count":
                return new Topologies.Spec(name, () -> count(in, out), List.of(in),
                        List.of(new Topologies.Sink(out, STRING, Serdes.Long())));
            case "bench-count-store":
                return new Topologies.Spec(name, () -> countStore(in), List.of(in), List.of());
            case "bench-window-update":
                return new Topologies.Spec(name, () -> windowCount(in, out, false), List.of(in),
                        List.of(new Topologies.Sink(out, windowed, Serdes.Long())));
            case "bench-window-close":
                return new Topologies.Spec(name, () -> windowCount(in, out, true), List.of(in),
                        List.of(new Topologies.Sink(out, windowed, Serdes.Long())));
            case "bench-join": {
                String left = prefix + "-left", right = prefix + "-right";
                return new Topologies.Spec(name, () -> join(left, right, out), List.of(left, right),
                        List.of(new Topologies.Sink(out, STRING, BYTES)));
            }
            default:
                return null;
        }
    }

    /** ASCII upper-case, byte by byte: what Go's bytes.ToUpper does to the harness's values. */
    static byte[] upper(byte[] v) {
        if (v == null) {
            return null;
        }
        byte[] u = new byte[v.length];
        for (int i = 0; i < v.length; i++) {
            byte c = v[i];
            u[i] = c >= 'a' && c <= 'z' ? (byte) (c - 32) : c;
        }
        return u;
    }

    private static Topology map(String in, String out) {
        StreamsBuilder b = new StreamsBuilder();
        b.stream(in, Consumed.with(STRING, BYTES))
                .mapValues(Bench::upper)
                .to(out, Produced.with(STRING, BYTES));
        return b.build();
    }

    private static Topology count(String in, String out) {
        StreamsBuilder b = new StreamsBuilder();
        b.stream(in, Consumed.with(STRING, BYTES))
                .groupByKey(Grouped.with(STRING, BYTES))
                .count(Materialized.as("counts"))
                .toStream()
                .to(out, Produced.with(STRING, Serdes.Long()));
        return b.build();
    }

    /** The count into its changelogged store alone: no output topic. */
    private static Topology countStore(String in) {
        StreamsBuilder b = new StreamsBuilder();
        b.stream(in, Consumed.with(STRING, BYTES))
                .groupByKey(Grouped.with(STRING, BYTES))
                .count(Materialized.as("counts"));
        return b.build();
    }

    private static Topology windowCount(String in, String out, boolean onClose) {
        StreamsBuilder b = new StreamsBuilder();
        var windowed = b.stream(in, Consumed.with(STRING, BYTES))
                .groupByKey(Grouped.with(STRING, BYTES))
                .windowedBy(TimeWindows.ofSizeWithNoGrace(WINDOW));
        if (onClose) {
            windowed = windowed.emitStrategy(EmitStrategy.onWindowClose());
        }
        windowed.count(Materialized.as("win"))
                .toStream()
                .to(out, Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, WINDOW.toMillis()),
                        Serdes.Long()));
        return b.build();
    }

    private static Topology join(String left, String right, String out) {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, byte[]> l = b.stream(left, Consumed.with(STRING, BYTES));
        KStream<String, byte[]> r = b.stream(right, Consumed.with(STRING, BYTES));
        l.join(r, Bench::concat, JoinWindows.ofTimeDifferenceWithNoGrace(JOIN_WINDOW),
                        StreamJoined.with(STRING, BYTES, BYTES))
                .to(out, Produced.with(STRING, BYTES));
        return b.build();
    }

    /** The join's value: the left value, '+', the right value. */
    static byte[] concat(byte[] l, byte[] r) {
        byte[] v = new byte[l.length + 1 + r.length];
        System.arraycopy(l, 0, v, 0, l.length);
        v[l.length] = '+';
        System.arraycopy(r, 0, v, l.length + 1, r.length);
        return v;
    }
}
