package config

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Keys the processing core reads. The live engine adds its own.
const (
	ApplicationID             = "application.id"
	BootstrapServers          = "bootstrap.servers"
	DefaultKeySerde           = "default.key.serde"
	DefaultValueSerde         = "default.value.serde"
	NumStreamThreads          = "num.stream.threads"
	ProcessingGuarantee       = "processing.guarantee"
	CommitIntervalMs          = "commit.interval.ms"
	DeserializationHandler    = "default.deserialization.exception.handler"
	ProcessingHandler         = "processing.exception.handler"
	ProductionHandler         = "default.production.exception.handler"
	DeadLetterQueueTopic      = "errors.dead.letter.queue.topic.name"
	DefaultTimestampExtractor = "default.timestamp.extractor"
	StateDir                  = "state.dir"
	DefaultDSLStore           = "default.dsl.store"
	TopologyOptimization      = "topology.optimization"
	TestDriverCommitPerPipe   = "test.driver.commit-per-pipe"
	StoatflowChangelogEnabled = "stoatflow.changelog.enabled"
	// StateStoreCacheMaxBytes is Kafka Streams' record cache size. Here
	// 0 turns changelog coalescing off (every write logged, as Kafka
	// Streams logs every write without its cache); other values change
	// nothing.
	StateStoreCacheMaxBytes = "statestore.cache.max.bytes"
	// MaxTaskIdleMs is Kafka Streams' wait of a task for an input
	// partition with nothing fetched: -1 never waits, 0 waits while
	// records are known to wait on the broker, more waits that long for
	// a partition at its end too.
	MaxTaskIdleMs = "max.task.idle.ms"

	WatermarkMaxOutOfOrdernessMs = "stoatflow.watermark.max-out-of-orderness-ms"
	WatermarkIdlenessTimeoutMs   = "stoatflow.watermark.idleness-timeout-ms"
	WatermarkAutoIntervalMs      = "stoatflow.watermark.auto-interval-ms"
	TimestampCoordinationMode    = "stoatflow.processing.timestamp-coordination-mode"

	// TopologyRekey is how records cross a re-key boundary: memory (one
	// instance, lane to lane) or topic (a repartition topic, any number
	// of instances). RekeyMemory and RekeyTopic are its values.
	TopologyRekey = "stoatflow.topology.rekey"
	RekeyMemory   = "memory"
	RekeyTopic    = "topic"
	// JoinLateRecords is what a stream-stream join does with a record
	// whose window has closed at its floor: drop it (JoinLateDrop, the
	// one late rule) or join it as Kafka Streams does (JoinLateJoin).
	JoinLateRecords = "stoatflow.join.late-records"
	JoinLateDrop    = "drop"
	JoinLateJoin    = "join"
	// RepartitionPurgeIntervalMs is Kafka Streams' key: how often records
	// of repartition topics that every reader committed past are deleted.
	RepartitionPurgeIntervalMs = "repartition.purge.interval.ms"

	// The three timer lane-affinity checks, each off, warn or error: the
	// build-time rule, the runtime guard on timers registered or deleted
	// for the key being processed, and the sampled record-key check.
	TimerKeyLaneAffinityRule      = "stoatflow.topology.validation.timer-key-lane-affinity"
	TimerLaneAffinityGuard        = "stoatflow.processing.timer-lane-affinity-guard"
	TimerLaneAffinitySampledCheck = "stoatflow.processing.timer-lane-affinity-sampled-check"
	// TimerLaneAffinitySampledCheckAlias is the test driver's short name
	// for the sampled check; the full key wins when both are set.
	TimerLaneAffinitySampledCheckAlias = "timer.lane-affinity.sampled-check"
	// TestDriverNumberOfLanes is the lane count the test driver judges lane
	// splits over (its numberOfLanes override); unset, num.stream.threads,
	// else 16.
	TestDriverNumberOfLanes = "test.driver.number-of-lanes"
)

// The stores default.dsl.store picks between, spelt as Kafka Streams does.
const (
	StoreRocksDB  = "rocksDB"
	StoreInMemory = "in_memory"
)

// Verdicts of the checks that can be switched off, made to warn or made to
// fail.
const (
	VerdictOff   = "off"
	VerdictWarn  = "warn"
	VerdictError = "error"
)

// Timestamp coordination modes.
const (
	CoordinationAuto     = "AUTO"
	CoordinationEnabled  = "ENABLED"
	CoordinationDisabled = "DISABLED"
)

// Handler verdicts for the exception handler keys.
const (
	HandlerFail     = "fail"
	HandlerContinue = "continue"
)

// Defaults are the values used for keys a configuration does not set:
// the defaults of the catalogue's keys marked Lookup. Other keys'
// defaults are applied by their readers.
var Defaults = func() map[string]string {
	out := map[string]string{}
	for _, k := range catalogue {
		if k.Lookup {
			out[k.Name] = k.Default
		}
	}
	return out
}()

// Config is an application's merged configuration. The zero value is usable
// and holds only the defaults.
type Config struct {
	values map[string]string
}

// New returns a configuration holding values over the defaults.
func New(values map[string]string) Config {
	return Config{values: maps.Clone(values)}
}

// Map returns every value in force, defaults included, as a copy.
func (c Config) Map() map[string]string {
	out := maps.Clone(Defaults)
	maps.Copy(out, c.values)
	return out
}

// With returns a copy of c with key set to value.
func (c Config) With(key, value string) Config {
	v := maps.Clone(c.values)
	if v == nil {
		v = map[string]string{}
	}
	v[key] = value
	return Config{values: v}
}

// Lookup returns the value for key, its default when unset, and whether
// either exists.
func (c Config) Lookup(key string) (string, bool) {
	if v, ok := c.values[key]; ok {
		return v, true
	}
	v, ok := Defaults[key]
	return v, ok
}

// String returns the value for key or "".
func (c Config) String(key string) string {
	v, _ := c.Lookup(key)
	return v
}

// IsSet reports whether key was set explicitly (not by a default).
func (c Config) IsSet(key string) bool {
	_, ok := c.values[key]
	return ok
}

// Int parses key as an integer; def is returned when it is unset.
func (c Config) Int(key string, def int64) (int64, error) {
	v, ok := c.Lookup(key)
	if !ok || strings.TrimSpace(v) == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("config %s: %q is not an integer", key, v)
	}
	return n, nil
}

// BoundedInt parses key as Int does and holds it to the catalogue's least
// value for key, with the message Check gives for the same value: the
// catalogue is the one place a key's bounds are written. It panics for a
// key the catalogue gives no least value, a mistake of the caller's code
// that any start of the reader shows.
func (c Config) BoundedInt(key string, def int64) (int64, error) {
	k, ok := byKeyName[key]
	if !ok || !k.HasMin {
		panic(fmt.Sprintf("config.BoundedInt(%q): the catalogue gives the key no least value", key))
	}
	n, err := c.Int(key, def)
	if err != nil {
		return 0, err
	}
	if reason := k.below(float64(n), strconv.FormatInt(n, 10)); reason != "" {
		return 0, fmt.Errorf("config %s: %s", key, reason)
	}
	return n, nil
}

// Bool parses key as a boolean; def is returned when it is unset.
func (c Config) Bool(key string, def bool) (bool, error) {
	v, ok := c.Lookup(key)
	if !ok || strings.TrimSpace(v) == "" {
		return def, nil
	}
	b, err := strconv.ParseBool(strings.TrimSpace(v))
	if err != nil {
		return false, fmt.Errorf("config %s: %q is not true or false", key, v)
	}
	return b, nil
}

// OneOf returns the value of key, checked against the allowed values.
func (c Config) OneOf(key string, allowed ...string) (string, error) {
	v := strings.TrimSpace(c.String(key))
	if slices.Contains(allowed, v) {
		return v, nil
	}
	return "", fmt.Errorf("config %s: %q is not one of %s", key, v, strings.Join(allowed, ", "))
}

// Verdict returns the off|warn|error value of key. An alias set
// explicitly stands in for key when key itself is not set explicitly, so
// that a short name works without hiding the full one.
func (c Config) Verdict(key string, aliases ...string) (string, error) {
	if !c.IsSet(key) {
		for _, a := range aliases {
			if c.IsSet(a) {
				key = a
				break
			}
		}
	}
	v := strings.ToLower(strings.TrimSpace(c.String(key)))
	switch v {
	case VerdictOff, VerdictWarn, VerdictError:
		return v, nil
	}
	return "", fmt.Errorf("config %s: %q is not one of off, warn, error", key, c.String(key))
}

// Keys returns the explicitly set keys, sorted.
func (c Config) Keys() []string {
	return slices.Sorted(maps.Keys(c.values))
}
