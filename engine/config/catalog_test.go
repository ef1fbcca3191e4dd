package config

import (
	"maps"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stoatflow/stoatctl/internal/golden"
)

func TestCheck(t *testing.T) {
	tests := []struct {
		name   string
		values map[string]string
		want   []string // Problem.Level() + " " + Problem.String(), in order
	}{
		{"known keys pass", map[string]string{ApplicationID: "app", NumStreamThreads: "4", ProcessingGuarantee: "at_least_once",
			"stoatflow.commit-barrier.interval-factor": "0.5", "session.timeout.ms": "10000", TimerLaneAffinityGuard: "WARN"}, nil},
		{"empty value is unset", map[string]string{NumStreamThreads: " ", ProcessingGuarantee: ""}, nil},
		{"typo suggests the key", map[string]string{"num.stream.thread": "4"},
			[]string{"warning unknown configuration key num.stream.thread; did you mean num.stream.threads?"}},
		{"case typo suggests the key", map[string]string{"Processing.Guarantee": "at_least_once"},
			[]string{"warning unknown configuration key Processing.Guarantee; did you mean processing.guarantee?"}},
		{"far key has no suggestion", map[string]string{"foo.bar": "1"},
			[]string{"warning unknown configuration key foo.bar; stoatctl config list shows the known keys"}},
		{"Kafka Streams internal key is unknown", map[string]string{"__emit.interval.ms.kstreams.windowed.aggregation__": "1000"},
			[]string{"warning unknown configuration key __emit.interval.ms.kstreams.windowed.aggregation__; stoatctl config list shows the known keys"}},
		{"bad int", map[string]string{NumStreamThreads: "four"},
			[]string{`error config num.stream.threads: "four" is not an integer`}},
		{"int below minimum", map[string]string{NumStreamThreads: "0"},
			[]string{`error config num.stream.threads: 0 is below the least value, 1`}},
		{"bad duration", map[string]string{"stoatflow.commit-barrier.interval-ms": "1s"},
			[]string{`error config stoatflow.commit-barrier.interval-ms: "1s" is not an integer number of milliseconds`}},
		{"bad float", map[string]string{"stoatflow.commit-barrier.interval-factor": "x"},
			[]string{`error config stoatflow.commit-barrier.interval-factor: "x" is not a number`}},
		{"bad bool", map[string]string{"stoatflow.topics.create": "yes"},
			[]string{`error config stoatflow.topics.create: "yes" is not true or false`}},
		{"bad enum value", map[string]string{ProcessingGuarantee: "exactly-once"},
			[]string{`error config processing.guarantee: "exactly-once" is not one of exactly_once_v2, at_least_once`}},
		{"enum is case-sensitive unless folded", map[string]string{TimestampCoordinationMode: "auto"},
			[]string{`error config stoatflow.processing.timestamp-coordination-mode: "auto" is not one of AUTO, ENABLED, DISABLED`}},
		{"enum alias", map[string]string{DeserializationHandler: "org.apache.kafka.streams.errors.LogAndContinueExceptionHandler"}, nil},
		{"processing handler has no dead letter", map[string]string{ProcessingHandler: "dead-letter"},
			[]string{`error config processing.exception.handler: "dead-letter" is not one of fail, continue`}},
		{"no-op key is a note", map[string]string{CommitIntervalMs: "100"},
			[]string{"note config commit.interval.ms has no effect: the live engine commits at barriers, whose cadence is stoatflow.commit-barrier.*"}},
		{"sorted by key", map[string]string{"zz.top": "1", NumStreamThreads: "x", "aa.bottom": "2"}, []string{
			"warning unknown configuration key aa.bottom; stoatctl config list shows the known keys",
			`error config num.stream.threads: "x" is not an integer`,
			"warning unknown configuration key zz.top; stoatctl config list shows the known keys",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, p := range Check(tc.values) {
				got = append(got, p.Level()+" "+p.String())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("Check(%v)\ngot:  %q\nwant: %q", tc.values, got, tc.want)
			}
		})
	}
}

func TestProblemOrigin(t *testing.T) {
	p := Check(map[string]string{"num.stream.thread": "4"})[0]
	p.Origin = "flag -X"
	if got, want := p.Error(), "flag -X: unknown configuration key num.stream.thread; did you mean num.stream.threads?"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestClosest(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"num.stream.thread", NumStreamThreads},
		{"num.streams.threads", NumStreamThreads},
		{"stoatflow.commit-barrier.intervl-ms", "stoatflow.commit-barrier.interval-ms"},
		{"default.value.serdes", DefaultValueSerde},
		{"auto.offset.rest", "auto.offset.reset"},
		{"foo.bar", ""},
		{"", ""},
	} {
		got, ok := Closest(tc.in)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("Closest(%q) = %q, %v; want %q", tc.in, got, ok, tc.want)
		}
	}
}

// TestCatalogueIsWellFormed checks the data: sorted, unique names, every
// key described and read by someone, enum values listed, and every
// literal default a value of its own type.
func TestCatalogueIsWellFormed(t *testing.T) {
	cat := Catalogue()
	if !slices.IsSortedFunc(cat, func(a, b Key) int { return strings.Compare(a.Name, b.Name) }) {
		t.Error("catalogue is not sorted by name")
	}
	seen := map[string]bool{}
	for _, k := range cat {
		if seen[k.Name] {
			t.Errorf("%s is listed twice", k.Name)
		}
		seen[k.Name] = true
		if k.Description == "" || strings.Contains(k.Description, "\n") || len(k.ReadBy) == 0 {
			t.Errorf("%s: want a one-line description and at least one reader", k.Name)
		}
		if (k.Type == TypeEnum) != (len(k.Values) > 0) {
			t.Errorf("%s: values belong to enums, and every enum has values", k.Name)
		}
		for a, v := range k.Aliases {
			if !slices.Contains(k.Values, v) {
				t.Errorf("%s: alias %s stands for %s, not a value", k.Name, a, v)
			}
		}
		if k.AliasOf != "" && !Known(k.AliasOf) {
			t.Errorf("%s: alias of unknown key %s", k.Name, k.AliasOf)
		}
		if k.Lookup {
			if r := byKeyName[k.Name].invalid(k.Default); r != "" {
				t.Errorf("%s: default %s", k.Name, r)
			}
		}
	}
	for _, k := range []string{ApplicationID, BootstrapServers, DefaultKeySerde, DefaultValueSerde, NumStreamThreads,
		ProcessingGuarantee, CommitIntervalMs, DeserializationHandler, ProcessingHandler, ProductionHandler,
		DeadLetterQueueTopic, DefaultTimestampExtractor, StateDir, TopologyOptimization, TestDriverCommitPerPipe,
		StoatflowChangelogEnabled, WatermarkMaxOutOfOrdernessMs, WatermarkIdlenessTimeoutMs, WatermarkAutoIntervalMs,
		TimestampCoordinationMode, TimerKeyLaneAffinityRule, TimerLaneAffinityGuard, TimerLaneAffinitySampledCheck,
		TimerLaneAffinitySampledCheckAlias, TestDriverNumberOfLanes, StateStoreCacheMaxBytes, MaxTaskIdleMs} {
		if !Known(k) {
			t.Errorf("package constant %s is not in the catalogue", k)
		}
	}
}

// TestDefaultsUnchanged pins Defaults, now derived from the catalogue, to
// what the package held before the catalogue existed.
func TestDefaultsUnchanged(t *testing.T) {
	want := map[string]string{
		ProcessingGuarantee:           "exactly_once_v2",
		CommitIntervalMs:              "100",
		DeserializationHandler:        HandlerFail,
		ProcessingHandler:             HandlerFail,
		ProductionHandler:             HandlerFail,
		DefaultTimestampExtractor:     "record",
		TestDriverCommitPerPipe:       "true",
		StoatflowChangelogEnabled:     "true",
		WatermarkMaxOutOfOrdernessMs:  "10000",
		WatermarkIdlenessTimeoutMs:    "300000",
		WatermarkAutoIntervalMs:       "200",
		TimestampCoordinationMode:     CoordinationAuto,
		TimerKeyLaneAffinityRule:      VerdictWarn,
		TimerLaneAffinityGuard:        VerdictError,
		TimerLaneAffinitySampledCheck: VerdictWarn,
		TopologyRekey:                 RekeyMemory,
		JoinLateRecords:               JoinLateDrop,
		RepartitionPurgeIntervalMs:    "30000",
		MaxTaskIdleMs:                 "0",
	}
	if !maps.Equal(Defaults, want) {
		t.Errorf("Defaults = %v\nwant %v", Defaults, want)
	}
}

func TestKeyLines(t *testing.T) {
	data := []byte("application-id: app\nconfig:\n  num.stream.threads: 4\n  stoatflow:\n    commit-barrier:\n      interval-ms: 250\n")
	got := KeyLines(data, "config")
	want := map[string]int{NumStreamThreads: 3, "stoatflow.commit-barrier.interval-ms": 6}
	if !maps.Equal(got, want) {
		t.Errorf("KeyLines(config) = %v, want %v", got, want)
	}
	if got := KeyLines(data); got["application-id"] != 1 || got["config.num.stream.threads"] != 3 {
		t.Errorf("KeyLines() = %v", got)
	}
	if got := KeyLines([]byte("a: [")); len(got) != 0 {
		t.Errorf("KeyLines of bad YAML = %v, want none", got)
	}
	if got := KeyLines(data, "nope", "deeper"); len(got) != 0 {
		t.Errorf("KeyLines of a missing path = %v, want none", got)
	}
}

// TestConfigurationDoc keeps docs/configuration.md generated from the
// catalogue; -update rewrites it.
func TestConfigurationDoc(t *testing.T) {
	golden.Check(t, "./engine/config", "../../docs/configuration.md", Markdown())
}

// TestDefaultStateDirPerUser: the default state.dir is the user's own,
// in the temporary directory.
func TestDefaultStateDirPerUser(t *testing.T) {
	dir := DefaultStateDir()
	if filepath.Dir(dir) != filepath.Clean(os.TempDir()) || !strings.HasPrefix(filepath.Base(dir), "stoatflow-") || filepath.Base(dir) == "stoatflow-" {
		t.Errorf("DefaultStateDir() = %s, want %s/stoatflow-<user>", dir, os.TempDir())
	}
	if u, err := user.Current(); err == nil && u.Username != "" && !strings.HasSuffix(dir, u.Username) {
		t.Errorf("DefaultStateDir() = %s, not %s's", dir, u.Username)
	}
}
