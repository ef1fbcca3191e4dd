package dev.stoatflow.interop;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.apache.kafka.streams.test.TestRecord;

/**
 * Command line for stoatctl's interop tests: runs the named Kafka Streams
 * topologies of {@link Topologies} against a broker or under
 * TopologyTestDriver, and produces JSON Lines files to a broker.
 *
 * <p>Exit codes: 0 done, 1 failed (Kafka Streams error, I/O, bad input),
 * 2 usage error, 3 {@code run --until-consumed} timed out.
 */
public final class Runner {
    private Runner() {}

    /**
     * Kafka Streams' internal setting (StreamsConfig.InternalConfig) for how
     * often, in wall-clock milliseconds, a windowed aggregation emitting on
     * window close looks for closed windows: at most once a second by
     * default, however far stream time moved. When a burst of input is
     * processed in under a second, windows that closed after the first look
     * wait for a record that comes a second later, which a finite test input
     * may never have. The differential tests set it to 0.
     */
    static final String EMIT_INTERVAL_CONFIG = "__emit.interval.ms.kstreams.windowed.aggregation__";

    /**
     * The same for a left or outer stream-stream join's null-joins
     * (StreamsConfig.InternalConfig.EMIT_INTERVAL_MS_KSTREAMS_OUTER_JOIN_SPURIOUS_RESULTS_FIX):
     * it looks for unmatched records whose window closed at most once a
     * second, on a record at stream time. --emit-interval-ms sets both.
     */
    static final String OUTER_JOIN_EMIT_INTERVAL_CONFIG = "__emit.interval.ms.kstreams.outer.join.spurious.results.fix__";

    static final int EXIT_OK = 0;
    static final int EXIT_FAILED = 1;
    static final int EXIT_USAGE = 2;
    static final int EXIT_TIMEOUT = 3;

    private static final String USAGE = """
            usage:
              Runner list
              Runner describe --topology NAME
              Runner run --topology NAME --application-id ID --bootstrap-servers HOST:PORT --state-dir DIR
                         [--processing-guarantee exactly_once_v2|at_least_once] [--threads N]
                         [--cache-max-bytes N] [--commit-interval-ms N] [--emit-interval-ms N]
                         [--until-consumed] [--timeout-ms N] [--topic-prefix P]
              Runner driver --topology NAME --input FILE.jsonl [--output FILE]
              Runner produce --bootstrap-servers HOST:PORT --input FILE.jsonl [--partitions N]
              Runner create-topics --bootstrap-servers HOST:PORT --topology NAME [--partitions N]
            """;

    /** A command line mistake: reported with the usage, exit 2. */
    static final class UsageError extends Exception {
        UsageError(String message) {
            super(message);
        }
    }

    // The exit status main settles on, and a latch it opens once it has; the
    // shutdown hook of "run" waits for both (see there).
    private static volatile int exitStatus = EXIT_OK;
    private static final CountDownLatch SETTLED = new CountDownLatch(1);

    public static void main(String[] argv) {
        int code;
        try {
            code = dispatch(argv);
        } catch (UsageError e) {
            System.err.println("error: " + e.getMessage());
            System.err.print(USAGE);
            code = EXIT_USAGE;
        } catch (JsonLines.BadInput e) {
            System.err.println("error: " + e.getMessage());
            code = EXIT_FAILED;
        } catch (NoSuchFileException e) {
            System.err.println("error: no such file: " + e.getFile());
            code = EXIT_FAILED;
        } catch (Exception e) {
            System.err.println("error: " + e);
            e.printStackTrace();
            code = EXIT_FAILED;
        }
        System.out.flush();
        exitStatus = code;
        SETTLED.countDown();
        System.exit(code);
    }

    private static int dispatch(String[] argv) throws Exception {
        if (argv.length == 0) {
            throw new UsageError("missing subcommand");
        }
        String cmd = argv[0];
        String[] rest = java.util.Arrays.copyOfRange(argv, 1, argv.length);
        switch (cmd) {
            case "list":
                Args.parse(rest, Set.of(), Set.of());
                return list();
            case "describe": {
                Args a = Args.parse(rest, Set.of("--topology"), Set.of());
                System.out.print(spec(a).build().get().describe());
                return EXIT_OK;
            }
            case "run":
                return run(Args.parse(rest, Set.of("--topology", "--application-id", "--bootstrap-servers",
                        "--state-dir", "--processing-guarantee", "--threads", "--cache-max-bytes",
                        "--commit-interval-ms", "--emit-interval-ms", "--timeout-ms", "--session-timeout-ms", "--topic-prefix"),
                        Set.of("--until-consumed")));
            case "driver":
                return driver(Args.parse(rest, Set.of("--topology", "--input", "--output"), Set.of()));
            case "produce":
                return produce(Args.parse(rest, Set.of("--bootstrap-servers", "--input", "--partitions"), Set.of()));
            case "create-topics": {
                Args a = Args.parse(rest, Set.of("--bootstrap-servers", "--topology", "--partitions"), Set.of());
                Topologies.Spec spec = spec(a);
                Set<String> topics = new LinkedHashSet<>(spec.sources());
                spec.sinks().forEach(s -> topics.add(s.topic()));
                createMissing(a.required("--bootstrap-servers"), topics, partitions(a));
                return EXIT_OK;
            }
            case "-h":
            case "--help":
            case "help":
                System.out.print(USAGE);
                return EXIT_OK;
            default:
                throw new UsageError("unknown subcommand " + cmd);
        }
    }

    private static Topologies.Spec spec(Args a) throws UsageError {
        String name = a.required("--topology");
        // The comparison harness's topologies (Bench) read and write topics
        // named after --topic-prefix, so that its runs can share a broker.
        if (name.startsWith(Bench.PREFIX)) {
            Topologies.Spec bench = Bench.spec(name, a.get("--topic-prefix", "bench"));
            if (bench == null) {
                throw new UsageError("unknown bench topology " + name
                        + " (known: bench-map, bench-count, bench-window-update, bench-window-close, bench-join)");
            }
            return bench;
        }
        if (a.has("--topic-prefix")) {
            throw new UsageError("--topic-prefix applies to the bench-* topologies only");
        }
        Topologies.Spec spec = Topologies.get(name);
        if (spec == null) {
            throw new UsageError("unknown topology " + name + " (known: "
                    + Topologies.all().stream().map(Topologies.Spec::name).collect(Collectors.joining(", ")) + ")");
        }
        return spec;
    }

    // --- list -------------------------------------------------------------

    private static int list() {
        for (Topologies.Spec s : Topologies.all()) {
            System.out.printf("%s sources=%s sinks=%s%n", s.name(), String.join(",", s.sources()),
                    s.sinks().stream().map(Topologies.Sink::topic).collect(Collectors.joining(",")));
        }
        return EXIT_OK;
    }

    // --- run ----------------------------------------------------------------

    private static int run(Args a) throws Exception {
        Topologies.Spec spec = spec(a);
        String appId = a.required("--application-id");
        String bootstrap = a.required("--bootstrap-servers");
        String guarantee = a.get("--processing-guarantee", StreamsConfig.EXACTLY_ONCE_V2);
        if (!guarantee.equals(StreamsConfig.EXACTLY_ONCE_V2) && !guarantee.equals(StreamsConfig.AT_LEAST_ONCE)) {
            throw new UsageError("--processing-guarantee must be exactly_once_v2 or at_least_once");
        }
        boolean untilConsumed = a.flag("--until-consumed");
        long timeoutMs = a.getLong("--timeout-ms", 120_000L);

        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(StreamsConfig.STATE_DIR_CONFIG, a.required("--state-dir"));
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, guarantee);
        long threads = a.getLong("--threads", 1L);
        if (threads < 1) {
            throw new UsageError("--threads must be at least 1");
        }
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, (int) threads);
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        p.put(StreamsConfig.NUM_STANDBY_REPLICAS_CONFIG, 0);
        // Unless given, cache size and commit interval keep Kafka Streams' defaults.
        if (a.has("--cache-max-bytes")) {
            p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, a.getLong("--cache-max-bytes", 0L));
        }
        if (a.has("--commit-interval-ms")) {
            p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, a.getLong("--commit-interval-ms", 0L));
        }
        if (a.has("--emit-interval-ms")) {
            p.put(EMIT_INTERVAL_CONFIG, a.getLong("--emit-interval-ms", 0L));
            p.put(OUTER_JOIN_EMIT_INTERVAL_CONFIG, a.getLong("--emit-interval-ms", 0L));
        }
        // Kafka Streams does not leave its group when it closes, so the next
        // owner of its partitions waits out this timeout (a cutover test
        // does, once per stop); the broker's minimum is 6000.
        if (a.has("--session-timeout-ms")) {
            p.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), (int) a.getLong("--session-timeout-ms", 45_000L));
        }

        // Kafka Streams creates its internal topics but not its sinks; with a
        // sink missing (and auto-creation off) its producer blocks for a
        // minute, then the task is retried forever. Fail fast instead.
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            Set<String> missing = new TreeSet<>();
            spec.sinks().forEach(s -> missing.add(s.topic()));
            missing.removeAll(admin.listTopics().names().get());
            if (!missing.isEmpty()) {
                System.err.println("error: sink topics missing: " + String.join(", ", missing)
                        + " (create them, e.g. with Runner create-topics)");
                return EXIT_FAILED;
            }
        }

        KafkaStreams streams = new KafkaStreams(spec.build().get(), p);
        CountDownLatch stop = new CountDownLatch(1);
        AtomicInteger exitCode = new AtomicInteger(EXIT_OK);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        AtomicBoolean announced = new AtomicBoolean();

        streams.setStateListener((now, before) -> {
            System.err.println("state: " + before + " -> " + now);
            if (now == KafkaStreams.State.RUNNING && announced.compareAndSet(false, true)) {
                System.out.println("RUNNING");
                System.out.flush();
            }
            if (now == KafkaStreams.State.ERROR) {
                stop.countDown();
            }
        });
        streams.setUncaughtExceptionHandler(e -> {
            System.err.println("error: Kafka Streams failed: " + e);
            e.printStackTrace();
            failure.compareAndSet(null, e);
            stop.countDown();
            return StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });

        // On SIGTERM/SIGINT the JVM runs this hook; it wakes the main thread,
        // waits until that has closed Kafka Streams and settled on an exit
        // status, then halts with it (a plain signal exit would report 143 or
        // 130). System.exit from main runs the hook too, to the same effect.
        // log4j2.xml disables log4j's own hook, which halt would cut short.
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stop.countDown();
            try {
                SETTLED.await();
            } catch (InterruptedException ignored) {
                // halt anyway
            }
            System.out.flush();
            Runtime.getRuntime().halt(exitStatus);
        }, "runner-shutdown"));

        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        // Short Admin timeouts, so that a poll cannot overrun --timeout-ms by much.
        Map<String, Object> pollerConfig = Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 5_000,
                AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 5_000);
        try (Admin admin = untilConsumed ? Admin.create(pollerConfig) : null) {
            streams.start();
            if (!untilConsumed) {
                stop.await();
            } else {
                List<String> behind = List.of("(not checked yet)");
                int caughtUpPolls = 0;
                while (!stop.await(250, TimeUnit.MILLISECONDS)) {
                    if (System.nanoTime() - deadline >= 0) {
                        System.err.printf("error: not consumed within %d ms; behind:%n", timeoutMs);
                        behind.forEach(b -> System.err.println("  " + b));
                        exitCode.set(EXIT_TIMEOUT);
                        break;
                    }
                    behind = behind(admin, appId, spec.sources());
                    boolean running = streams.state() == KafkaStreams.State.RUNNING;
                    caughtUpPolls = behind.isEmpty() && running ? caughtUpPolls + 1 : 0;
                    if (caughtUpPolls >= 2) {
                        System.out.println("CONSUMED");
                        System.out.flush();
                        break;
                    }
                }
            }
        } finally {
            if (failure.get() != null || streams.state() == KafkaStreams.State.ERROR) {
                exitCode.set(EXIT_FAILED);
            }
            if (!streams.close(Duration.ofSeconds(30))) {
                System.err.println("error: Kafka Streams did not close within 30 s");
                exitCode.set(EXIT_FAILED);
            }
            if (failure.get() != null && exitCode.get() == EXIT_OK) {
                exitCode.set(EXIT_FAILED); // failed while closing
            }
        }
        return exitCode.get();
    }

    /**
     * The partitions that the application's group has not committed up to
     * their end offset, as "topic partition committed end" lines; empty when
     * all are. Looks at every partition of the source topics and of the
     * application's repartition topics ("ID-...-repartition").
     *
     * <p>Under exactly-once the repartition topics are written in
     * transactions, so their last entry is usually a commit marker, which the
     * end offset counts but no consumer ever returns. Kafka Streams still
     * commits past it: once it has processed a task's buffered records it
     * commits the consumer's position rather than last offset + 1, and it
     * counts a position that moved over markers alone as a reason to commit
     * (StreamTask.findOffset and commitNeeded). So committed == end is
     * reached, a commit interval after the marker is fetched, and the check
     * stays a plain committed >= end (verified against a 4.4 broker).
     */
    static List<String> behind(Admin admin, String appId, List<String> sources) {
        try {
            Set<String> topics = new TreeSet<>(sources);
            for (String t : admin.listTopics().names().get()) {
                if (t.startsWith(appId + "-") && t.endsWith("-repartition")) {
                    topics.add(t);
                }
            }
            Map<TopicPartition, OffsetSpec> want = new HashMap<>();
            Map<TopicPartition, OffsetSpec> first = new HashMap<>();
            for (TopicDescription d : admin.describeTopics(topics).allTopicNames().get().values()) {
                d.partitions().forEach(tp -> {
                    want.put(new TopicPartition(d.name(), tp.partition()), OffsetSpec.latest());
                    first.put(new TopicPartition(d.name(), tp.partition()), OffsetSpec.earliest());
                });
            }
            var ends = admin.listOffsets(want).all().get();
            var starts = admin.listOffsets(first).all().get();
            Map<TopicPartition, OffsetAndMetadata> committed =
                    admin.listConsumerGroupOffsets(appId).partitionsToOffsetAndMetadata().get();
            List<String> behind = new ArrayList<>();
            want.keySet().stream()
                    .sorted(Comparator.comparing(TopicPartition::topic).thenComparing(TopicPartition::partition))
                    .forEach(tp -> {
                        long end = ends.get(tp).offset();
                        OffsetAndMetadata c = committed.get(tp);
                        // Kafka Streams commits only partitions it has read
                        // from, so a partition without a commit counts as
                        // consumed when it holds nothing: empty, or emptied
                        // by retention or deleteRecords (start == end).
                        boolean consumed = c == null ? starts.get(tp).offset() >= end : c.offset() >= end;
                        if (!consumed) {
                            behind.add(String.format("topic=%s partition=%d committed=%s end=%d",
                                    tp.topic(), tp.partition(), c == null ? "none" : c.offset(), end));
                        }
                    });
            return behind;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return List.of("(interrupted)");
        } catch (Exception e) {
            // E.g. a source topic that does not exist yet: not consumed, try again.
            return List.of("(could not read offsets: " + e.getMessage() + ")");
        }
    }

    // --- driver -------------------------------------------------------------

    private static int driver(Args a) throws Exception {
        Topologies.Spec spec = spec(a);
        Path input = Path.of(a.required("--input"));
        List<JsonLines.Input> records = JsonLines.read(input);
        for (JsonLines.Input r : records) {
            if (!spec.sources().contains(r.topic())) {
                throw new JsonLines.BadInput(r.where() + ": topology " + spec.name() + " does not read topic \""
                        + r.topic() + "\" (it reads " + String.join(", ", spec.sources()) + ")");
            }
        }

        // A state directory of its own, removed afterwards: the stores are RocksDB.
        Path stateDir = Files.createTempDirectory("stoat-interop-driver-");
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, "driver-" + spec.name());
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "dummy:9092");
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        // No caching: every update reaches the sinks, as the tests expect.
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0L);
        // No wall-clock throttle on emit-on-close: what is emitted must not
        // depend on how fast the records were piped.
        p.put(EMIT_INTERVAL_CONFIG, 0L);
        p.put(OUTER_JOIN_EMIT_INTERVAL_CONFIG, 0L);

        List<String> lines = new ArrayList<>();
        try (TopologyTestDriver d = new TopologyTestDriver(spec.build().get(), p)) {
            Map<String, TestInputTopic<String, String>> in = new HashMap<>();
            for (String t : spec.sources()) {
                in.put(t, d.createInputTopic(t, new StringSerializer(), new StringSerializer()));
            }
            for (JsonLines.Input r : records) {
                in.get(r.topic()).pipeInput(r.key(), r.value(), r.timestamp());
            }
            List<Topologies.Sink> sinks = new ArrayList<>(spec.sinks());
            sinks.sort(Comparator.comparing(Topologies.Sink::topic));
            for (Topologies.Sink s : sinks) {
                TestOutputTopic<?, ?> out = d.createOutputTopic(s.topic(), s.keySerde().deserializer(),
                        (Deserializer<?>) s.valueSerde().deserializer());
                for (TestRecord<?, ?> r : out.readRecordsToList()) {
                    lines.add(JsonLines.output(s.topic(), r.key(), r.value(), r.timestamp()));
                }
            }
        } finally {
            deleteTree(stateDir);
        }

        String text = lines.stream().map(l -> l + "\n").collect(Collectors.joining());
        if (a.has("--output")) {
            Files.writeString(Path.of(a.get("--output", null)), text, StandardCharsets.UTF_8);
        } else {
            PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
            out.print(text);
            out.flush();
        }
        return EXIT_OK;
    }

    private static void deleteTree(Path root) throws IOException {
        if (!Files.exists(root)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(root)) {
            for (Path path : paths.sorted(Comparator.reverseOrder()).collect(Collectors.toList())) {
                Files.deleteIfExists(path);
            }
        }
    }

    // --- produce ------------------------------------------------------------

    private static int produce(Args a) throws Exception {
        String bootstrap = a.required("--bootstrap-servers");
        List<JsonLines.Input> records = JsonLines.read(Path.of(a.required("--input")));
        int partitions = partitions(a);
        Set<String> topics = new LinkedHashSet<>();
        records.forEach(r -> topics.add(r.topic()));
        createMissing(bootstrap, topics, partitions);

        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        List<Future<RecordMetadata>> sent = new ArrayList<>();
        try (KafkaProducer<String, String> producer =
                     new KafkaProducer<>(p, Serdes.String().serializer(), Serdes.String().serializer())) {
            // In file order; no partition given, so the default partitioner
            // picks it (murmur2 of the key, or sticky for null keys).
            for (JsonLines.Input r : records) {
                sent.add(producer.send(new ProducerRecord<>(r.topic(), null, r.timestamp(), r.key(), r.value())));
            }
            producer.flush();
            for (Future<RecordMetadata> f : sent) {
                f.get(); // throws the first send error
            }
        }
        System.err.printf("produced %d records to %s%n", records.size(), String.join(", ", topics));
        return EXIT_OK;
    }

    private static int partitions(Args a) throws UsageError {
        int n = (int) a.getLong("--partitions", 1L);
        if (n < 1) {
            throw new UsageError("--partitions must be at least 1");
        }
        return n;
    }

    /**
     * Creates those of the topics that do not exist, with the broker's
     * default replication factor and no time retention: the test inputs
     * carry event times from the past (2024), which the broker's default
     * retention (7 days) would delete at its next check.
     */
    private static void createMissing(String bootstrap, Set<String> topics, int partitions) throws Exception {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            Set<String> missing = new LinkedHashSet<>(topics);
            missing.removeAll(admin.listTopics().names().get());
            if (missing.isEmpty()) {
                return;
            }
            List<NewTopic> create = new ArrayList<>();
            missing.forEach(t -> create.add(new NewTopic(t, Optional.of(partitions), Optional.empty())
                    .configs(Map.of(TopicConfig.RETENTION_MS_CONFIG, "-1"))));
            admin.createTopics(create).all().get();
            System.err.println("created topics: " + String.join(", ", missing));
        }
    }

    // --- arguments ----------------------------------------------------------

    /** "--name value", "--name=value" and bare "--flag" arguments, parsed by hand. */
    static final class Args {
        private final Map<String, String> values = new HashMap<>();
        private final Set<String> flags = new HashSet<>();

        static Args parse(String[] argv, Set<String> valued, Set<String> booleans) throws UsageError {
            Args a = new Args();
            for (int i = 0; i < argv.length; i++) {
                String arg = argv[i];
                String name = arg;
                String value = null;
                int eq = arg.indexOf('=');
                if (arg.startsWith("--") && eq > 0) {
                    name = arg.substring(0, eq);
                    value = arg.substring(eq + 1);
                }
                if (booleans.contains(name) && value == null) {
                    a.flags.add(name);
                } else if (valued.contains(name)) {
                    if (value == null) {
                        if (i + 1 >= argv.length) {
                            throw new UsageError(name + " needs a value");
                        }
                        value = argv[++i];
                    }
                    a.values.put(name, value);
                } else {
                    throw new UsageError("unexpected argument " + arg);
                }
            }
            return a;
        }

        boolean has(String name) {
            return values.containsKey(name);
        }

        boolean flag(String name) {
            return flags.contains(name);
        }

        String required(String name) throws UsageError {
            String v = values.get(name);
            if (v == null || v.isEmpty()) {
                throw new UsageError("missing " + name);
            }
            return v;
        }

        String get(String name, String fallback) {
            return values.getOrDefault(name, fallback);
        }

        long getLong(String name, long fallback) throws UsageError {
            String v = values.get(name);
            if (v == null) {
                return fallback;
            }
            try {
                long n = Long.parseLong(v);
                if (n < 0) {
                    throw new NumberFormatException();
                }
                return n;
            } catch (NumberFormatException e) {
                throw new UsageError(name + " must be a non-negative integer, not " + v);
            }
        }
    }
}
