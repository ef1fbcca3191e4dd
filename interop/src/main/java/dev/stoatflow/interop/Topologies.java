package dev.stoatflow.interop;

import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Supplier;
import java.util.stream.Collectors;

import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.EmitStrategy;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.Joined;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.StreamJoined;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.Suppressed.BufferConfig;
import org.apache.kafka.streams.kstream.TableJoined;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.WindowedSerdes;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;

/**
 * The named topologies the runner can run. Topic and store names are fixed:
 * stoatctl's tests compare against them.
 *
 * <p>Every source topic is read with String keys and String values, so the
 * JSON Lines inputs give keys and values as JSON strings. Sinks carry their
 * serdes, which the driver uses to read the output back.
 */
final class Topologies {
    private Topologies() {}

    /** A sink topic and the serdes its records are written with. */
    record Sink(String topic, Serde<?> keySerde, Serde<?> valueSerde) {}

    /** A named topology: how to build it, and the topics it reads and writes. */
    record Spec(String name, Supplier<Topology> build, List<String> sources, List<Sink> sinks) {}

    private static final Serde<String> STRING = Serdes.String();
    private static final Serde<Long> LONG = Serdes.Long();

    private static final Map<String, Spec> ALL = new LinkedHashMap<>();

    static {
        add(new Spec("word-count", Topologies::wordCount,
                List.of("lines"), List.of(new Sink("word-counts", STRING, LONG))));
        add(new Spec("window-close", Topologies::windowClose,
                List.of("clicks"), List.of(new Sink("clicks-per-minute",
                        WindowedSerdes.timeWindowedSerdeFrom(String.class, 60_000L), LONG))));
        add(new Spec("session-count", Topologies::sessionCount,
                List.of("page-views"), List.of(new Sink("session-counts",
                        WindowedSerdes.sessionWindowedSerdeFrom(String.class), LONG))));
        add(new Spec("suppress", Topologies::suppress,
                List.of("logins"), List.of(new Sink("login-counts",
                        WindowedSerdes.timeWindowedSerdeFrom(String.class, 300_000L), LONG))));
        add(new Spec("table", Topologies::table,
                List.of("users"), List.of(new Sink("users-out", STRING, STRING))));
        add(new Spec("stream-table-join", Topologies::streamTableJoin,
                List.of("customers", "orders"), List.of(new Sink("orders-enriched", STRING, STRING))));
        add(new Spec("sliding-close", Topologies::slidingClose,
                List.of("clicks"), List.of(new Sink("clicks-sliding",
                        WindowedSerdes.timeWindowedSerdeFrom(String.class, 60_000L), LONG))));
        add(new Spec("session-close", Topologies::sessionClose,
                List.of("page-views"), List.of(new Sink("session-close-counts",
                        WindowedSerdes.sessionWindowedSerdeFrom(String.class), LONG))));
        add(new Spec("stream-stream-join", () -> streamStreamJoin("join"),
                List.of("orders", "payments"), List.of(new Sink("orders-paid", STRING, STRING))));
        add(new Spec("stream-stream-left-join", () -> streamStreamJoin("left"),
                List.of("orders", "payments"), List.of(new Sink("orders-paid", STRING, STRING))));
        add(new Spec("stream-stream-outer-join", () -> streamStreamJoin("outer"),
                List.of("orders", "payments"), List.of(new Sink("orders-paid", STRING, STRING))));
        add(new Spec("versioned-table-join", Topologies::versionedTableJoin,
                List.of("prices", "orders"), List.of(new Sink("orders-priced", STRING, STRING))));
        add(new Spec("versioned-grace-join", Topologies::versionedGraceJoin,
                List.of("prices", "orders"), List.of(new Sink("orders-priced", STRING, STRING))));
        add(new Spec("fk-join", () -> fkJoin(false),
                List.of("customers", "orders"), List.of(new Sink("order-rows", STRING, STRING))));
        add(new Spec("fk-left-join", () -> fkJoin(true),
                List.of("customers", "orders"), List.of(new Sink("order-rows", STRING, STRING))));
        add(new Spec("processor-store", Topologies::processorStore,
                List.of("amounts"), List.of(new Sink("totals-out", STRING, LONG))));
    }

    private static void add(Spec spec) {
        ALL.put(spec.name(), spec);
    }

    /** All specs, in registration order. */
    static List<Spec> all() {
        return List.copyOf(ALL.values());
    }

    /** The spec named, or null. */
    static Spec get(String name) {
        return ALL.get(name);
    }

    // --- the topologies -------------------------------------------------

    /** Words of a line: lower-cased, split on single spaces, empties dropped. */
    static List<String> words(String line) {
        // A null line has no words (plain Kafka Streams code would throw here;
        // being lenient keeps a tombstone in the input from killing the app).
        if (line == null) {
            return List.of();
        }
        return Arrays.stream(line.toLowerCase(Locale.ROOT).split(" "))
                .filter(w -> !w.isEmpty())
                .collect(Collectors.toList());
    }

    private static Topology wordCount() {
        StreamsBuilder b = new StreamsBuilder();
        b.stream("lines", Consumed.with(STRING, STRING))
                .flatMapValues(Topologies::words)
                .groupBy((k, v) -> v, Grouped.with(STRING, STRING))
                .count(Materialized.as("counts"))
                .toStream()
                .to("word-counts", Produced.with(STRING, LONG));
        return b.build();
    }

    private static Topology windowClose() {
        StreamsBuilder b = new StreamsBuilder();
        // Grouped.with only supplies the serdes (no default serdes are
        // configured); being unnamed, it leaves the generated names alone.
        // Two Kafka Streams behaviours the inputs must allow for: a window is
        // only emitted if some record lands stream time between its close and
        // its store retention (size + grace) after that, else the store has
        // dropped it first (see window-close-jump.jsonl); and with caching on
        // (the default) each task's first close check walks the cache from
        // time 0, which costs seconds for epoch-millisecond timestamps.
        b.stream("clicks", Consumed.with(STRING, STRING))
                .groupBy((k, v) -> v, Grouped.with(STRING, STRING))
                .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMinutes(1), Duration.ofSeconds(10)))
                .emitStrategy(EmitStrategy.onWindowClose())
                .count(Materialized.as("clicks-per-minute-store"))
                .toStream()
                .to("clicks-per-minute",
                        Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 60_000L), LONG));
        return b.build();
    }

    /** Clicks per page in sliding windows of a minute, ten seconds of grace, each emitted once on close. */
    private static Topology slidingClose() {
        StreamsBuilder b = new StreamsBuilder();
        b.stream("clicks", Consumed.with(STRING, STRING))
                .groupBy((k, v) -> v, Grouped.with(STRING, STRING))
                .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofMinutes(1), Duration.ofSeconds(10)))
                .emitStrategy(EmitStrategy.onWindowClose())
                .count(Materialized.as("clicks-sliding-store"))
                .toStream()
                .to("clicks-sliding",
                        Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 60_000L), LONG));
        return b.build();
    }

    /** Page views per user in sessions (30 s gap, 10 s grace), each emitted once on close. */
    private static Topology sessionClose() {
        StreamsBuilder b = new StreamsBuilder();
        b.stream("page-views", Consumed.with(STRING, STRING))
                .groupByKey(Grouped.with(STRING, STRING))
                .windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofSeconds(30), Duration.ofSeconds(10)))
                .emitStrategy(EmitStrategy.onWindowClose())
                .count(Materialized.as("sessions-close-store"))
                .toStream()
                .to("session-close-counts",
                        Produced.with(WindowedSerdes.sessionWindowedSerdeFrom(String.class), LONG));
        return b.build();
    }

    private static Topology sessionCount() {
        StreamsBuilder b = new StreamsBuilder();
        // The retractions of merged sessions reach the sink as null values
        // (tombstones) and are written as such.
        b.stream("page-views", Consumed.with(STRING, STRING))
                .groupByKey(Grouped.with(STRING, STRING))
                .windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofMinutes(5), Duration.ofSeconds(30)))
                .count(Materialized.as("sessions-store"))
                .toStream()
                .to("session-counts",
                        Produced.with(WindowedSerdes.sessionWindowedSerdeFrom(String.class), LONG));
        return b.build();
    }

    private static Topology suppress() {
        StreamsBuilder b = new StreamsBuilder();
        b.stream("logins", Consumed.with(STRING, STRING))
                .groupByKey(Grouped.with(STRING, STRING))
                .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMinutes(5), Duration.ofSeconds(30)))
                .count(Materialized.as("failed-logins"))
                .suppress(Suppressed.untilWindowCloses(BufferConfig.unbounded()))
                .toStream()
                .to("login-counts",
                        Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 300_000L), LONG));
        return b.build();
    }

    private static Topology table() {
        StreamsBuilder b = new StreamsBuilder();
        // Built without topology.optimization, so users-store gets its own
        // changelog topic instead of reusing "users" as its changelog.
        b.table("users", Consumed.with(STRING, STRING), Materialized.as("users-store"))
                .toStream()
                .to("users-out", Produced.with(STRING, STRING));
        return b.build();
    }

    private static Topology streamTableJoin() {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> customers =
                b.table("customers", Consumed.with(STRING, STRING), Materialized.as("customers-store"));
        b.stream("orders", Consumed.with(STRING, STRING))
                .leftJoin(customers, (String item, String name) -> item + "/" + (name == null ? "?" : name))
                .to("orders-enriched", Produced.with(STRING, STRING));
        return b.build();
    }

    /**
     * Orders left-joined with the price their product had at the order's
     * time: prices is a versioned table (an hour of history, KIP-889), so
     * the join reads it as of each order's timestamp (KIP-914); no grace,
     * so no buffer. An order of an unknown product, or of one whose price
     * was deleted by then, gets "?".
     */
    private static Topology versionedTableJoin() {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> prices = b.table("prices", Consumed.with(STRING, STRING),
                Materialized.<String, String>as(Stores.persistentVersionedKeyValueStore("prices-store", Duration.ofHours(1)))
                        .withKeySerde(STRING).withValueSerde(STRING));
        b.stream("orders", Consumed.with(STRING, STRING))
                .leftJoin(prices, (String item, String price) -> item + "@" + (price == null ? "?" : price))
                .to("orders-priced", Produced.with(STRING, STRING));
        return b.build();
    }

    /**
     * versionedTableJoin with a grace period of 5 s (KIP-923): each order
     * waits in the join's buffer until an order 5 s newer arrives, then
     * reads the price valid at its time, a late price update included; an
     * order older than that joins at once.
     */
    private static Topology versionedGraceJoin() {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> prices = b.table("prices", Consumed.with(STRING, STRING),
                Materialized.<String, String>as(Stores.persistentVersionedKeyValueStore("prices-store", Duration.ofHours(1)))
                        .withKeySerde(STRING).withValueSerde(STRING));
        b.stream("orders", Consumed.with(STRING, STRING))
                .leftJoin(prices, (String item, String price) -> item + "@" + (price == null ? "?" : price),
                        Joined.with(STRING, STRING, STRING).withGracePeriod(Duration.ofSeconds(5)))
                .to("orders-priced", Produced.with(STRING, STRING));
        return b.build();
    }

    /**
     * Orders (a table: order id to customer id) joined by foreign key with
     * the customer's name (KTable.join(other, foreignKeyExtractor,
     * joiner), KIP-213), named "oc" (TableJoined.as) so that the
     * subscription store and topics have the mirror's names; the result
     * is kept in "oc-rows". The left join (KTable.leftJoin) gives an
     * order whose customer is not there "?" for the name.
     */
    private static Topology fkJoin(boolean left) {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> orders =
                b.table("orders", Consumed.with(STRING, STRING), Materialized.as("orders-store"));
        KTable<String, String> customers =
                b.table("customers", Consumed.with(STRING, STRING), Materialized.as("customers-store"));
        Materialized<String, String, KeyValueStore<org.apache.kafka.common.utils.Bytes, byte[]>> rows =
                Materialized.<String, String, KeyValueStore<org.apache.kafka.common.utils.Bytes, byte[]>>as("oc-rows")
                        .withKeySerde(STRING).withValueSerde(STRING);
        KTable<String, String> joined = left
                ? orders.leftJoin(customers, (String customer) -> customer,
                        (String customer, String name) -> customer + "/" + (name == null ? "?" : name), TableJoined.as("oc"), rows)
                : orders.join(customers, (String customer) -> customer,
                        (String customer, String name) -> customer + "/" + name, TableJoined.as("oc"), rows);
        joined.toStream().to("order-rows", Produced.with(STRING, STRING));
        return b.build();
    }

    /**
     * Orders joined with their payments within 10 s (grace 5 s): "join",
     * "left" or "outer"; the stores are named "pairs-..."
     * (StreamJoined.withStoreName), so that the mirror's have the same
     * names. A missing side is "null".
     */
    private static Topology streamStreamJoin(String kind) {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> orders = b.stream("orders", Consumed.with(STRING, STRING));
        KStream<String, String> payments = b.stream("payments", Consumed.with(STRING, STRING));
        JoinWindows w = JoinWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(10), Duration.ofSeconds(5));
        StreamJoined<String, String, String> sj = StreamJoined.with(STRING, STRING, STRING).withStoreName("pairs");
        KStream<String, String> paired = switch (kind) {
            case "left" -> orders.leftJoin(payments, (String o, String p) -> o + "+" + (p == null ? "null" : p), w, sj);
            case "outer" -> orders.outerJoin(payments,
                    (String o, String p) -> (o == null ? "null" : o) + "+" + (p == null ? "null" : p), w, sj);
            default -> orders.join(payments, (String o, String p) -> o + "+" + p, w, sj);
        };
        paired.to("orders-paid", Produced.with(STRING, STRING));
        return b.build();
    }

    private static Topology processorStore() {
        Topology t = new Topology();
        t.addSource("amounts-source", STRING.deserializer(), STRING.deserializer(), "amounts");
        t.addProcessor("running-total", RunningTotal::new, "amounts-source");
        t.addStateStore(Stores.keyValueStoreBuilder(
                Stores.persistentKeyValueStore("totals"), Serdes.String(), Serdes.Long()), "running-total");
        t.addSink("totals-sink", "totals-out", STRING.serializer(), LONG.serializer(), "running-total");
        return t;
    }

    /** Adds each amount to its key's total in "totals" and forwards the new total. */
    static final class RunningTotal implements Processor<String, String, String, Long> {
        private ProcessorContext<String, Long> context;
        private KeyValueStore<String, Long> totals;

        @Override
        public void init(ProcessorContext<String, Long> context) {
            this.context = context;
            this.totals = context.getStateStore("totals");
        }

        @Override
        public void process(Record<String, String> record) {
            if (record.key() == null) {
                System.err.println("running-total: skipping a record with a null key");
                return;
            }
            long amount;
            try {
                amount = Long.parseLong(record.value());
            } catch (NumberFormatException e) { // also thrown for a null value
                System.err.printf("running-total: skipping %s=%s: not a decimal integer%n",
                        record.key(), record.value());
                return;
            }
            Long old = totals.get(record.key());
            long total = (old == null ? 0 : old) + amount;
            totals.put(record.key(), total);
            // withValue keeps the key, the input's timestamp and its headers.
            context.forward(record.withValue(total));
        }
    }
}
