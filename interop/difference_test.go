package interop_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stoatflow/stoatctl/internal/kafkatest"
	"github.com/stoatflow/stoatctl/interop"
	"github.com/stoatflow/stoatctl/replay"
)

// A difference is an input on which Kafka Streams and stoatctl differ by
// design. Each names its entry in docs/event-time.md ("Where stoatctl
// differs from Kafka Streams") and checks that the outputs differ in just
// that way; when they stop differing, the test fails, so the entry cannot
// outlive the difference.
type difference struct {
	mirror, input string
	// doc is the entry's bold lead in docs/event-time.md.
	doc   string
	check func(theirs, ours map[string][]string) error
}

var differences = []difference{{
	mirror: "window-close", input: "window-close-jump.jsonl",
	doc: "Windows that close and expire at once are still emitted.",
	check: func(theirs, ours map[string][]string) error {
		// Every result Kafka Streams emits, we emit the same; we emit
		// more: the windows its store dropped before it looked.
		for k, v := range theirs {
			if !slices.Equal(v, ours[k]) {
				return fmt.Errorf("%s: Kafka Streams %v, stoatctl %v", k, v, ours[k])
			}
		}
		var extra []string
		for k := range ours {
			if _, ok := theirs[k]; !ok {
				extra = append(extra, k)
			}
		}
		if len(extra) == 0 {
			return fmt.Errorf("no window only stoatctl emits: the difference is gone")
		}
		return nil
	},
}}

// TestDifferencesByDesign runs each difference's input through Kafka
// Streams' TopologyTestDriver and our test driver and checks it.
func TestDifferencesByDesign(t *testing.T) {
	if kafkatest.Real() {
		t.Skip("broker-free; runs in the embedded tier")
	}
	j := java(t)
	root, _ := kafkatest.RepoRoot()
	doc, err := os.ReadFile(root + "/docs/event-time.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range differences {
		t.Run(d.input, func(t *testing.T) {
			if !strings.Contains(string(doc), "**"+d.doc+"**") {
				t.Fatalf("docs/event-time.md has no entry %q", d.doc)
			}
			m := mirror(t, d.mirror)
			input := j.Path("testdata", d.input)
			theirs := j.Driver(t, m, input)
			res := replay.RunFile(writeFixture(t, j, m, input, theirs))
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			var ours []interop.Record
			for _, out := range res.Outputs {
				for _, a := range out.Actual {
					ours = append(ours, interop.Record{Topic: out.Topic, Key: plain(a.Key), Value: plain(a.Value), Timestamp: a.Timestamp})
				}
			}
			tk, ok := interop.PerKey(theirs), interop.PerKey(ours)
			if err := d.check(tk, ok); err != nil {
				t.Fatalf("%s (docs/event-time.md: %q): %v\nKafka Streams: %v\nstoatctl: %v", d.input, d.doc, err, sortedKeys(tk), sortedKeys(ok))
			}
			t.Logf("%s: Kafka Streams %d keys, stoatctl %d, as docs/event-time.md says (%q)", d.input, len(tk), len(ok), d.doc)
		})
	}
}

func mirror(t *testing.T, name string) interop.Mirror {
	t.Helper()
	for _, m := range interop.Mirrors {
		if m.Name == name {
			return m
		}
	}
	t.Fatalf("no mirror %s", name)
	return interop.Mirror{}
}

// plain turns a value decoded by replay into what decoding its JSON gives,
// so that it compares with the runner's records.
func plain(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return v
	}
	return out
}

func sortedKeys(m map[string][]string) []string { return slices.Sorted(maps.Keys(m)) }
