package replay

import (
	"bytes"
	gocontext "context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/topofile"
	"github.com/stoatflow/stoatctl/internal/kafkatest"
)

func TestParseBound(t *testing.T) {
	tests := []struct {
		in   string
		want Bound
		err  bool
	}{
		{"", Bound{}, false},
		{"beginning", Bound{Kind: BoundBeginning}, false},
		{"end", Bound{Kind: BoundEnd}, false},
		{"offset:0", Bound{Kind: BoundOffset}, false},
		{"offset:42", Bound{Kind: BoundOffset, Offset: 42}, false},
		{"1714521600000", Bound{Kind: BoundTime, Millis: 1714521600000}, false},
		{"2024-05-01T00:00:00Z", Bound{Kind: BoundTime, Millis: 1714521600000}, false},
		{"2024-05-01T02:00:00.250+02:00", Bound{Kind: BoundTime, Millis: 1714521600250}, false},
		{"offset:-1", Bound{}, true},
		{"offset:x", Bound{}, true},
		{"-5", Bound{}, true},
		{"yesterday", Bound{}, true},
	}
	for _, tt := range tests {
		got, err := ParseBound(tt.in)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("ParseBound(%q) = %+v, %v; want %+v, error %v", tt.in, got, err, tt.want, tt.err)
		}
	}
}

func rec(topic string, p int32, off, ts int64) Recorded {
	return Recorded{Topic: topic, Partition: p, Offset: off, Timestamp: ts}
}

func sources(rs []Recorded) []string {
	out := make([]string, len(rs))
	for i := range rs {
		out[i] = rs[i].Source()
	}
	return out
}

func TestMerge(t *testing.T) {
	parts := [][]Recorded{
		{rec("a", 0, 0, 10), rec("a", 0, 1, 5), rec("a", 0, 2, 30)}, // out of order in time: never reordered
		{rec("a", 1, 0, 10), rec("a", 1, 1, 20)},
		{},
		{rec("b", 0, 7, 10), rec("b", 0, 8, 10)},
	}
	tests := []struct {
		limit int
		want  []string
	}{
		{0, []string{"a[0]@0", "a[0]@1", "a[1]@0", "b[0]@7", "b[0]@8", "a[1]@1", "a[0]@2"}},
		{3, []string{"a[0]@0", "a[0]@1", "a[1]@0"}},
		{100, []string{"a[0]@0", "a[0]@1", "a[1]@0", "b[0]@7", "b[0]@8", "a[1]@1", "a[0]@2"}},
	}
	for _, tt := range tests {
		if got := sources(Merge(parts, tt.limit)); !slices.Equal(got, tt.want) {
			t.Errorf("Merge limit %d:\n got %v\nwant %v", tt.limit, got, tt.want)
		}
	}
}

// TestRecordedValuesRoundTrip writes awkward keys, values and headers and
// parses the fixture back: every byte must survive.
func TestRecordedValuesRoundTrip(t *testing.T) {
	values := [][]byte{
		nil, {}, []byte("plain"), []byte(`"quoted" \ back`), []byte("007"), []byte("true"), []byte("null"),
		[]byte("- not a list"), []byte("# not a comment"), []byte("a: b"), []byte("{x: 1}"),
		[]byte("line\nbreak\r\ttab"), []byte("\x00\x01\x1b\x7f"), []byte("\u0085\u2028\u2029\ufeff\uffff"),
		[]byte("héllo wörld ✓ 😀"), {0xff, 0xfe, 0x00}, {0xc3}, []byte("2024-05-01T00:00:00Z"), []byte("  padded  "),
	}
	var rs []Recorded
	for i, v := range values {
		rs = append(rs, Recorded{Topic: "t", Offset: int64(i), Key: v, Value: v, Timestamp: int64(i),
			Headers: []kgo.RecordHeader{{Key: "h: x", Value: v}, {Key: "n"}}})
	}
	var b bytes.Buffer
	if err := (&Recording{Records: rs}).WriteFixture(&b, FixtureOptions{Topology: "uppercase"}); err != nil {
		t.Fatal(err)
	}
	f, err := Parse("rt.fixture.yaml", b.Bytes())
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if len(f.Steps) != len(values) {
		t.Fatalf("got %d steps, want %d", len(f.Steps), len(values))
	}
	asBytes := func(v Value) []byte {
		if v.Kind == Null {
			return nil
		}
		if v.Kind != String {
			t.Fatalf("value kind %v, want string", v.Kind)
		}
		return []byte(v.Text)
	}
	for i, st := range f.Steps {
		r := st.Record
		want := values[i]
		if k, v := asBytes(r.Key), asBytes(r.Value); !bytes.Equal(k, want) || !bytes.Equal(v, want) || (k == nil) != (want == nil) {
			t.Errorf("record %d: key %q value %q, want %q", i, k, v, want)
		}
		wantH := processor.Headers{{Key: "h: x", Value: want}, {Key: "n"}}
		if len(r.Headers) != 2 || r.Headers[0].Key != wantH[0].Key || !bytes.Equal(r.Headers[0].Value, want) || r.Headers[1].Value != nil {
			t.Errorf("record %d: headers %v, want %v", i, r.Headers, wantH)
		}
		if !r.HasTimestamp || r.Timestamp != int64(i) {
			t.Errorf("record %d: timestamp %d", i, r.Timestamp)
		}
	}
}

func TestRecordsFileRefusesBinary(t *testing.T) {
	rs := []Recorded{{Topic: "t", Partition: 2, Offset: 9, Value: []byte{0xff}}}
	err := (&Recording{Records: rs}).WriteRecords(&bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "t[2]@9") {
		t.Fatalf("WriteRecords of binary value: %v, want an error naming t[2]@9", err)
	}
	rs[0].Value, rs[0].Headers = []byte("ok"), []kgo.RecordHeader{{Key: "a"}, {Key: "a"}}
	var b bytes.Buffer
	if err := (&Recording{Records: rs}).WriteFixture(&b, FixtureOptions{}); err == nil || !strings.Contains(err.Error(), "t[2]@9") {
		t.Fatalf("WriteFixture with a repeated header: %v, want an error naming t[2]@9", err)
	}
}

// produced is a record to produce: partition, timestamp (ms), key, value.
type produced struct {
	p     int32
	ts    int64
	key   string
	value string
}

// startBroker gives a test its broker: embedded, or real Kafka under
// STOATCTL_TEST_KAFKA=real (internal/kafkatest).
func startBroker(t *testing.T, topics map[string]int32) string {
	t.Helper()
	return kafkatest.Start(t, topics)
}

// produce writes rs to topic, in order, each to its partition; with
// txnID, in one committed transaction, so every partition ends with a
// commit marker.
func produce(t *testing.T, addr, topic, txnID string, rs ...produced) {
	t.Helper()
	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner())}
	if txnID != "" {
		opts = append(opts, kgo.TransactionalID(txnID))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if txnID != "" {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range rs {
		kr := &kgo.Record{Topic: topic, Partition: r.p, Key: []byte(r.key), Value: []byte(r.value), Timestamp: time.UnixMilli(r.ts),
			Headers: []kgo.RecordHeader{{Key: "src", Value: []byte(r.key)}}}
		if err := cl.ProduceSync(gocontext.Background(), kr).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if txnID != "" {
		if err := cl.EndTransaction(gocontext.Background(), kgo.TryCommit); err != nil {
			t.Fatal(err)
		}
		// Real Kafka writes the commit markers after EndTxn returns.
		kafkatest.AwaitStable(t, addr, topic)
	}
}

// sentences has interleaved timestamps over three partitions; partition
// 2 goes back in time, which the merge must not reorder. The last three
// records go in a transaction, so each partition ends with a marker.
var sentences = []produced{
	{0, 1000, "a", "one"},
	{1, 1500, "b", "two"},
	{2, 1200, "c", "three"},
	{0, 3000, "a", "four"},
	{2, 900, "c", "five"}, // older than its predecessor: stays after it
	{1, 2000, "b", "six"},
	{2, 2000, "c", "seven"}, // ties with b's six: partition 1 first
	{0, 4000, "a", "eight"},
	{1, 5000, "b", "nine"},
}

func setupSentences(t *testing.T) string {
	addr := startBroker(t, map[string]int32{"sentences": 3})
	produce(t, addr, "sentences", "", sentences[:6]...)
	produce(t, addr, "sentences", "txn", sentences[6:]...)
	return addr
}

func TestCaptureOrder(t *testing.T) {
	addr := setupSentences(t)
	all := []string{
		"sentences[0]@0", // 1000
		"sentences[2]@0", // 1200
		"sentences[2]@1", // 900, behind its partition's head
		"sentences[1]@0", // 1500
		"sentences[1]@1", // 2000, tie: partition 1 first
		"sentences[2]@2", // 2000
		"sentences[0]@1", // 3000
		"sentences[0]@2", // 4000
		"sentences[1]@2", // 5000
	}
	tests := []struct {
		name       string
		from, to   string
		limit      int
		want       []string
		wantRanges []string
	}{
		{name: "all", want: all,
			wantRanges: []string{"sentences[0] 0-4 3", "sentences[1] 0-4 3", "sentences[2] 0-4 3"}},
		{name: "limit", limit: 4, want: all[:4],
			wantRanges: []string{"sentences[0] 0-4 1", "sentences[1] 0-4 1", "sentences[2] 0-4 2"}},
		// At or after 1500: p0 from offset 1, p1 from 0, p2 from 2.
		{name: "from time", from: "1500", want: []string{"sentences[1]@0", "sentences[1]@1", "sentences[2]@2", "sentences[0]@1", "sentences[0]@2", "sentences[1]@2"},
			wantRanges: []string{"sentences[0] 1-4 2", "sentences[1] 0-4 3", "sentences[2] 2-4 1"}},
		{name: "from RFC 3339", from: "1970-01-01T00:00:01.5Z", limit: 2, want: []string{"sentences[1]@0", "sentences[1]@1"},
			wantRanges: []string{"sentences[0] 1-4 0", "sentences[1] 0-4 2", "sentences[2] 2-4 0"}},
		{name: "offsets", from: "offset:1", to: "offset:2", want: []string{"sentences[2]@1", "sentences[1]@1", "sentences[0]@1"},
			wantRanges: []string{"sentences[0] 1-2 1", "sentences[1] 1-2 1", "sentences[2] 1-2 1"}},
		{name: "to time", to: "1500", want: []string{"sentences[0]@0", "sentences[2]@0", "sentences[2]@1"},
			wantRanges: []string{"sentences[0] 0-1 1", "sentences[1] 0-0 0", "sentences[2] 0-2 2"}},
		{name: "from end", from: "end", want: []string{},
			wantRanges: []string{"sentences[0] 4-4 0", "sentences[1] 4-4 0", "sentences[2] 4-4 0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := RecordOptions{Brokers: []string{addr}, Topics: []string{"sentences"}, Limit: tt.limit}
			var err error
			if opts.From, err = ParseBound(tt.from); err != nil {
				t.Fatal(err)
			}
			if opts.To, err = ParseBound(tt.to); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := gocontext.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			rec, err := Capture(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			if got := sources(rec.Records); !slices.Equal(got, tt.want) {
				t.Errorf("order:\n got %v\nwant %v", got, tt.want)
			}
			var ranges []string
			for _, r := range rec.Ranges {
				ranges = append(ranges, fmt.Sprintf("%s[%d] %d-%d %d", r.Topic, r.Partition, r.From, r.To, r.Records))
			}
			if !slices.Equal(ranges, tt.wantRanges) {
				t.Errorf("ranges:\n got %v\nwant %v", ranges, tt.wantRanges)
			}
		})
	}
}

func TestCaptureMergesTopics(t *testing.T) {
	addr := startBroker(t, map[string]int32{"sentences": 3, "more": 1})
	produce(t, addr, "sentences", "", sentences[:3]...)
	produce(t, addr, "more", "", produced{0, 1000, "m", "tie with sentences[0]@0"}, produced{0, 1100, "m", "x"})
	rec, err := Capture(t.Context(), RecordOptions{Brokers: []string{addr}, Topics: []string{"sentences", "more"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"more[0]@0", "sentences[0]@0", "more[0]@1", "sentences[2]@0", "sentences[1]@0"}
	if got := sources(rec.Records); !slices.Equal(got, want) {
		t.Errorf("order:\n got %v\nwant %v", got, want)
	}
}

func TestCaptureUnknownTopic(t *testing.T) {
	addr := startBroker(t, map[string]int32{"sentences": 1})
	_, err := Capture(t.Context(), RecordOptions{Brokers: []string{addr}, Topics: []string{"nope"}})
	if err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("Capture of a missing topic: %v, want an error naming it", err)
	}
}

// TestRecordedFixtureReplays records sentences, inline and as a records
// file, for the registered uppercase topology, fills in the expectations
// with --update's machinery and replays them.
func TestRecordedFixtureReplays(t *testing.T) {
	addr := setupSentences(t)
	rec, err := Capture(t.Context(), RecordOptions{Brokers: []string{addr}, Topics: []string{"sentences"}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var inline, viaFile, lines bytes.Buffer
	if err := rec.WriteFixture(&inline, FixtureOptions{Topology: "uppercase"}); err != nil {
		t.Fatal(err)
	}
	if err := rec.WriteFixture(&viaFile, FixtureOptions{Topology: "uppercase", RecordsFile: "sentences.jsonl"}); err != nil {
		t.Fatal(err)
	}
	if err := rec.WriteRecords(&lines); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "record/sentences.fixture.yaml", inline.String())
	checkGolden(t, "record/file.fixture.yaml", viaFile.String())
	checkGolden(t, "record/sentences.jsonl", lines.String())

	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("sentences.jsonl", lines.Bytes())
	paths := []string{write("inline.fixture.yaml", inline.Bytes()), write("file.fixture.yaml", viaFile.Bytes())}
	var results []*Result
	for _, p := range paths {
		res := RunFile(p)
		if res.Status != Fail {
			t.Fatalf("%s: status %s, want fail (no expectations yet): %v", p, res.Status, res.Err)
		}
		results = append(results, res)
	}
	if _, err := UpdateAll(results, UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var outputs []string
	for _, p := range paths {
		res := RunFile(p)
		if res.Status != Pass {
			t.Fatalf("%s after update: status %s: %v", p, res.Status, res.Err)
		}
		data, _ := os.ReadFile(p)
		outputs = append(outputs, string(data[bytes.Index(data, []byte("\nexpect:")):]))
	}
	if outputs[0] != outputs[1] {
		t.Errorf("inline and records-file fixtures expect different outputs:\n%s\n%s", outputs[0], outputs[1])
	}
	if !strings.Contains(outputs[0], `value: ONE`) || strings.Count(outputs[0], "key:") != len(sentences) {
		t.Errorf("expected outputs:\n%s", outputs[0])
	}
}

// FuzzRecordedRoundTrip checks that whatever bytes a topic holds, the
// recorded fixture parses back to the same key, value and header, or
// WriteFixture refuses the record.
func FuzzRecordedRoundTrip(f *testing.F) {
	f.Add([]byte("k"), []byte("v"), "h")
	f.Add([]byte{0xff}, []byte("a\x00\u2028"), "\x7f")
	f.Fuzz(func(t *testing.T, key, value []byte, header string) {
		r := Recorded{Topic: "t", Key: key, Value: value, Timestamp: 1,
			Headers: []kgo.RecordHeader{{Key: header, Value: value}}}
		var b bytes.Buffer
		if err := (&Recording{Records: []Recorded{r}}).WriteFixture(&b, FixtureOptions{Topology: "x"}); err != nil {
			return
		}
		fx, err := Parse("f.fixture.yaml", b.Bytes())
		if err != nil {
			t.Fatalf("%v\n%s", err, b.Bytes())
		}
		got := fx.Steps[0].Record
		same := func(v Value, want []byte) bool {
			if v.Kind == Null {
				return want == nil
			}
			return v.Kind == String && v.Text == string(want) && want != nil
		}
		if !same(got.Key, key) || !same(got.Value, value) || len(got.Headers) != 1 || got.Headers[0].Key != header || !bytes.Equal(got.Headers[0].Value, value) {
			t.Fatalf("round trip of key %q value %q header %q:\n%s", key, value, header, b.Bytes())
		}
	})
}

// TestRecordedJSONReplaysAsDocuments records JSON values for a topology
// that reads them with the json serde: with the topology's serdes the
// fixture holds the documents as mappings, not as quoted strings, and the
// replay pipes the same documents.
func TestRecordedJSONReplaysAsDocuments(t *testing.T) {
	addr := startBroker(t, map[string]int32{"orders": 1, "customers": 1})
	produce(t, addr, "customers", "", produced{0, 1000, "c1", `{"name":"Alice","tier":"gold"}`})
	produce(t, addr, "orders", "", produced{0, 2000, "c1", `{"item":"tea","qty":2}`}, produced{0, 3000, "c9", `{"item":"cake","qty":1}`})
	rec, err := Capture(t.Context(), RecordOptions{Brokers: []string{addr}, Topics: []string{"customers", "orders"}})
	if err != nil {
		t.Fatal(err)
	}
	topo, err := filepath.Abs("../fixtures/enrich-orders/topology.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f, err := topofile.Resolve(topo, ".")
	if err != nil {
		t.Fatal(err)
	}
	serdes, err := SourceSerdes(f)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := rec.WriteFixture(&b, FixtureOptions{Topology: topo, Serdes: serdes}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `value: {"item":"tea","qty":2}`) || !strings.Contains(b.String(), `key: "c1"`) {
		t.Fatalf("fixture does not hold the documents as mappings:\n%s", b.String())
	}
	path := filepath.Join(t.TempDir(), "orders.fixture.yaml")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	res := RunFile(path)
	if res.Err != nil {
		t.Fatalf("replay: %v", res.Err)
	}
	if _, err := UpdateAll([]*Result{res}, UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	updated, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"{key: c1, value: {customer: Alice, item: tea, qty: 2, tier: gold}",
		"{key: c9, value: {customer: null, item: cake, qty: 1, tier: unknown}",
	} {
		if !strings.Contains(string(updated), want) {
			t.Errorf("expectations lack %s:\n%s", want, updated)
		}
	}
	if res := RunFile(path); res.Status != Pass {
		t.Fatalf("after update: %s %v", res.Status, res.Err)
	}
}
