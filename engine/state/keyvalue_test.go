package state

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/stoatflow/stoatctl/engine/serde"
)

// Local serdes keep these tests independent of the built-ins in package
// serde; they use the same layouts as Kafka's (UTF-8, big-endian int64).

type stringSerde struct{ topics *[]string }

func (stringSerde) Name() string { return "string" }

func (s stringSerde) Serialize(topic string, v string) ([]byte, error) {
	if s.topics != nil {
		*s.topics = append(*s.topics, topic)
	}
	return []byte(v), nil
}

func (s stringSerde) Deserialize(topic string, data []byte) (string, error) {
	if s.topics != nil {
		*s.topics = append(*s.topics, topic)
	}
	return string(data), nil
}

type int64Serde struct{}

func (int64Serde) Name() string { return "int64" }

func (int64Serde) Serialize(_ string, v int64) ([]byte, error) {
	return binary.BigEndian.AppendUint64(nil, uint64(v)), nil
}

func (int64Serde) Deserialize(_ string, data []byte) (int64, error) {
	if len(data) != 8 {
		return 0, fmt.Errorf("int64 needs 8 bytes, got %d", len(data))
	}
	return int64(binary.BigEndian.Uint64(data)), nil
}

// ptrSerde gives a nillable value type for the put-null-deletes rule.
type ptrSerde struct{}

func (ptrSerde) Name() string { return "ptr-int64" }

func (ptrSerde) Serialize(topic string, v *int64) ([]byte, error) {
	return int64Serde{}.Serialize(topic, *v)
}

func (ptrSerde) Deserialize(topic string, data []byte) (*int64, error) {
	v, err := int64Serde{}.Deserialize(topic, data)
	return &v, err
}

var errSerde = errors.New("serde failed")

type failingSerde struct{}

func (failingSerde) Name() string                              { return "failing" }
func (failingSerde) Serialize(string, int64) ([]byte, error)   { return nil, errSerde }
func (failingSerde) Deserialize(string, []byte) (int64, error) { return 0, errSerde }

var (
	_ serde.Serde[string] = stringSerde{}
	_ serde.Serde[int64]  = int64Serde{}
)

type loggedChange struct {
	Store      string
	Key, Value []byte
	Timestamp  int64
}

// recordingContext keeps every change a store logs.
type recordingContext struct {
	ts      int64
	noTopic bool
	logErr  error
	changes []loggedChange
}

func (*recordingContext) ApplicationID() string { return "app" }

func (c *recordingContext) ChangelogTopic(store string) string {
	if c.noTopic {
		return ""
	}
	return "app-" + store + "-changelog"
}

func (c *recordingContext) LogChange(store string, key, value []byte, ts int64, headers []Header) error {
	if c.logErr != nil {
		return c.logErr
	}
	if headers != nil {
		panic("unexpected headers")
	}
	c.changes = append(c.changes, loggedChange{store, key, value, ts})
	return nil
}

func (c *recordingContext) RecordTimestamp() int64 { return c.ts }

func (c *recordingContext) take() []loggedChange {
	out := c.changes
	c.changes = nil
	return out
}

func int64Bytes(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

func buildInit[S any](t *testing.T, sb StoreBuilder, ctx Context) S {
	t.Helper()
	st, err := sb.Build()
	if err != nil {
		t.Fatal(err)
	}
	typed, ok := st.(S)
	if !ok {
		t.Fatalf("built %T, want %T", st, *new(S))
	}
	if ctx != nil {
		if err := st.Init(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return typed
}

func newKV(t *testing.T, ctx Context) KeyValueStore[string, int64] {
	return buildInit[KeyValueStore[string, int64]](t,
		KeyValueStoreBuilder("counts", serde.Serde[string](stringSerde{}), serde.Serde[int64](int64Serde{}), InMemory()), ctx)
}

func newTS(t *testing.T, ctx Context) TimestampedKeyValueStore[string, int64] {
	return buildInit[TimestampedKeyValueStore[string, int64]](t,
		TimestampedKeyValueStoreBuilder("latest", serde.Serde[string](stringSerde{}), serde.Serde[int64](int64Serde{}), InMemory()), ctx)
}

func storeBytes(t *testing.T, s any, key string) []byte {
	t.Helper()
	v, err := s.(BytesBacked).Bytes().Get([]byte(key))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func checkChanges(t *testing.T, got, want []loggedChange) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("changelog =\n  %+v\nwant\n  %+v", got, want)
	}
}

func TestBuilderDescription(t *testing.T) {
	cfg := map[string]string{"retention.ms": "100"}
	kb := KeyValueStoreBuilder("counts", serde.Serde[string](stringSerde{}), serde.Serde[int64](int64Serde{}), InMemory())
	tb := TimestampedKeyValueStoreBuilder("latest", serde.Serde[string](stringSerde{}), serde.Serde[int64](int64Serde{}), InMemory())
	var _ StoreBuilder = kb
	var _ StoreBuilder = tb

	tests := []struct {
		name        string
		b           StoreBuilder
		wantName    string
		wantKind    Kind
		wantLogging bool
		wantConfig  map[string]string
	}{
		{"key-value default", kb, "counts", KindKeyValue, true, nil},
		{"timestamped default", tb, "latest", KindTimestampedKeyValue, true, nil},
		{"logging config", KeyValueStoreBuilder("c", serde.Serde[string](stringSerde{}), serde.Serde[int64](int64Serde{}), InMemory()).WithLoggingEnabled(cfg), "c", KindKeyValue, true, cfg},
		{"logging disabled drops config", TimestampedKeyValueStoreBuilder("t", serde.Serde[string](stringSerde{}), serde.Serde[int64](int64Serde{}), InMemory()).WithLoggingEnabled(cfg).WithLoggingDisabled(), "t", KindTimestampedKeyValue, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.b
			if b.Name() != tt.wantName || b.Kind() != tt.wantKind || b.Backend() != "in-memory" ||
				b.LoggingEnabled() != tt.wantLogging || b.KeySerdeName() != "string" || b.ValueSerdeName() != "int64" {
				t.Fatalf("description = %q %q %q %v %q %q", b.Name(), b.Kind(), b.Backend(), b.LoggingEnabled(), b.KeySerdeName(), b.ValueSerdeName())
			}
			if got := b.LogConfig(); !reflect.DeepEqual(got, tt.wantConfig) && (len(got) != 0 || len(tt.wantConfig) != 0) {
				t.Fatalf("LogConfig() = %v, want %v", got, tt.wantConfig)
			}
		})
	}
	// The builder keeps its own copy of the config.
	b := KeyValueStoreBuilder("c", serde.Serde[string](stringSerde{}), serde.Serde[int64](int64Serde{}), InMemory()).WithLoggingEnabled(cfg)
	cfg["retention.ms"] = "1"
	b.LogConfig()["retention.ms"] = "2"
	if got := b.LogConfig()["retention.ms"]; got != "100" {
		t.Fatalf("LogConfig aliased: %q", got)
	}
}

func TestBuildErrors(t *testing.T) {
	s, i := serde.Serde[string](stringSerde{}), serde.Serde[int64](int64Serde{})
	tests := []struct {
		name string
		b    StoreBuilder
	}{
		{"empty name", KeyValueStoreBuilder("", s, i, InMemory())},
		{"nil key serde", KeyValueStoreBuilder[string, int64]("c", nil, i, InMemory())},
		{"nil value serde", TimestampedKeyValueStoreBuilder[string, int64]("c", s, nil, InMemory())},
		{"nil supplier", TimestampedKeyValueStoreBuilder("c", s, i, nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if st, err := tt.b.Build(); err == nil {
				t.Fatalf("Build() = %T, want error", st)
			}
		})
	}
}

func TestKeyValueStoreChangelogLayout(t *testing.T) {
	ctx := &recordingContext{ts: 1000}
	s := newKV(t, ctx)
	a := []byte{0x61}

	tests := []struct {
		name      string
		do        func() error
		wantStore []byte // bytes under key "a" afterwards
		wantLog   []loggedChange
	}{
		{"put", func() error { return s.Put("a", 2) },
			int64Bytes(2),
			[]loggedChange{{"counts", a, []byte{0, 0, 0, 0, 0, 0, 0, 2}, 1000}}},
		{"put if absent when present logs nothing", func() error { _, _, err := s.PutIfAbsent("a", 5); return err },
			int64Bytes(2), nil},
		{"delete logs tombstone", func() error { _, _, err := s.Delete("a"); return err },
			nil,
			[]loggedChange{{"counts", a, nil, 1000}}},
		{"delete of absent key still logs", func() error { _, _, err := s.Delete("a"); return err },
			nil,
			[]loggedChange{{"counts", a, nil, 1000}}},
		{"put if absent when absent", func() error { _, _, err := s.PutIfAbsent("a", -1); return err },
			[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
			[]loggedChange{{"counts", a, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 1000}}},
		{"put all", func() error {
			return s.PutAll([]KeyValue[string, int64]{{Key: "a", Value: 3}, {Key: "bc", Value: 4}})
		},
			int64Bytes(3),
			[]loggedChange{
				{"counts", a, int64Bytes(3), 1000},
				{"counts", []byte("bc"), int64Bytes(4), 1000},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.do(); err != nil {
				t.Fatal(err)
			}
			if got := storeBytes(t, s, "a"); !bytes.Equal(got, tt.wantStore) {
				t.Fatalf("store bytes = %x, want %x", got, tt.wantStore)
			}
			checkChanges(t, ctx.take(), tt.wantLog)
		})
	}
}

func TestKeyValueStoreRoundTrip(t *testing.T) {
	ctx := &recordingContext{ts: 5}
	s := newKV(t, ctx)
	if _, found, err := s.Get("a"); err != nil || found {
		t.Fatalf("Get(missing) found=%v err=%v", found, err)
	}
	for i, k := range []string{"b", "a", "d", "c"} {
		if err := s.Put(k, int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	if v, found, err := s.Get("d"); err != nil || !found || v != 2 {
		t.Fatalf("Get(d) = %d, %v, %v", v, found, err)
	}
	if v, found, err := s.PutIfAbsent("d", 9); err != nil || !found || v != 2 {
		t.Fatalf("PutIfAbsent(d) = %d, %v, %v", v, found, err)
	}
	if v, found, err := s.Delete("d"); err != nil || !found || v != 2 {
		t.Fatalf("Delete(d) = %d, %v, %v", v, found, err)
	}
	if _, found, err := s.Delete("d"); err != nil || found {
		t.Fatalf("Delete(d) again found=%v err=%v", found, err)
	}
	if n, err := s.ApproximateNumEntries(); err != nil || n != 3 {
		t.Fatalf("ApproximateNumEntries() = %d, %v", n, err)
	}

	drain := func(it KeyValueIterator[string, int64], err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		defer it.Close()
		var out string
		for it.Next() {
			out += fmt.Sprintf("%s=%d ", it.Key(), it.Value())
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	scans := []struct {
		name string
		got  string
		want string
	}{
		{"all", drain(s.All()), "a=1 b=0 c=3 "},
		{"reverse all", drain(s.ReverseAll()), "c=3 b=0 a=1 "},
		{"range", drain(s.Range("b", "c")), "b=0 c=3 "},
		{"reverse range", drain(s.ReverseRange("a", "b")), "b=0 a=1 "},
		{"inverted range", drain(s.Range("c", "a")), ""},
		{"prefix", drain(s.PrefixScan([]byte("c"))), "c=3 "},
	}
	for _, sc := range scans {
		if sc.got != sc.want {
			t.Errorf("%s = %q, want %q", sc.name, sc.got, sc.want)
		}
	}
}

func TestKeyValueStorePutNullDeletes(t *testing.T) {
	ctx := &recordingContext{ts: 9}
	s := buildInit[KeyValueStore[string, *int64]](t,
		KeyValueStoreBuilder("p", serde.Serde[string](stringSerde{}), serde.Serde[*int64](ptrSerde{}), InMemory()), ctx)
	two := int64(2)
	if err := s.Put("a", &two); err != nil {
		t.Fatal(err)
	}
	if err := s.Put("a", nil); err != nil {
		t.Fatal(err)
	}
	if _, found, err := s.Get("a"); err != nil || found {
		t.Fatalf("Get after Put(nil): found=%v err=%v", found, err)
	}
	checkChanges(t, ctx.take(), []loggedChange{
		{"p", []byte("a"), int64Bytes(2), 9},
		{"p", []byte("a"), nil, 9},
	})

	// An interface V is null only when the interface itself is nil.
	is := buildInit[KeyValueStore[string, any]](t,
		KeyValueStoreBuilder("i", serde.Serde[string](stringSerde{}), serde.Serde[any](anySerde{}), InMemory()), ctx)
	if err := is.Put("a", "x"); err != nil {
		t.Fatal(err)
	}
	if err := is.Put("a", nil); err != nil {
		t.Fatal(err)
	}
	if _, found, err := is.Get("a"); err != nil || found {
		t.Fatalf("Get after Put(nil interface): found=%v err=%v", found, err)
	}
}

type anySerde struct{}

func (anySerde) Name() string { return "any-string" }
func (anySerde) Serialize(_ string, v any) ([]byte, error) {
	return []byte(v.(string)), nil
}
func (anySerde) Deserialize(_ string, data []byte) (any, error) { return string(data), nil }

func TestTimestampedStoreChangelogLayout(t *testing.T) {
	ctx := &recordingContext{ts: 7}
	s := newTS(t, ctx)
	a := []byte{0x61}
	tests := []struct {
		name      string
		do        func() error
		wantStore []byte
		wantLog   []loggedChange
	}{
		{"put keeps timestamp before value, logs plain value at value timestamp",
			func() error { return s.Put("a", ValueAndTimestamp[int64]{Value: 2, Timestamp: 42}) },
			[]byte{0, 0, 0, 0, 0, 0, 0, 0x2a, 0, 0, 0, 0, 0, 0, 0, 2},
			[]loggedChange{{"latest", a, []byte{0, 0, 0, 0, 0, 0, 0, 2}, 42}}},
		{"overwrite",
			func() error { return s.Put("a", ValueAndTimestamp[int64]{Value: 258, Timestamp: 1 << 40}) },
			[]byte{0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2},
			[]loggedChange{{"latest", a, []byte{0, 0, 0, 0, 0, 0, 1, 2}, 1 << 40}}},
		{"delete logs tombstone at record timestamp",
			func() error { _, _, err := s.Delete("a"); return err },
			nil,
			[]loggedChange{{"latest", a, nil, 7}}},
		{"put if absent",
			func() error {
				_, _, err := s.PutIfAbsent("a", ValueAndTimestamp[int64]{Value: 1, Timestamp: 3})
				return err
			},
			[]byte{0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 1},
			[]loggedChange{{"latest", a, int64Bytes(1), 3}}},
		{"put all",
			func() error {
				return s.PutAll([]KeyValue[string, ValueAndTimestamp[int64]]{
					{Key: "a", Value: ValueAndTimestamp[int64]{Value: 4, Timestamp: 11}},
				})
			},
			[]byte{0, 0, 0, 0, 0, 0, 0, 11, 0, 0, 0, 0, 0, 0, 0, 4},
			[]loggedChange{{"latest", a, int64Bytes(4), 11}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.do(); err != nil {
				t.Fatal(err)
			}
			if got := storeBytes(t, s, "a"); !bytes.Equal(got, tt.wantStore) {
				t.Fatalf("store bytes = %x, want %x", got, tt.wantStore)
			}
			checkChanges(t, ctx.take(), tt.wantLog)
		})
	}
}

func TestTimestampedStoreRoundTrip(t *testing.T) {
	ctx := &recordingContext{ts: 7}
	s := newTS(t, ctx)
	if err := s.Put("a", ValueAndTimestamp[int64]{Value: 2, Timestamp: 42}); err != nil {
		t.Fatal(err)
	}
	if err := s.Put("b", ValueAndTimestamp[int64]{Value: -3, Timestamp: -1}); err != nil {
		t.Fatal(err)
	}
	v, found, err := s.Get("a")
	if err != nil || !found || v != (ValueAndTimestamp[int64]{Value: 2, Timestamp: 42}) {
		t.Fatalf("Get(a) = %+v, %v, %v", v, found, err)
	}
	it, err := s.ReverseAll()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for it.Next() {
		got = append(got, fmt.Sprintf("%s=%d@%d", it.Key(), it.Value().Value, it.Value().Timestamp))
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	it.Close()
	if want := []string{"b=-3@-1", "a=2@42"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("ReverseAll() = %v, want %v", got, want)
	}
}

func TestTimestampedStorePutNullDeletes(t *testing.T) {
	ctx := &recordingContext{ts: 7}
	s := buildInit[TimestampedKeyValueStore[string, *int64]](t,
		TimestampedKeyValueStoreBuilder("p", serde.Serde[string](stringSerde{}), serde.Serde[*int64](ptrSerde{}), InMemory()), ctx)
	one := int64(1)
	if err := s.Put("a", ValueAndTimestamp[*int64]{Value: &one, Timestamp: 3}); err != nil {
		t.Fatal(err)
	}
	if err := s.Put("a", ValueAndTimestamp[*int64]{Value: nil, Timestamp: 99}); err != nil {
		t.Fatal(err)
	}
	if _, found, err := s.Get("a"); err != nil || found {
		t.Fatalf("Get after null put: found=%v err=%v", found, err)
	}
	checkChanges(t, ctx.take(), []loggedChange{
		{"p", []byte("a"), int64Bytes(1), 3},
		{"p", []byte("a"), nil, 7},
	})
}

func TestSerdeTopic(t *testing.T) {
	for _, logging := range []bool{true, false} {
		t.Run(fmt.Sprintf("logging=%v", logging), func(t *testing.T) {
			var topics []string
			kb := KeyValueStoreBuilder("counts", serde.Serde[string](stringSerde{topics: &topics}), serde.Serde[int64](int64Serde{}), InMemory())
			want := "app-counts-changelog"
			if !logging {
				kb.WithLoggingDisabled()
				want = "counts"
			}
			ctx := &recordingContext{}
			s := buildInit[KeyValueStore[string, int64]](t, kb, ctx)
			if err := s.Put("a", 1); err != nil {
				t.Fatal(err)
			}
			it, err := s.All()
			if err != nil {
				t.Fatal(err)
			}
			for it.Next() {
				it.Key()
			}
			it.Close()
			if len(topics) != 2 || topics[0] != want || topics[1] != want {
				t.Fatalf("serde topics = %v, want %q twice", topics, want)
			}
			if changes := ctx.take(); logging != (len(changes) == 1) {
				t.Fatalf("logging=%v but logged %v", logging, changes)
			}
		})
	}
}

func TestRestore(t *testing.T) {
	records := []ChangelogRecord{
		{Key: []byte("a"), Value: int64Bytes(1), Timestamp: 10},
		{Key: []byte("b"), Value: int64Bytes(2), Timestamp: 20},
		{Key: []byte("a"), Value: nil, Timestamp: 30}, // tombstone
		{Key: []byte("c"), Value: int64Bytes(3), Timestamp: 40},
		{Key: []byte("b"), Value: int64Bytes(5), Timestamp: 50},
	}
	t.Run("key-value", func(t *testing.T) {
		ctx := &recordingContext{}
		s := newKV(t, nil)
		// Restoration runs before Init: migration has no runtime.
		if err := s.(Restorer).Restore(records); err != nil {
			t.Fatal(err)
		}
		if err := s.Init(ctx); err != nil {
			t.Fatal(err)
		}
		want := map[string][]byte{"a": nil, "b": int64Bytes(5), "c": int64Bytes(3)}
		for k, wb := range want {
			if got := storeBytes(t, s, k); !bytes.Equal(got, wb) {
				t.Fatalf("store bytes of %s = %x, want %x", k, got, wb)
			}
		}
		if v, found, err := s.Get("b"); err != nil || !found || v != 5 {
			t.Fatalf("Get(b) = %d, %v, %v", v, found, err)
		}
		checkChanges(t, ctx.take(), nil)
	})
	t.Run("timestamped", func(t *testing.T) {
		ctx := &recordingContext{}
		s := newTS(t, ctx)
		if err := s.(Restorer).Restore(records); err != nil {
			t.Fatal(err)
		}
		want := map[string][]byte{
			"a": nil,
			"b": {0, 0, 0, 0, 0, 0, 0, 50, 0, 0, 0, 0, 0, 0, 0, 5},
			"c": {0, 0, 0, 0, 0, 0, 0, 40, 0, 0, 0, 0, 0, 0, 0, 3},
		}
		for k, wb := range want {
			if got := storeBytes(t, s, k); !bytes.Equal(got, wb) {
				t.Fatalf("store bytes of %s = %x, want %x", k, got, wb)
			}
		}
		if v, _, err := s.Get("c"); err != nil || v != (ValueAndTimestamp[int64]{Value: 3, Timestamp: 40}) {
			t.Fatalf("Get(c) = %+v, %v", v, err)
		}
		checkChanges(t, ctx.take(), nil)
	})
	t.Run("nil key", func(t *testing.T) {
		s := newKV(t, nil)
		err := s.(Restorer).Restore([]ChangelogRecord{{Key: nil, Value: int64Bytes(1)}})
		if !errors.Is(err, ErrNilKey) {
			t.Fatalf("err = %v, want ErrNilKey", err)
		}
	})
}

// TestLoggedChangeReplays checks the two layouts against each other: what a
// store logs, restored into a fresh store, gives back the same bytes.
func TestLoggedChangeReplays(t *testing.T) {
	ctx := &recordingContext{ts: 3}
	s := newTS(t, ctx)
	for i, k := range []string{"x", "y", "x"} {
		if err := s.Put(k, ValueAndTimestamp[int64]{Value: int64(i), Timestamp: int64(100 + i)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := s.Delete("y"); err != nil {
		t.Fatal(err)
	}
	var records []ChangelogRecord
	for _, c := range ctx.take() {
		records = append(records, ChangelogRecord{Key: c.Key, Value: c.Value, Timestamp: c.Timestamp})
	}
	fresh := newTS(t, nil)
	if err := fresh.(Restorer).Restore(records); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"x", "y"} {
		if got, want := storeBytes(t, fresh, k), storeBytes(t, s, k); !bytes.Equal(got, want) {
			t.Fatalf("replayed %s = %x, want %x", k, got, want)
		}
	}
}

func TestTypedStoreErrors(t *testing.T) {
	t.Run("not initialized", func(t *testing.T) {
		s := newKV(t, nil)
		checks := map[string]error{
			"get":    second2(s.Get("a")),
			"put":    s.Put("a", 1),
			"delete": second2(s.Delete("a")),
			"all":    second(s.All()),
			"range":  second(s.Range("a", "b")),
		}
		for op, err := range checks {
			if !errors.Is(err, ErrNotInitialized) {
				t.Errorf("%s before Init: err = %v, want ErrNotInitialized", op, err)
			}
		}
	})
	t.Run("no changelog topic", func(t *testing.T) {
		st, err := KeyValueStoreBuilder("c", serde.Serde[string](stringSerde{}), serde.Serde[int64](int64Serde{}), InMemory()).Build()
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Init(&recordingContext{noTopic: true}); err == nil {
			t.Fatal("Init with logging on and no changelog topic succeeded")
		}
	})
	t.Run("closed", func(t *testing.T) {
		s := newKV(t, &recordingContext{})
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := s.Put("a", 1); !errors.Is(err, ErrClosed) {
			t.Fatalf("Put after Close: err = %v, want ErrClosed", err)
		}
		if _, _, err := s.Get("a"); !errors.Is(err, ErrClosed) {
			t.Fatalf("Get after Close: err = %v, want ErrClosed", err)
		}
	})
	t.Run("log change fails", func(t *testing.T) {
		errLog := errors.New("producer fenced")
		s := newKV(t, &recordingContext{logErr: errLog})
		if err := s.Put("a", 1); !errors.Is(err, errLog) {
			t.Fatalf("Put: err = %v, want %v", err, errLog)
		}
	})
	t.Run("serialize fails", func(t *testing.T) {
		ctx := &recordingContext{}
		s := buildInit[KeyValueStore[string, int64]](t,
			KeyValueStoreBuilder("f", serde.Serde[string](stringSerde{}), serde.Serde[int64](failingSerde{}), InMemory()), ctx)
		err := s.PutAll([]KeyValue[string, int64]{{Key: "a", Value: 1}})
		if !errors.Is(err, errSerde) {
			t.Fatalf("PutAll: err = %v, want %v", err, errSerde)
		}
		if n, _ := s.ApproximateNumEntries(); n != 0 || len(ctx.take()) != 0 {
			t.Fatal("failed PutAll wrote or logged")
		}
	})
	t.Run("corrupt bytes surface on get and iteration", func(t *testing.T) {
		s := newTS(t, &recordingContext{})
		if err := s.(BytesBacked).Bytes().Put([]byte("a"), []byte{1, 2}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Get("a"); !errors.Is(err, ErrValueTooShort) {
			t.Fatalf("Get: err = %v, want ErrValueTooShort", err)
		}
		it, err := s.All()
		if err != nil {
			t.Fatal(err)
		}
		defer it.Close()
		if !it.Next() {
			t.Fatal("no entry")
		}
		if k := it.Key(); k != "a" {
			t.Fatalf("Key() = %q", k)
		}
		if v := it.Value(); v != (ValueAndTimestamp[int64]{}) {
			t.Fatalf("Value() = %+v, want zero", v)
		}
		if err := it.Err(); !errors.Is(err, ErrValueTooShort) {
			t.Fatalf("Err() = %v, want ErrValueTooShort", err)
		}
		if it.Next() {
			t.Fatal("Next after a decode error")
		}
	})
}

func second2[A, B any](_ A, _ B, err error) error { return err }

func TestTypedStoreForwardsLifecycle(t *testing.T) {
	s := newKV(t, &recordingContext{})
	if s.Name() != "counts" || s.Persistent() {
		t.Fatalf("Name() = %q, Persistent() = %v", s.Name(), s.Persistent())
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := s.(BytesBacked).Bytes().Name(); got != "counts" {
		t.Fatalf("Bytes().Name() = %q", got)
	}
}
