package config

import (
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Keys other packages read, named here so that the catalogue can list
// them; the readers keep their own constants (engine.BarrierIntervalMs,
// kafka.ClientID, ...), and a test in cmd holds the two in step.
const (
	keyBarrierIntervalMs     = "stoatflow.commit-barrier.interval-ms"
	keyBarrierIntervalFactor = "stoatflow.commit-barrier.interval-factor"
	keyBarrierMinIntervalMs  = "stoatflow.commit-barrier.min-interval-ms"
	keyBarrierMaxIntervalMs  = "stoatflow.commit-barrier.max-interval-ms"
	keyLaneQueueSize         = "stoatflow.lane.queue-size"
	keyCommitHeldRecords     = "stoatflow.commit.held-records"
	keyChangelogCoalesce     = "stoatflow.changelog.coalesce-bytes"
	keyRestoreChunkRecords   = "stoatflow.restore.chunk-records"
	keyRestoreBatchBytes     = "stoatflow.restore.rocksdb.batch-bytes"
	keyRestoreFetchMaxBytes  = "stoatflow.restore.fetch-max-bytes"
	keyNumStandbyReplicas    = "num.standby.replicas"
	keyStandbyIntervalMs     = "stoatflow.standby.interval-ms"
	keyAcceptableLag         = "acceptable.recovery.lag"
	keyMaxWarmups            = "max.warmup.replicas"
	keyProbingIntervalMs     = "probing.rebalance.interval.ms"
	keyBufferMemory          = "buffer.memory"
	keyCreateTopics          = "stoatflow.topics.create"
	keyShutdownTimeoutMs     = "stoatflow.shutdown.timeout-ms"
	keyClientID              = "client.id"
	keyAutoOffsetReset       = "auto.offset.reset"
	keyInstanceID            = "stoatflow.instance.id"
	keyTransactionTimeoutMs  = "transaction.timeout.ms"
	keyRetryBackoffMs        = "retry.backoff.ms"
	keySessionTimeoutMs      = "session.timeout.ms"
	keyHeartbeatIntervalMs   = "heartbeat.interval.ms"
	keyGroupInstanceID       = "group.instance.id"
	keyMetricsLevel          = "stoatflow.metrics.recording.level"
	keyInfoShowWatermarks    = "runtime.endpoints.info.show-watermarks"
	keyProgressLogMs         = "stoatflow.log.progress-interval-ms"
	keyStallWarningMs        = "stoatflow.log.stall-warning-ms"
	// The schema registry's, as Confluent's serdes name them
	// (engine/serde's SchemaRegistryURL, ...).
	keySchemaRegistryURL      = "schema.registry.url"
	keyBasicAuthSource        = "basic.auth.credentials.source"
	keyBasicAuthUserInfo      = "basic.auth.user.info"
	keyAutoRegisterSchemas    = "auto.register.schemas"
	keyKeySubjectStrategy     = "key.subject.name.strategy"
	keyValueSubjectStrategy   = "value.subject.name.strategy"
	subjectStrategyClassShort = "io.confluent.kafka.serializers.subject."
)

// Type is the kind of value a key takes.
type Type string

const (
	TypeString Type = "string"
	TypeInt    Type = "int"
	TypeFloat  Type = "float"
	TypeBool   Type = "bool"
	// TypeDurationMs is an integer number of milliseconds.
	TypeDurationMs Type = "duration-ms"
	// TypeEnum is one of Key.Values (or one of Key.Aliases).
	TypeEnum Type = "enum"
	// TypeList is a comma-separated list.
	TypeList Type = "list"
)

// Component is a part of stoatctl that reads configuration.
type Component string

const (
	// Core is the processing core: topology build rules, tasks, stores,
	// shared by the test driver and the live engine.
	Core Component = "processing core"
	// LiveEngine is the live engine (stoatctl run, engine.New).
	LiveEngine Component = "live engine"
	// KafkaClient is the engine's Kafka client (franz-go options).
	KafkaClient Component = "Kafka client"
	// TestDriver is the test driver (stoatctl replay, topology try).
	TestDriver Component = "test driver"
)

// Key describes one configuration key.
type Key struct {
	Name string
	Type Type
	// Values are an enum's canonical values; Aliases other spellings
	// accepted for them (Kafka Streams' class names), alias to value.
	Values  []string
	Aliases map[string]string
	// FoldCase makes an enum's values case-insensitive.
	FoldCase bool
	// Min is the least value a number takes, when HasMin.
	Min    float64
	HasMin bool
	// Default is the value in force when the key is not set, as a user
	// reads it ("" for none, or a phrase such as "number of CPUs").
	Default string
	// Lookup says Default is what Config.Lookup returns for the key when
	// unset (it is in Defaults); otherwise the reader applies it.
	Lookup bool
	// Description is one line.
	Description string
	// ReadBy lists the components that read the key.
	ReadBy []Component
	// NoOp says the key is accepted, for Kafka Streams compatibility or
	// ahead of the feature, but has no effect yet; Note says why.
	NoOp bool
	// AliasOf names the key this one is a short name for.
	AliasOf string
	// Note is a longer remark for config describe and the docs.
	Note string
	// Secret says the value is never shown (Redact): a password, a key,
	// credentials.
	Secret bool
	// Clients are the Kafka clients that read the key, which may
	// therefore carry their prefix (producer.compression.type); none for
	// a key no client prefix applies to.
	Clients []Client
	// NotRestoreOrGlobal says the restore and global consumers do not
	// read the key, though other consumers do: they read with fetches of
	// their own (stoatflow.restore.fetch-max-bytes).
	NotRestoreOrGlobal bool
}

var (
	handlerFailAliases = map[string]string{
		"log-and-fail": HandlerFail,
		"org.apache.kafka.streams.errors.LogAndFailExceptionHandler":           HandlerFail,
		"org.apache.kafka.streams.errors.LogAndFailProcessingExceptionHandler": HandlerFail,
	}
	handlerContinueAliases = map[string]string{
		"log-and-continue": HandlerContinue,
		"org.apache.kafka.streams.errors.LogAndContinueExceptionHandler":           HandlerContinue,
		"org.apache.kafka.streams.errors.LogAndContinueProcessingExceptionHandler": HandlerContinue,
	}
)

func join(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		maps.Copy(out, m)
	}
	return out
}

func atLeast(k Key, min float64) Key { k.Min, k.HasMin = min, true; return k }

var verdicts = []string{VerdictOff, VerdictWarn, VerdictError}

var strategies = []string{"TopicNameStrategy", "RecordNameStrategy", "TopicRecordNameStrategy"}

// strategyClasses are Confluent's class names of the strategies.
var strategyClasses = func() map[string]string {
	m := map[string]string{}
	for _, s := range strategies {
		m[subjectStrategyClassShort+s] = s
	}
	return m
}()

// catalogue is every key stoatctl reads, sorted by name: the core's and
// engine's here, the Kafka clients' in catalog_client.go.
var catalogue = sortedKeys(append([]Key{
	{Name: ApplicationID, Type: TypeString, Description: "names the application: the consumer group, the prefix of internal topics and transactional ids",
		ReadBy: []Component{Core, LiveEngine, KafkaClient}, Note: "a topology file sets it with application-id; the test driver uses test-driver when it is missing"},
	{Name: keyAutoOffsetReset, Type: TypeEnum, Values: []string{"earliest", "latest", "none"}, Default: "earliest",
		Description: "where a source partition without a committed offset starts: earliest, latest or none (fail)", ReadBy: []Component{KafkaClient, LiveEngine}},
	{Name: BootstrapServers, Type: TypeList, Description: "the Kafka brokers to connect to, host:port[,host:port...]",
		ReadBy: []Component{LiveEngine, KafkaClient}, Note: "stoatctl run starts an embedded broker when neither this nor -b is given"},
	{Name: keyAutoRegisterSchemas, Type: TypeBool, Default: "true", Description: "whether an Avro sink registers its schema under its subject in the schema registry; when false the schema must be registered already",
		ReadBy: []Component{Core}, Note: "only with schema.registry.url"},
	{Name: keyBasicAuthSource, Type: TypeEnum, Values: []string{"URL", "USER_INFO"}, Default: "URL",
		Description: "where the schema registry's basic-auth credentials are: in the URL (user:password@host) or in basic.auth.user.info", ReadBy: []Component{Core}},
	{Name: keyBasicAuthUserInfo, Type: TypeString, Description: "the schema registry's basic-auth credentials, user:password, when basic.auth.credentials.source is USER_INFO",
		ReadBy: []Component{Core}, Secret: true, Note: "never shown: logs and config output print [hidden]"},
	{Name: keyKeySubjectStrategy, Type: TypeEnum, Values: strategies, Aliases: strategyClasses, Default: "TopicNameStrategy",
		Description: "the subject an Avro key schema is registered under: <topic>-key, the record's full name, or <topic>-<full name>", ReadBy: []Component{Core}},
	{Name: keySchemaRegistryURL, Type: TypeString, Description: "the Confluent-compatible schema registry Avro serdes fetch writer schemas from by id, and register sink schemas with (one http(s) URL)",
		ReadBy: []Component{Core}, Note: "a topology file's avro serdes use it when it is set; without it they use the schema and schema-id the file gives"},
	{Name: keyValueSubjectStrategy, Type: TypeEnum, Values: strategies, Aliases: strategyClasses, Default: "TopicNameStrategy",
		Description: "the subject an Avro value schema is registered under: <topic>-value, the record's full name, or <topic>-<full name>", ReadBy: []Component{Core}},
	{Name: keyClientID, Type: TypeString, Default: "application.id-instance", Description: "the client id the brokers log and meter this client under", ReadBy: []Component{KafkaClient},
		Note: "the default carries stoatflow.instance.id, which lets a start find a live instance with its own id; with client.id set, that check is off"},
	{Name: CommitIntervalMs, Type: TypeDurationMs, Default: "100", Lookup: true, Description: "Kafka Streams' commit interval; accepted and ignored",
		ReadBy: []Component{LiveEngine}, NoOp: true, Note: "the live engine commits at barriers, whose cadence is stoatflow.commit-barrier.*"},
	{Name: DeserializationHandler, Type: TypeEnum, Values: []string{HandlerFail, HandlerContinue, "dead-letter"},
		Aliases: join(handlerFailAliases, handlerContinueAliases), Default: HandlerFail, Lookup: true,
		Description: "what a record that cannot be deserialized does: fail the task, continue past it, or go to the dead-letter topic", ReadBy: []Component{Core},
		Note: "dead-letter needs errors.dead.letter.queue.topic.name"},
	{Name: DefaultKeySerde, Type: TypeString, Description: "the serde of keys where a source, sink or store declares none (string, bytes, int32, int64, json, ...)",
		ReadBy: []Component{Core}, Note: "a topology file defaults it to string; Kafka's Serdes$...Serde class names are accepted"},
	{Name: ProductionHandler, Type: TypeEnum, Values: []string{HandlerFail, HandlerContinue, "dead-letter"},
		Aliases: join(handlerFailAliases, map[string]string{"org.apache.kafka.streams.errors.DefaultProductionExceptionHandler": HandlerFail}),
		Default: HandlerFail, Lookup: true, Description: "what a sink record too large for its topic does: fail the engine, drop the record and continue, or send the input record behind it to the dead-letter topic", ReadBy: []Component{LiveEngine},
		Note: "dead-letter needs errors.dead.letter.queue.topic.name; the dead letter is the input record, read back from its topic, with __streams.errors.* headers, in the same transaction as the epoch's output"},
	{Name: DefaultTimestampExtractor, Type: TypeEnum, Values: []string{"record", "log-and-skip", "use-partition-time"},
		Aliases: map[string]string{
			"org.apache.kafka.streams.processor.FailOnInvalidTimestamp":             "record",
			"org.apache.kafka.streams.processor.LogAndSkipOnInvalidTimestamp":       "log-and-skip",
			"org.apache.kafka.streams.processor.UsePartitionTimeOnInvalidTimestamp": "use-partition-time",
		}, Default: "record", Lookup: true, Description: "the event time of a record whose source declares no extractor, and what an invalid one does", ReadBy: []Component{Core}},
	{Name: DefaultDSLStore, Type: TypeEnum, Values: []string{StoreRocksDB, StoreInMemory}, Aliases: map[string]string{"rocksdb": StoreRocksDB, "in-memory": StoreInMemory}, Default: "rocksDB (stoatctl run), else in_memory",
		Description: "the backend of the stores that do not name one: RocksDB under state.dir, or in memory", ReadBy: []Component{LiveEngine},
		Note: "RocksDB state survives a restart, which then restores only the changelog records after its checkpoint; in-memory state is rebuilt from the changelogs at every start and reset"},
	{Name: DefaultValueSerde, Type: TypeString, Description: "the serde of values where a source, sink or store declares none (string, bytes, int32, int64, json, ...)",
		ReadBy: []Component{Core}, Note: "a topology file defaults it to json; Kafka's Serdes$...Serde class names are accepted"},
	{Name: DeadLetterQueueTopic, Type: TypeString, Description: "the topic records go to under the dead-letter deserialization and production handlers", ReadBy: []Component{Core}},
	{Name: keyGroupInstanceID, Type: TypeString, Description: "static group membership: a restarted instance takes its place back without waiting out its session", ReadBy: []Component{KafkaClient, LiveEngine}},
	atLeast(Key{Name: keyHeartbeatIntervalMs, Type: TypeDurationMs, Default: "3000", Description: "how often the consumer heartbeats to the group coordinator (Kafka's default)", ReadBy: []Component{KafkaClient}}, 1),
	atLeast(Key{Name: NumStreamThreads, Type: TypeInt, Default: "number of CPUs (live engine); 16 (lane checks)",
		Description: "the number of lanes per sub-topology; the test driver judges lane splits over it", ReadBy: []Component{LiveEngine, Core, TestDriver},
		Note: "Kafka Streams' stream threads; here the key-affinity lanes each sub-topology runs on"}, 1),
	{Name: ProcessingHandler, Type: TypeEnum, Values: []string{HandlerFail, HandlerContinue}, Aliases: join(handlerFailAliases, handlerContinueAliases),
		Default: HandlerFail, Lookup: true, Description: "what a record whose processing throws does: fail the task or continue past it", ReadBy: []Component{Core}},
	{Name: ProcessingGuarantee, Type: TypeEnum, Values: []string{"exactly_once_v2", "at_least_once"}, Default: "exactly_once_v2", Lookup: true,
		Description: "exactly_once_v2 commits each epoch in one Kafka transaction; at_least_once commits offsets after the output", ReadBy: []Component{LiveEngine, KafkaClient}},
	atLeast(Key{Name: keySessionTimeoutMs, Type: TypeDurationMs, Default: "45000", Description: "how long the group waits for a silent member before rebalancing it away", ReadBy: []Component{KafkaClient, LiveEngine}}, 1),
	{Name: StateDir, Type: TypeString, Default: "stoatflow-<user> in the temporary directory", Description: "where RocksDB state and the instance id are kept: one database per lane, under <state.dir>/<application.id>/<sub-topology>_<lane>; the default is per user (os.TempDir()/stoatflow-<user name>) and, below it, per application id", ReadBy: []Component{LiveEngine},
		Note: "unset, each instance running on the host takes a slot of the default: the first stoatflow-<user>, a second of the same application started beside it stoatflow-<user>.instance-2, and so on, each with its own instance id and state (held by a lock on <dir>/<application.id>/instance.lock while it runs; a restart takes the lowest free slot); each database is locked (its LOCK file) against a second process; a database is opened, and each commit written, only with 128 MiB to spare on its filesystem (an error naming the directory otherwise; the next start restores what did not commit); stoatctl run --state-dir sets it"},
	{Name: StoatflowChangelogEnabled, Type: TypeBool, Default: "true", Lookup: true, Description: "whether stores log their changes; accepted and ignored", ReadBy: []Component{Core},
		NoOp: true, Note: "logging is chosen per store when the topology is built; this key has no effect yet"},
	atLeast(Key{Name: keyBarrierIntervalFactor, Type: TypeFloat, Default: "1.5",
		Description: "the barrier interval after a slow commit: the commit time times this factor, within the min and max", ReadBy: []Component{LiveEngine}}, 0),
	atLeast(Key{Name: keyBarrierIntervalMs, Type: TypeDurationMs, Default: "500", Description: "how often the live engine cuts a commit barrier (one epoch, one transaction)", ReadBy: []Component{LiveEngine},
		Note: "while the engine is behind its input; an input it has caught up with (its last poll empty, or reaching the end of every partition it returned) and a window awaiting its final result are cut at stoatflow.commit-barrier.min-interval-ms"}, 1),
	atLeast(Key{Name: keyBarrierMaxIntervalMs, Type: TypeDurationMs, Default: "5000", Description: "the longest barrier interval", ReadBy: []Component{LiveEngine},
		Note: "under exactly-once at most a third of transaction.timeout.ms (an epoch lasts its interval, the lanes' queued work and the commit): a value set above it is refused, the default and the other intervals are lowered to fit"}, 1),
	atLeast(Key{Name: keyBarrierMinIntervalMs, Type: TypeDurationMs, Default: "150", Description: "the shortest barrier interval", ReadBy: []Component{LiveEngine}}, 1),
	atLeast(Key{Name: keyTransactionTimeoutMs, Type: TypeDurationMs, Default: "40000",
		Description: "how long the transaction coordinator lets a transaction stay open before it aborts it and fences its producer (exactly-once)",
		ReadBy:      []Component{KafkaClient, LiveEngine},
		Note:        "Kafka Streams sets 10000 under exactly-once; ours is franz-go's 40000, because a barrier interval can grow to stoatflow.commit-barrier.max-interval-ms and a commit adds its own time. A crashed or paused instance's open transaction holds back restoration and the group's offsets until it is aborted"}, 1000),
	atLeast(Key{Name: keyRetryBackoffMs, Type: TypeDurationMs, Default: "100",
		Description: "how soon the Kafka client may refresh metadata again to retry a failed request",
		ReadBy:      []Component{KafkaClient},
		Note:        "Kafka's clients' default; franz-go's own (its metadata min age) is 5000. A produce that opens a transaction right after the last one commits can meet CONCURRENT_TRANSACTIONS while the broker still writes the commit markers, and its retry waits for that refresh: at 5 s, an epoch's commit took 4.8 s on Apache Kafka 4.4; the live engine's admin client takes it as its metadata min age too, so that a source topic created just before the start is seen"}, 10),
	{Name: keyInstanceID, Type: TypeString, Default: "(kept in state.dir)", Description: "names this instance among the application's; completes the transactional id application.id-instance and the default client.id",
		ReadBy: []Component{KafkaClient, LiveEngine}, Note: "unique among instances running at once, and the same across restarts of one instance. Unset, the live engine makes one on its first start and keeps it in <state.dir>/<application.id>/instance.id; a start that finds a live group member with its own id refuses to run (ErrInstanceInUse)"},
	atLeast(Key{Name: keyLaneQueueSize, Type: TypeInt, Default: "1024",
		Description: "the records a lane holds of each of its producers (the dispatcher, and each upstream lane across an in-memory re-key), queued or stashed while it aligns a barrier; a producer with none left waits, and a waiting dispatcher stops fetching",
		ReadBy:      []Component{LiveEngine},
		Note:        "a lane fed by p producers holds at most p times this; the dispatcher hands records over in batches of up to 64 (fewer when this is smaller)"}, 1),
	atLeast(Key{Name: StateStoreCacheMaxBytes, Type: TypeInt, Default: "10485760",
		Description: "Kafka Streams' record cache; 0 logs every store write (stoatflow.changelog.coalesce-bytes=0), other values are accepted and change nothing",
		ReadBy:      []Component{LiveEngine},
		Note:        "there is no record cache downstream: every update is forwarded, as Kafka Streams does with the cache at 0. The changelog is coalesced per epoch instead (stoatflow.changelog.coalesce-bytes), which this key turns off at 0 unless that key is set"}, 0),
	atLeast(Key{Name: keyChangelogCoalesce, Type: TypeInt, Default: "4194304",
		Description: "the bytes of changelog records a lane holds back within an epoch so that only each store key's last write is logged; 0 logs every change as it happens",
		ReadBy:      []Component{LiveEngine},
		Note:        "the epoch's last write per key restores the same state as all of them, and they commit together or not at all; what the topology forwards is unchanged (unlike Kafka Streams' statestore.cache.max.bytes, which also holds back downstream updates). Past the bound the lane writes what it holds and starts again"}, 0),
	atLeast(Key{Name: keyCommitHeldRecords, Type: TypeInt, Default: "65536",
		Description: "the records the committer holds for the next epoch while the current one commits; a lane with more to hand over waits",
		ReadBy:      []Component{LiveEngine},
		Note:        "a lane hands records over 512 at a time at most; one hand-over larger than this waits for the whole budget"}, 1),
	atLeast(Key{Name: keyRestoreChunkRecords, Type: TypeInt, Default: "16384",
		Description: "the changelog records a restore reads ahead before it writes them to the lanes' stores; the read fills the next chunk while one is written, and changelog partitions are read one at a time",
		ReadBy:      []Component{LiveEngine}}, 1),
	atLeast(Key{Name: keyBufferMemory, Type: TypeInt, Default: "33554432",
		Description: "the bytes of records the live engine has produced and the brokers not yet acknowledged; a full buffer holds the committer, and through it the lanes",
		ReadBy:      []Component{LiveEngine},
		Note:        "Kafka's producer key, as franz-go's MaxBufferedBytes; franz-go also holds at most 1048576 records"}, 1024),
	atLeast(Key{Name: keyRestoreFetchMaxBytes, Type: TypeInt, Default: "1048576",
		Description: "the bytes a restore fetches of a changelog partition at once; a fetch is decoded whole, so this bounds what the read holds",
		ReadBy:      []Component{LiveEngine},
		Note:        "a record batch larger than this still comes whole, as Kafka sends it; records decode to several times their compressed size"}, 1024),
	atLeast(Key{Name: keyRestoreBatchBytes, Type: TypeInt, Default: "8388608",
		Description: "the bytes of restored records written to a lane's RocksDB database in one write batch (each key's last value once per batch)",
		ReadBy:      []Component{LiveEngine}}, 1024),
	atLeast(Key{Name: keyNumStandbyReplicas, Type: TypeInt, Default: "0",
		Description: "how many other instances keep a warm copy of each task's RocksDB state, so that the one that takes a task over restores only the changelog's tail (Kafka Streams' key and default)",
		ReadBy:      []Component{LiveEngine},
		Note:        "kept by instances that run no task of the application: the instances beside the one that runs a topology that cannot be split (which then start as standbys instead of being refused) and spare instances beyond the task count; an instance that runs tasks does not keep standbys yet. Needs the stores in RocksDB"}, 0),
	{Name: RackAwareAssignmentTags, Type: TypeList,
		Description: "the client tags (client.tag.<name>=<value>, such as a zone) standby tasks are spread over: a task's standbys go to instances whose values of these tags differ from its active's and its other standbys' on as many tags as can differ, else to any other instance (Kafka Streams' key, KIP-708)",
		ReadBy:      []Component{LiveEngine},
		Note:        "every tag listed must be set on the instance; at most 5 tags, names of at most 20 characters and values of at most 30, as Kafka Streams allows; the group leader's list counts, and tags place standbys only, not active tasks"},
	atLeast(Key{Name: keyStandbyIntervalMs, Type: TypeDurationMs, Default: "2000",
		Description: "how often an instance that keeps standbys brings them up to date with their changelogs; a promoted standby restores at most about this much of the changelog",
		ReadBy:      []Component{LiveEngine}}, 1),
	atLeast(Key{Name: keyAcceptableLag, Type: TypeInt, Default: "10000",
		Description: "how many changelog records behind an instance may be and still be given a stateful task at once; one further behind warms it up first while its owner keeps running it (Kafka Streams' key and default, KIP-441)",
		ReadBy:      []Component{LiveEngine},
		Note:        "warm-ups are kept by instances that run no task and keep their stores in RocksDB; others take tasks at once"}, 0),
	atLeast(Key{Name: keyMaxWarmups, Type: TypeInt, Default: "2",
		Description: "how many tasks warm up at once across the group; the others stay where they run until a later rebalance (Kafka Streams' key and default)",
		ReadBy:      []Component{LiveEngine}}, 1),
	atLeast(Key{Name: keyProbingIntervalMs, Type: TypeDurationMs, Default: "600000",
		Description: "how often an instance warming tasks up asks for a rebalance if it has not caught up; it asks at once when it has (Kafka Streams' key and default)",
		ReadBy:      []Component{LiveEngine}}, 60000),
	atLeast(Key{Name: keyShutdownTimeoutMs, Type: TypeDurationMs, Default: "30000",
		Description: "how long a stop waits for the final barrier's commit; past it what did not commit is reprocessed on the next start", ReadBy: []Component{LiveEngine}}, 1),
	{Name: keyMetricsLevel, Type: TypeEnum, Values: []string{"info", "debug"}, FoldCase: true, Default: "info",
		Description: "which Prometheus families the live engine records: info, or debug for the per-partition ones too", ReadBy: []Component{LiveEngine},
		Note: "docs/metrics.md lists each family's level"},
	atLeast(Key{Name: keyProgressLogMs, Type: TypeDurationMs, Default: "30000",
		Description: "how often the live engine logs a progress line (throughput, watermark, the partition pinning it); 0 turns it off", ReadBy: []Component{LiveEngine}}, 0),
	atLeast(Key{Name: keyStallWarningMs, Type: TypeDurationMs, Default: "60000",
		Description: "how long the watermark may stand still while records arrive before a warning names the partition pinning it; 0 turns it off", ReadBy: []Component{LiveEngine}}, 0),
	{Name: keyInfoShowWatermarks, Type: TypeBool, Default: "true", Description: "whether GET /info carries the global watermark", ReadBy: []Component{LiveEngine}},
	{Name: TimestampCoordinationMode, Type: TypeEnum, Values: []string{CoordinationAuto, CoordinationEnabled, CoordinationDisabled}, Default: CoordinationAuto, Lookup: true,
		Description: "whether sources' watermarks are coordinated: AUTO, ENABLED or DISABLED", ReadBy: []Component{Core}},
	{Name: TopologyRekey, Type: TypeEnum, Values: []string{RekeyMemory, RekeyTopic}, Default: RekeyMemory, Lookup: true,
		Description: "how records cross a re-key boundary (groupBy, selectKey before an aggregation, repartition): memory, from lane to lane in one instance, or topic, through <application.id>-<name>-repartition, so that several instances can share the work",
		ReadBy:      []Component{Core},
		Note:        "every instance of an application must use the same value; under memory a second instance is refused (ErrSplitBoundary). The test driver always re-keys in memory"},
	{Name: JoinLateRecords, Type: TypeEnum, Values: []string{JoinLateDrop, JoinLateJoin}, Default: JoinLateDrop, Lookup: true,
		Description: "what a stream-stream join does with a record whose window has closed: drop it (the one late rule, counted as late_window) or join it as Kafka Streams 4.4 does (with what the other side still holds; unmatched, a left or outer join emits it at once)",
		ReadBy:      []Component{Core},
		Note:        "join makes a migrated Kafka Streams application's join output match Kafka Streams' for late records; a result of a late record may then reach a window downstream that has already closed"},
	atLeast(Key{Name: RepartitionPurgeIntervalMs, Type: TypeDurationMs, Default: "30000", Lookup: true,
		Description: "how often the live engine deletes the records of repartition topics it has committed past (Kafka Streams' key and default)", ReadBy: []Component{LiveEngine}}, 1),
	{Name: TimerLaneAffinityGuard, Type: TypeEnum, Values: verdicts, FoldCase: true, Default: VerdictError, Lookup: true,
		Description: "the runtime guard on timers registered or deleted for the key being processed: off, warn or error", ReadBy: []Component{Core}},
	{Name: TimerLaneAffinitySampledCheck, Type: TypeEnum, Values: verdicts, FoldCase: true, Default: VerdictWarn, Lookup: true,
		Description: "the sampled check that a record's key hashes to the lane processing it: off, warn or error", ReadBy: []Component{Core}},
	{Name: TimerKeyLaneAffinityRule, Type: TypeEnum, Values: verdicts, FoldCase: true, Default: VerdictWarn, Lookup: true,
		Description: "the build-time timer lane-affinity rule: off, warn or error", ReadBy: []Component{Core}},
	{Name: keyCreateTopics, Type: TypeBool, Default: "true", Description: "whether the engine may create its internal topics; when false a missing one fails the start", ReadBy: []Component{LiveEngine}},
	atLeast(Key{Name: WatermarkAutoIntervalMs, Type: TypeDurationMs, Default: "200", Lookup: true, Description: "how often the watermark is recomputed; accepted and ignored",
		ReadBy: []Component{LiveEngine}, NoOp: true, Note: "planned; nothing reads it yet"}, 1),
	atLeast(Key{Name: MaxTaskIdleMs, Type: TypeInt, Default: "0", Lookup: true,
		Description: "how long a task that reads several topics waits for one of its partitions with no record fetched before it goes on with the others (Kafka Streams' key): -1 never waits; 0 waits only while records wait on the broker for that partition; more also waits that long for a partition at its end",
		ReadBy:      []Component{LiveEngine},
		Note:        "a wait for records on the broker lasts at most 1 s, or this long when longer, so that a partition the fetches never bring delays its task without stopping it"}, -1),
	atLeast(Key{Name: WatermarkIdlenessTimeoutMs, Type: TypeDurationMs, Default: "300000", Lookup: true,
		Description: "how long a source partition may stay silent before the watermark stops waiting for it", ReadBy: []Component{LiveEngine}}, 0),
	atLeast(Key{Name: WatermarkMaxOutOfOrdernessMs, Type: TypeDurationMs, Default: "10000", Lookup: true,
		Description: "the default watermark lag behind the largest event time, for sources that declare no strategy", ReadBy: []Component{Core}}, 0),
	{Name: TestDriverCommitPerPipe, Type: TypeBool, Default: "true", Lookup: true, Description: "whether the test driver cuts a commit barrier after every piped record", ReadBy: []Component{TestDriver}},
	atLeast(Key{Name: TestDriverNumberOfLanes, Type: TypeInt, Default: "num.stream.threads, else 16",
		Description: "the lane count the test driver judges lane splits over", ReadBy: []Component{TestDriver}}, 1),
	{Name: TimerLaneAffinitySampledCheckAlias, Type: TypeEnum, Values: verdicts, FoldCase: true, Description: "the test driver's short name for the sampled lane check",
		ReadBy: []Component{Core, TestDriver}, AliasOf: TimerLaneAffinitySampledCheck, Note: "the full key wins when both are set"},
	{Name: TopologyOptimization, Type: TypeString, Description: "Kafka Streams' topology optimization; accepted and ignored", ReadBy: []Component{Core},
		NoOp: true, Note: "stoatctl applies no optimizations; the topology runs as built"},
}, clientKeys...))

func sortedKeys(ks []Key) []Key {
	slices.SortFunc(ks, func(a, b Key) int { return strings.Compare(a.Name, b.Name) })
	return ks
}

var byKeyName = func() map[string]*Key {
	m := make(map[string]*Key, len(catalogue))
	for i := range catalogue {
		m[catalogue[i].Name] = &catalogue[i]
	}
	return m
}()

// Catalogue returns every key stoatctl knows, sorted by name. The result
// is a copy.
func Catalogue() []Key {
	out := make([]Key, len(catalogue))
	for i, k := range catalogue {
		k.Values = slices.Clone(k.Values)
		k.ReadBy = slices.Clone(k.ReadBy)
		k.Aliases = maps.Clone(k.Aliases)
		out[i] = k
	}
	return out
}

// Describe returns the key named name.
func Describe(name string) (Key, bool) {
	k, ok := byKeyName[name]
	if !ok {
		return Key{}, false
	}
	return *k, true
}

// Known reports whether name is a key of the catalogue.
func Known(name string) bool {
	_, ok := byKeyName[name]
	return ok
}

// TypeText is the key's type as the docs print it: "enum (a, b, c)" for
// an enum.
func (k Key) TypeText() string {
	if k.Type == TypeEnum {
		return string(k.Type) + " (" + strings.Join(k.Values, ", ") + ")"
	}
	return string(k.Type)
}

// ReadByText joins the components that read the key.
func (k Key) ReadByText() string {
	parts := make([]string, len(k.ReadBy))
	for i, c := range k.ReadBy {
		parts[i] = string(c)
	}
	return strings.Join(parts, ", ")
}

// Closest is the known key nearest name by edit distance, compared
// case-insensitively, and false when none is near enough to be the key
// meant.
func Closest(name string) (string, bool) {
	lower := strings.ToLower(name)
	best, bestD := "", -1
	for _, k := range catalogue {
		d := distance(lower, strings.ToLower(k.Name))
		if bestD < 0 || d < bestD {
			best, bestD = k.Name, d
		}
	}
	if bestD < 0 || bestD > max(2, len(name)/5) {
		return "", false
	}
	return best, true
}

// distance is the Levenshtein distance between a and b, over bytes.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// AliasNames lists the enum's aliases, sorted.
func (k Key) AliasNames() []string { return slices.Sorted(maps.Keys(k.Aliases)) }

// MinText is the least value, as written in a configuration.
func (k Key) MinText() string { return formatMin(k.Min) }

func formatMin(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
