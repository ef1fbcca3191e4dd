package topics_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine/broker"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/topofile"
	"github.com/stoatflow/stoatctl/replay"
	"github.com/stoatflow/stoatctl/topics"

	_ "github.com/stoatflow/stoatctl/fixtures/examples" // word-count
)

func be64(n int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(n)) }

// produce writes records with a client of its own; txn, when not empty,
// writes them in one transaction of that id, aborted unless commit.
func produce(t *testing.T, addr, txn string, commit bool, rs ...*kgo.Record) {
	t.Helper()
	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner())}
	if txn != "" {
		opts = append(opts, kgo.TransactionalID(txn))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := t.Context()
	if txn != "" {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if txn != "" {
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
}

func rec(p int32, ts int64, key, value []byte) *kgo.Record {
	return &kgo.Record{Topic: "t", Partition: p, Key: key, Value: value, Timestamp: time.UnixMilli(ts)}
}

// line is a message as one comparable line: partition@offset, timestamp,
// key and value as JSON.
func line(m topics.Message) string {
	k, _ := json.Marshal(m.Key)
	v, _ := json.Marshal(m.Value)
	var b strings.Builder
	b.WriteString(strings.Join([]string{itoa(int64(m.Partition)) + "@" + itoa(m.Offset), itoa(m.Timestamp), string(k), string(v)}, " "))
	for _, h := range m.Headers {
		hv, _ := json.Marshal(h.Value)
		b.WriteString(" " + h.Key + "=" + string(hv))
	}
	return b.String()
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func TestRead(t *testing.T) {
	str, long := serde.Erase(serde.String()), serde.Erase(serde.Int64())
	// Two partitions; partition 1 also holds an aborted transaction, whose
	// record and markers take offsets 1 and 2.
	seed := func(t *testing.T, addr string) {
		produce(t, addr, "", false,
			rec(0, 1000, []byte("a"), be64(1)),
			rec(0, 3000, []byte("b"), be64(2)),
			rec(1, 2000, []byte("c"), be64(3)),
			&kgo.Record{Topic: "t", Partition: 0, Key: []byte("d"), Value: be64(4), Timestamp: time.UnixMilli(4000),
				Headers: []kgo.RecordHeader{{Key: "src", Value: []byte("x")}, {Key: "bin", Value: []byte{0xff}}}},
		)
		produce(t, addr, "aborter", false, rec(1, 2500, []byte("aborted"), be64(99)))
		produce(t, addr, "", false, rec(1, 5000, nil, nil))
	}
	tests := []struct {
		name    string
		opts    topics.ReadOptions
		want    []string
		wantErr string
	}{
		{name: "bytes, merged by timestamp, aborted left out", want: []string{
			`0@0 1000 "a" {"base64":"AAAAAAAAAAE="}`,
			`1@0 2000 "c" {"base64":"AAAAAAAAAAM="}`,
			`0@1 3000 "b" {"base64":"AAAAAAAAAAI="}`,
			`0@2 4000 "d" {"base64":"AAAAAAAAAAQ="} src="x" bin={"base64":"/w=="}`,
			`1@3 5000 null null`,
		}},
		{name: "serdes", opts: topics.ReadOptions{Serdes: topics.Serdes{Key: str, Value: long}}, want: []string{
			`0@0 1000 "a" 1`, `1@0 2000 "c" 3`, `0@1 3000 "b" 2`, `0@2 4000 "d" 4 src="x" bin={"base64":"/w=="}`, `1@3 5000 null null`,
		}},
		{name: "limit", opts: topics.ReadOptions{Limit: 2, Serdes: topics.Serdes{Key: str, Value: long}}, want: []string{
			`0@0 1000 "a" 1`, `1@0 2000 "c" 3`,
		}},
		{name: "from a time", opts: topics.ReadOptions{From: replay.Bound{Kind: replay.BoundTime, Millis: 2500}, Serdes: topics.Serdes{Key: str, Value: long}}, want: []string{
			`0@1 3000 "b" 2`, `0@2 4000 "d" 4 src="x" bin={"base64":"/w=="}`, `1@3 5000 null null`,
		}},
		{name: "to an offset", opts: topics.ReadOptions{To: replay.Bound{Kind: replay.BoundOffset, Offset: 1}, Serdes: topics.Serdes{Key: str, Value: long}}, want: []string{
			`0@0 1000 "a" 1`, `1@0 2000 "c" 3`,
		}},
		{name: "undecodable key", opts: topics.ReadOptions{Serdes: topics.Serdes{Key: long, Value: long}},
			wantErr: "t[0]@0: key: deserialize with serde int64: topic t: size of data is 1, expected 8"},
		{name: "no such topic", opts: topics.ReadOptions{Topic: "nope"}, wantErr: "read topic nope on 127.0.0.1:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, a := connect(t, broker.Options{SeedTopics: map[string]int32{"t": 2}})
			seed(t, a.Addr())
			if tc.opts.Topic == "" {
				tc.opts.Topic = "t"
			}
			var got []string
			err := a.Read(t.Context(), tc.opts, func(m topics.Message) error { got = append(got, line(m)); return nil })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Read: %v, want an error containing %q (read %q)", err, tc.wantErr, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("Read gave\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestReadDecodeErrorNamesTheRecord(t *testing.T) {
	_, a := connect(t, broker.Options{SeedTopics: map[string]int32{"t": 1}})
	produce(t, a.Addr(), "", false, rec(0, 1, []byte("k"), be64(1)), rec(0, 2, []byte("k"), []byte("abc")))
	var got []string
	err := a.Read(t.Context(), topics.ReadOptions{Topic: "t", Serdes: topics.Serdes{Value: serde.Erase(serde.Int64())}},
		func(m topics.Message) error { got = append(got, line(m)); return nil })
	var de *topics.DecodeError
	if !errors.As(err, &de) || de.Topic != "t" || de.Partition != 0 || de.Offset != 1 || de.Part != "value" || de.Serde != "int64" {
		t.Fatalf("Read: %v (%#v), want a DecodeError for t[0]@1's value", err, de)
	}
	if want := "t[0]@1: value: deserialize with serde int64: "; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q does not start with %q", err, want)
	}
	if len(got) != 1 {
		t.Errorf("records before the bad one: %q, want the first", got)
	}
}

func TestReadFollow(t *testing.T) {
	_, a := connect(t, broker.Options{SeedTopics: map[string]int32{"t": 2}})
	produce(t, a.Addr(), "", false, rec(0, 1, []byte("old"), nil))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	seen := make(chan string, 10)
	done := make(chan error, 1)
	go func() {
		done <- a.Read(ctx, topics.ReadOptions{Topic: "t", Follow: true, Limit: 3},
			func(m topics.Message) error { seen <- line(m); return nil })
	}()
	if got := <-seen; got != `0@0 1 "old" null` {
		t.Fatalf("first record %s", got)
	}
	// A record of an aborted transaction is never followed; committed
	// ones are.
	produce(t, a.Addr(), "f", false, rec(1, 2, []byte("aborted"), nil))
	produce(t, a.Addr(), "f", true, rec(1, 3, []byte("new1"), nil), rec(0, 4, []byte("new0"), nil))
	if err := <-done; err != nil {
		t.Fatalf("Read -f: %v", err)
	}
	close(seen)
	var got []string
	for s := range seen {
		got = append(got, s)
	}
	want := map[string]bool{`1@2 3 "new1" null`: true, `0@1 4 "new0" null`: true}
	if len(got) != 2 || !want[got[0]] || !want[got[1]] {
		t.Errorf("followed %q, want new1 at 1@2 and new0 at 0@1", got)
	}

	// Follow stops without an error when its context ends.
	// The callback ends it at the first record, while it follows.
	ctx2, cancel2 := context.WithCancel(t.Context())
	defer cancel2()
	if err := a.Read(ctx2, topics.ReadOptions{Topic: "t", Follow: true}, func(topics.Message) error { cancel2(); return nil }); err != nil {
		t.Errorf("Read -f, cancelled: %v, want nil", err)
	}
	if err := a.Read(t.Context(), topics.ReadOptions{Topic: "t", Follow: true, To: replay.Bound{Kind: replay.BoundEnd}}, nil); err == nil {
		t.Error("Read -f with an end succeeded")
	}
}

func TestTopologySerdes(t *testing.T) {
	wc, err := topofile.Resolve("word-count", ".")
	if err != nil {
		t.Fatal(err)
	}
	clicks, err := topofile.Resolve("../fixtures/clicks-per-minute/topology.yaml", ".")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		file       *topofile.File
		topic      string
		key, value []byte
		want       string // key and value decoded, as JSON
		wantErr    string
	}{
		{file: wc, topic: "word-counts", key: []byte("fox"), value: be64(2), want: `"fox" 2`},
		{file: wc, topic: "lines", key: []byte("1"), value: []byte("the fox"), want: `"1" "the fox"`},
		{file: clicks, topic: "clicks-per-minute", key: append([]byte("/home"), be64(60_000)...), value: be64(3),
			want: `{"end":120000,"key":"/home","start":60000} 3`},
		{file: clicks, topic: "clicks", key: []byte("u1"), value: []byte(`{"page":"/home","ts":1}`), want: `"u1" {"page":"/home","ts":1}`},
		{file: wc, topic: "word-count-counts-changelog", wantErr: "topology word-count: topic word-count-counts-changelog: the topology neither reads nor writes the topic (it has lines, word-counts)"},
	}
	for _, tc := range tests {
		t.Run(tc.topic, func(t *testing.T) {
			sd, err := topics.TopologySerdes(tc.file, tc.topic)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr || !errors.Is(err, topics.ErrTopicNotInTopology) {
					t.Fatalf("TopologySerdes: %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			k, err := replay.Decode(sd.Key, tc.topic, tc.key)
			if err != nil {
				t.Fatal(err)
			}
			v, err := replay.Decode(sd.Value, tc.topic, tc.value)
			if err != nil {
				t.Fatal(err)
			}
			kj, _ := json.Marshal(k)
			vj, _ := json.Marshal(v)
			if got := string(kj) + " " + string(vj); got != tc.want {
				t.Errorf("decoded %s, want %s", got, tc.want)
			}
		})
	}
}
