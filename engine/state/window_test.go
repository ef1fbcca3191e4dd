package state

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/window"
)

const (
	testRetention = 100 * time.Millisecond
	testSize      = 10 * time.Millisecond
)

func windowBuilder(dups bool) *WindowBuilder[string, int64] {
	return WindowStoreBuilder("win", serde.Serde[string](stringSerde{}), serde.Serde[int64](int64Serde{}), testRetention, testSize, dups, InMemory())
}

func newWS(t *testing.T, ctx Context, dups bool) WindowStore[string, int64] {
	t.Helper()
	return buildInit[WindowStore[string, int64]](t, windowBuilder(dups), ctx)
}

func newTWS(t *testing.T, ctx Context) TimestampedWindowStore[string, int64] {
	t.Helper()
	return buildInit[TimestampedWindowStore[string, int64]](t,
		TimestampedWindowStoreBuilder("twin", serde.Serde[string](stringSerde{}), serde.Serde[int64](int64Serde{}), testRetention, testSize, false, InMemory()), ctx)
}

// drain reads an iterator to the end, failing the test on an error.
func drain[K, V any](t testing.TB, it KeyValueIterator[K, V], err error) []KeyValue[K, V] {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var out []KeyValue[K, V]
	for it.Next() {
		out = append(out, KeyValue[K, V]{Key: it.Key(), Value: it.Value()})
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func wkv(key string, start, end, v int64) KeyValue[window.Windowed[string], int64] {
	return KeyValue[window.Windowed[string], int64]{Key: window.Windowed[string]{Key: key, Window: window.Window{Start: start, End: end}}, Value: v}
}

func skv(start, v int64) KeyValue[int64, int64] { return KeyValue[int64, int64]{Key: start, Value: v} }

func checkEntries[K, V any](t *testing.T, what string, got, want []KeyValue[K, V]) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s =\n  %+v\nwant\n  %+v", what, got, want)
	}
}

// be64 and be32 spell out big-endian fields in hand-written layouts.
func be64(v int64) []byte  { return binary.BigEndian.AppendUint64(nil, uint64(v)) }
func be32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// ord64 is a timestamp as the byte-store indexes order it: big-endian with
// the sign bit flipped.
func ord64(v int64) []byte { return be64(v ^ math.MinInt64) }

func TestWindowedBuilderDescription(t *testing.T) {
	s, i := serde.Serde[string](stringSerde{}), serde.Serde[int64](int64Serde{})
	defaults := map[string]string{"cleanup.policy": "compact,delete", "retention.ms": "86400100"}
	tests := []struct {
		name        string
		b           StoreBuilder
		wantKind    Kind
		wantLogging bool
		wantConfig  map[string]string
	}{
		{"window default", windowBuilder(false), KindWindow, true, defaults},
		{"timestamped window default", TimestampedWindowStoreBuilder("win", s, i, testRetention, testSize, false, InMemory()), KindTimestampedWindow, true, defaults},
		{"session default", SessionStoreBuilder("win", s, i, testRetention, InMemory()), KindSession, true, defaults},
		{"user config overrides defaults", windowBuilder(true).WithLoggingEnabled(map[string]string{"retention.ms": "5", "segment.ms": "7"}), KindWindow, true,
			map[string]string{"cleanup.policy": "compact,delete", "retention.ms": "5", "segment.ms": "7"}},
		{"user config keeps computed retention", SessionStoreBuilder("win", s, i, time.Hour, InMemory()).WithLoggingEnabled(map[string]string{"cleanup.policy": "delete"}), KindSession, true,
			map[string]string{"cleanup.policy": "delete", "retention.ms": "90000000"}},
		{"logging disabled drops config", windowBuilder(false).WithLoggingDisabled(), KindWindow, false, nil},
		{"timestamped logging disabled", TimestampedWindowStoreBuilder("win", s, i, testRetention, testSize, false, InMemory()).WithLoggingDisabled(), KindTimestampedWindow, false, nil},
		{"session logging disabled", SessionStoreBuilder("win", s, i, testRetention, InMemory()).WithLoggingDisabled(), KindSession, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.b
			if b.Name() != "win" || b.Kind() != tt.wantKind || b.Backend() != "in-memory" ||
				b.LoggingEnabled() != tt.wantLogging || b.KeySerdeName() != "string" || b.ValueSerdeName() != "int64" {
				t.Fatalf("description = %q %q %q %v %q %q", b.Name(), b.Kind(), b.Backend(), b.LoggingEnabled(), b.KeySerdeName(), b.ValueSerdeName())
			}
			if got := b.LogConfig(); !reflect.DeepEqual(got, tt.wantConfig) && (len(got) != 0 || len(tt.wantConfig) != 0) {
				t.Fatalf("LogConfig() = %v, want %v", got, tt.wantConfig)
			}
		})
	}
	// Kafka Streams saturates retention + one day rather than overflow.
	if got := windowedLogConfig(math.MaxInt64-5, nil)["retention.ms"]; got != "9223372036854775807" {
		t.Fatalf("saturated retention.ms = %s", got)
	}
	wb := windowBuilder(true)
	if wb.Retention() != 100 || wb.WindowSize() != 10 || !wb.RetainDuplicates() {
		t.Fatalf("window builder = %d %d %v", wb.Retention(), wb.WindowSize(), wb.RetainDuplicates())
	}
	if sb := SessionStoreBuilder("s", s, i, time.Second, InMemory()); sb.Retention() != 1000 {
		t.Fatalf("session builder retention = %d", sb.Retention())
	}
}

func TestWindowedBuildErrors(t *testing.T) {
	s, i := serde.Serde[string](stringSerde{}), serde.Serde[int64](int64Serde{})
	tests := []struct {
		name string
		b    StoreBuilder
		want string
	}{
		{"empty name", WindowStoreBuilder("", s, i, testRetention, testSize, false, InMemory()), "build store: name is empty"},
		{"nil key serde", WindowStoreBuilder[string, int64]("w", nil, i, testRetention, testSize, false, InMemory()), `build store "w": key serde is nil`},
		{"nil value serde", TimestampedWindowStoreBuilder[string, int64]("w", s, nil, testRetention, testSize, false, InMemory()), `build store "w": value serde is nil`},
		{"nil supplier", SessionStoreBuilder("w", s, i, testRetention, nil), `build store "w": bytes supplier is nil`},
		{"negative retention", WindowStoreBuilder("w", s, i, -time.Millisecond, 0, false, InMemory()), `build store "w": retention -1ms is negative`},
		{"negative size", TimestampedWindowStoreBuilder("w", s, i, testRetention, -time.Millisecond, false, InMemory()), `build store "w": window size -1ms is negative`},
		{"size past retention", WindowStoreBuilder("w", s, i, testSize, testRetention, false, InMemory()), `build store "w": retention 10ms is smaller than the window size 100ms`},
		{"negative session retention", SessionStoreBuilder("w", s, i, -time.Second, InMemory()), `build store "w": retention -1000ms is negative`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := tt.b.Build()
			if err == nil || err.Error() != tt.want {
				t.Fatalf("Build() = %T, %v; want error %q", st, err, tt.want)
			}
		})
	}
	// A zero window size is valid: join windows of before = after = 0.
	if _, err := WindowStoreBuilder("w", s, i, 0, 0, true, InMemory()).Build(); err != nil {
		t.Fatalf("zero size: %v", err)
	}
}

// The changelog bytes below are written out by hand from Kafka Streams'
// WindowKeySchema.toStoreKeyBinary: key, 8-byte big-endian start, 4-byte
// big-endian sequence number.
func TestWindowStoreChangelogLayout(t *testing.T) {
	a := []byte{'a'}
	t.Run("plain", func(t *testing.T) {
		ctx := &recordingContext{ts: 1000}
		s := newWS(t, ctx, false)
		steps := []struct {
			name string
			do   func() error
			want []loggedChange
		}{
			{"put", func() error { return s.Put("a", 2, 0x10) },
				[]loggedChange{{"win", cat(a, be64(0x10), be32(0)), int64Bytes(2), 1000}}},
			{"overwrite", func() error { return s.Put("a", 3, 0x10) },
				[]loggedChange{{"win", cat(a, be64(0x10), be32(0)), int64Bytes(3), 1000}}},
			{"delete logs a tombstone with the record timestamp", func() error { return s.Delete("a", 0x10) },
				[]loggedChange{{"win", cat(a, be64(0x10), be32(0)), nil, 1000}}},
			{"delete of an absent window still logs", func() error { return s.Delete("b", 7) },
				[]loggedChange{{"win", cat([]byte("b"), be64(7), be32(0)), nil, 1000}}},
			{"negative start is two's complement on the changelog", func() error { return s.Put("a", 1, -2) },
				[]loggedChange{{"win", cat(a, be64(-2), be32(0)), int64Bytes(1), 1000}}},
		}
		for _, st := range steps {
			if err := st.do(); err != nil {
				t.Fatalf("%s: %v", st.name, err)
			}
			checkChanges(t, ctx.take(), st.want)
		}
		// The byte store holds both indexes, times with the sign bit flipped.
		bs := s.(BytesBacked).Bytes()
		got := collect(t, must(bs.All()))
		want := []KeyValue[[]byte, []byte]{
			{Key: cat([]byte{0}, ord64(-1), a, ord64(-2), be32(0)), Value: int64Bytes(1)},
			{Key: cat([]byte{1}, ord64(-2), a, be32(0)), Value: []byte{}},
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("byte store =\n  %x\nwant\n  %x", got, want)
		}
	})
	t.Run("timestamped", func(t *testing.T) {
		ctx := &recordingContext{ts: 1000}
		s := newTWS(t, ctx)
		if err := s.Put("a", ValueAndTimestamp[int64]{Value: 3, Timestamp: 42}, 0x20); err != nil {
			t.Fatal(err)
		}
		// The changelog gets the plain value with the value's timestamp.
		checkChanges(t, ctx.take(), []loggedChange{{"twin", cat(a, be64(0x20), be32(0)), int64Bytes(3), 42}})
		// The store keeps the timestamp in front of the value.
		stored := must(s.(BytesBacked).Bytes().Get(cat([]byte{0}, ord64(0), a, ord64(0x20), be32(0))))
		if want := cat(be64(42), int64Bytes(3)); !bytes.Equal(stored, want) {
			t.Fatalf("stored = %x, want %x", stored, want)
		}
		if err := s.Delete("a", 0x20); err != nil {
			t.Fatal(err)
		}
		checkChanges(t, ctx.take(), []loggedChange{{"twin", cat(a, be64(0x20), be32(0)), nil, 1000}})
	})
	t.Run("duplicates take sequence numbers", func(t *testing.T) {
		ctx := &recordingContext{ts: 5}
		s := newWS(t, ctx, true)
		for i, k := range []string{"a", "a", "b"} {
			if err := s.Put(k, int64(i), 0x10); err != nil {
				t.Fatal(err)
			}
		}
		checkChanges(t, ctx.take(), []loggedChange{
			{"win", cat(a, be64(0x10), be32(1)), int64Bytes(0), 5},
			{"win", cat(a, be64(0x10), be32(2)), int64Bytes(1), 5},
			{"win", cat([]byte("b"), be64(0x10), be32(3)), int64Bytes(2), 5},
		})
		if err := s.Delete("a", 0x10); err != nil {
			t.Fatal(err)
		}
		checkChanges(t, ctx.take(), []loggedChange{
			{"win", cat(a, be64(0x10), be32(1)), nil, 5},
			{"win", cat(a, be64(0x10), be32(2)), nil, 5},
		})
	})
	t.Run("logging disabled", func(t *testing.T) {
		ctx := &recordingContext{noTopic: true}
		s := buildInit[WindowStore[string, int64]](t, windowBuilder(false).WithLoggingDisabled(), ctx)
		if err := s.Put("a", 1, 0); err != nil {
			t.Fatal(err)
		}
		checkChanges(t, ctx.take(), nil)
	})
}

func TestEncodeWindowKey(t *testing.T) {
	tests := []struct {
		name  string
		key   []byte
		start int64
		seq   int32
		want  []byte
	}{
		{"simple", []byte("k"), 1, 0, []byte{'k', 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0}},
		{"big-endian fields", []byte("ab"), 0x0102030405060708, 0x0a0b0c0d, []byte{'a', 'b', 1, 2, 3, 4, 5, 6, 7, 8, 0x0a, 0x0b, 0x0c, 0x0d}},
		{"empty key", []byte{}, 0, 1, []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}},
		{"negative start", []byte("k"), -1, math.MaxInt32, []byte{'k', 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0xff, 0xff, 0xff}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := EncodeWindowKey(tt.key, tt.start, tt.seq)
			if !bytes.Equal(got, tt.want) {
				t.Fatalf("EncodeWindowKey = % x, want % x", got, tt.want)
			}
			key, start, seq, err := DecodeWindowKey(got)
			if err != nil || !bytes.Equal(key, tt.key) || start != tt.start || seq != tt.seq {
				t.Fatalf("DecodeWindowKey = %q %d %d %v", key, start, seq, err)
			}
		})
	}
	if _, _, _, err := DecodeWindowKey(make([]byte, 11)); !errors.Is(err, ErrKeyTooShort) {
		t.Fatalf("short key: %v", err)
	}
}

func TestWindowStorePutFetch(t *testing.T) {
	ctx := &recordingContext{}
	s := newWS(t, ctx, false)
	// "a\x80\x00..." with start MinInt64 lays out, behind key "a", bytes
	// that fall between FetchRange("a", 0, 100)'s bounds: length filters it.
	tricky := "a\x80\x00\x00\x00\x00\x00\x00"
	puts := []struct {
		key   string
		start int64
		v     int64
	}{
		{"a", 20, 1}, {"a", 0, 2}, {"a", 10, 3}, {"a", -5, 4}, {"aa", 10, 5}, {"b", 10, 6},
		{"", 10, 7}, {tricky, math.MinInt64, 8}, {"a", math.MaxInt64, 9}, {"a", 20, 10}, // last overwrites
	}
	for _, p := range puts {
		if err := s.Put(p.key, p.v, p.start); err != nil {
			t.Fatal(err)
		}
	}

	fetches := []struct {
		key   string
		start int64
		want  int64
		found bool
	}{
		{"a", 20, 10, true}, {"a", 0, 2, true}, {"a", 5, 0, false}, {"aa", 10, 5, true},
		{"", 10, 7, true}, {"c", 10, 0, false}, {tricky, math.MinInt64, 8, true},
	}
	for _, f := range fetches {
		v, found, err := s.Fetch(f.key, f.start)
		if err != nil || v != f.want || found != f.found {
			t.Fatalf("Fetch(%q, %d) = %d, %v, %v; want %d, %v", f.key, f.start, v, found, err, f.want, f.found)
		}
	}

	ranges := []struct {
		name     string
		key      string
		from, to int64
		want     []KeyValue[int64, int64]
	}{
		{"all of a in start order", "a", math.MinInt64, math.MaxInt64, []KeyValue[int64, int64]{skv(-5, 4), skv(0, 2), skv(10, 3), skv(20, 10), skv(math.MaxInt64, 9)}},
		{"bounds are inclusive", "a", 0, 20, []KeyValue[int64, int64]{skv(0, 2), skv(10, 3), skv(20, 10)}},
		{"other keys sharing a prefix stay out", "a", 0, 100, []KeyValue[int64, int64]{skv(0, 2), skv(10, 3), skv(20, 10)}},
		{"negative range", "a", -10, -1, []KeyValue[int64, int64]{skv(-5, 4)}},
		{"single point", "a", 10, 10, []KeyValue[int64, int64]{skv(10, 3)}},
		{"inverted range is empty", "a", 20, 0, nil},
		{"longer key", "aa", 0, 100, []KeyValue[int64, int64]{skv(10, 5)}},
		{"empty key", "", 0, 100, []KeyValue[int64, int64]{skv(10, 7)}},
		{"absent key", "c", 0, 100, nil},
	}
	for _, r := range ranges {
		t.Run(r.name, func(t *testing.T) {
			it, err := s.FetchRange(r.key, r.from, r.to)
			checkEntries(t, fmt.Sprintf("FetchRange(%q, %d, %d)", r.key, r.from, r.to), drain(t, it, err), r.want)
		})
	}

	all := []struct {
		name     string
		from, to int64
		want     []KeyValue[window.Windowed[string], int64]
	}{
		{"start order, then key bytes; end = start + size", 0, 20, []KeyValue[window.Windowed[string], int64]{
			wkv("a", 0, 10, 2), wkv("", 10, 20, 7), wkv("a", 10, 20, 3), wkv("aa", 10, 20, 5), wkv("b", 10, 20, 6), wkv("a", 20, 30, 10)}},
		{"single start", 10, 10, []KeyValue[window.Windowed[string], int64]{
			wkv("", 10, 20, 7), wkv("a", 10, 20, 3), wkv("aa", 10, 20, 5), wkv("b", 10, 20, 6)}},
		{"ends clamp at max int64", math.MaxInt64, math.MaxInt64, []KeyValue[window.Windowed[string], int64]{wkv("a", math.MaxInt64, math.MaxInt64, 9)}},
		{"negative starts come first", math.MinInt64, 0, []KeyValue[window.Windowed[string], int64]{
			wkv(tricky, math.MinInt64, math.MinInt64+10, 8), wkv("a", -5, 5, 4), wkv("a", 0, 10, 2)}},
		{"inverted", 20, 10, nil},
		{"empty span", 11, 19, nil},
	}
	for _, r := range all {
		t.Run(r.name, func(t *testing.T) {
			it, err := s.FetchAll(r.from, r.to)
			checkEntries(t, fmt.Sprintf("FetchAll(%d, %d)", r.from, r.to), drain(t, it, err), r.want)
		})
	}
	it, err := s.All()
	if got := drain(t, it, err); len(got) != 9 || got[0].Value != 8 || got[8].Value != 9 {
		t.Fatalf("All() = %+v", got)
	}
}

func TestWindowStoreDuplicates(t *testing.T) {
	ctx := &recordingContext{}
	s := newWS(t, ctx, true)
	for _, p := range []struct {
		key   string
		start int64
		v     int64
	}{{"a", 10, 1}, {"b", 10, 2}, {"a", 10, 3}, {"a", 20, 4}, {"a", 10, 5}} {
		if err := s.Put(p.key, p.v, p.start); err != nil {
			t.Fatal(err)
		}
	}
	it, err := s.FetchRange("a", 10, 10)
	checkEntries(t, "FetchRange(a, 10, 10)", drain(t, it, err), []KeyValue[int64, int64]{skv(10, 1), skv(10, 3), skv(10, 5)})
	it, err = s.FetchRange("a", 0, 100)
	checkEntries(t, "FetchRange(a, 0, 100)", drain(t, it, err), []KeyValue[int64, int64]{skv(10, 1), skv(10, 3), skv(10, 5), skv(20, 4)})
	if v, found, err := s.Fetch("a", 10); err != nil || !found || v != 1 {
		t.Fatalf("Fetch(a, 10) = %d, %v, %v; want the lowest sequence number's 1", v, found, err)
	}
	wit, err := s.FetchAll(0, 100)
	checkEntries(t, "FetchAll", drain(t, wit, err), []KeyValue[window.Windowed[string], int64]{
		wkv("a", 10, 20, 1), wkv("a", 10, 20, 3), wkv("a", 10, 20, 5), wkv("b", 10, 20, 2), wkv("a", 20, 30, 4)})

	if err := s.Delete("a", 10); err != nil {
		t.Fatal(err)
	}
	it, err = s.FetchRange("a", 0, 100)
	checkEntries(t, "after Delete", drain(t, it, err), []KeyValue[int64, int64]{skv(20, 4)})

	t.Run("null put is a no-op", func(t *testing.T) {
		ctx := &recordingContext{}
		ps := buildInit[WindowStore[string, *int64]](t,
			WindowStoreBuilder("p", serde.Serde[string](stringSerde{}), serde.Serde[*int64](ptrSerde{}), testRetention, testSize, true, InMemory()), ctx)
		one := int64(1)
		if err := ps.Put("a", &one, 0); err != nil {
			t.Fatal(err)
		}
		ctx.take()
		if err := ps.Put("a", nil, 0); err != nil {
			t.Fatal(err)
		}
		checkChanges(t, ctx.take(), nil)
		if v, found, err := ps.Fetch("a", 0); err != nil || !found || *v != 1 {
			t.Fatalf("Fetch after null put = %v, %v, %v", v, found, err)
		}
	})

	t.Run("sequence numbers wrap as in Kafka Streams", func(t *testing.T) {
		ctx := &recordingContext{}
		s := newWS(t, ctx, true)
		s.(*windowStore[string, int64]).seq.Store(math.MaxInt32 - 1)
		for i := range 3 {
			if err := s.Put("a", int64(i), 0); err != nil {
				t.Fatal(err)
			}
		}
		var seqs []int32
		for _, c := range ctx.take() {
			_, _, seq, err := DecodeWindowKey(c.Key)
			if err != nil {
				t.Fatal(err)
			}
			seqs = append(seqs, seq)
		}
		if want := []int32{math.MaxInt32, 0, 1}; !slices.Equal(seqs, want) {
			t.Fatalf("sequence numbers = %v, want %v", seqs, want)
		}
	})
}

func TestWindowStorePutNullDeletes(t *testing.T) {
	ctx := &recordingContext{ts: 9}
	s := buildInit[WindowStore[string, *int64]](t,
		WindowStoreBuilder("p", serde.Serde[string](stringSerde{}), serde.Serde[*int64](ptrSerde{}), testRetention, testSize, false, InMemory()), ctx)
	one := int64(1)
	if err := s.Put("a", &one, 0); err != nil {
		t.Fatal(err)
	}
	ctx.take()
	if err := s.Put("a", nil, 0); err != nil {
		t.Fatal(err)
	}
	checkChanges(t, ctx.take(), []loggedChange{{"p", cat([]byte("a"), be64(0), be32(0)), nil, 9}})
	if _, found, err := s.Fetch("a", 0); err != nil || found {
		t.Fatalf("Fetch after null put: found=%v err=%v", found, err)
	}
	if n := must(s.(BytesBacked).Bytes().ApproximateNumEntries()); n != 0 {
		t.Fatalf("%d byte entries left", n)
	}
}

func TestWindowStoreExpire(t *testing.T) {
	ctx := &recordingContext{}
	// retention 100; segments of 1 ms, so that what expiry drops is exact
	// (TestWindowStoreSegments has wider ones).
	s := buildInit[WindowStore[string, int64]](t, windowBuilder(false).WithSegmentInterval(time.Millisecond), ctx)
	for _, start := range []int64{0, 50, 99, 100, 150} {
		if err := s.Put("a", start, start); err != nil {
			t.Fatal(err)
		}
		if err := s.Put("b", start, start); err != nil {
			t.Fatal(err)
		}
	}
	ctx.take()
	starts := func() []int64 {
		it, err := s.All()
		var out []int64
		for _, kv := range drain(t, it, err) {
			if kv.Key.Key == "a" {
				out = append(out, kv.Key.Window.Start)
			}
		}
		return out
	}
	steps := []struct {
		name     string
		frontier int64
		want     []int64
	}{
		{"nothing old enough", 99, []int64{0, 50, 99, 100, 150}},
		{"start == frontier - retention expires", 100, []int64{50, 99, 100, 150}},
		{"start 99 expires at 199, 100 stays", 199, []int64{100, 150}},
		{"a lower frontier changes nothing", 150, []int64{100, 150}},
		{"everything", math.MaxInt64, nil},
	}
	for _, st := range steps {
		if err := s.Expire(st.frontier); err != nil {
			t.Fatal(err)
		}
		if got := starts(); !slices.Equal(got, st.want) {
			t.Fatalf("%s: Expire(%d) left starts %v, want %v", st.name, st.frontier, got, st.want)
		}
		// Both indexes shrink together.
		if n := must(s.(BytesBacked).Bytes().ApproximateNumEntries()); n != int64(4*len(st.want)) {
			t.Fatalf("%s: %d byte entries, want %d", st.name, n, 4*len(st.want))
		}
	}
	checkChanges(t, ctx.take(), nil) // expiry is not logged

	t.Run("puts into expired windows are dropped", func(t *testing.T) {
		ctx := &recordingContext{}
		s := newWS(t, ctx, false)
		if err := s.Expire(199); err != nil { // keeps starts >= 100
			t.Fatal(err)
		}
		if err := s.Put("a", 1, 99); err != nil {
			t.Fatal(err)
		}
		checkChanges(t, ctx.take(), nil)
		if _, found, _ := s.Fetch("a", 99); found {
			t.Fatal("expired put was stored")
		}
		if err := s.Put("a", 1, 100); err != nil {
			t.Fatal(err)
		}
		if _, found, _ := s.Fetch("a", 100); !found || len(ctx.take()) != 1 {
			t.Fatal("live put was not stored and logged")
		}
		// A frontier far below does not overflow.
		if err := s.Expire(math.MinInt64); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("expiry works without init and in batches", func(t *testing.T) {
		s := windowBuilder(false).WithSegmentInterval(100 * time.Millisecond)
		st := must(s.Build()).(*windowStore[string, int64])
		var recs []ChangelogRecord
		for i := range 2000 {
			recs = append(recs, ChangelogRecord{Key: EncodeWindowKey([]byte(fmt.Sprint(i%7)), int64(i), 0), Value: int64Bytes(1)})
		}
		if err := st.Restore(recs); err != nil {
			t.Fatal(err)
		}
		if err := st.Expire(1999 + 100 - 1500); err != nil { // keeps starts >= 500
			t.Fatal(err)
		}
		if n := must(st.Bytes().ApproximateNumEntries()); n != 2*1500 {
			t.Fatalf("%d byte entries, want %d", n, 2*1500)
		}
	})
}

// TestWindowStoreRestore restores hand-written Kafka Streams changelog
// records.
func TestWindowStoreRestore(t *testing.T) {
	records := []ChangelogRecord{
		{Key: cat([]byte("a"), be64(10), be32(0)), Value: int64Bytes(1), Timestamp: 11},
		{Key: cat([]byte("b"), be64(10), be32(0)), Value: int64Bytes(2), Timestamp: 12},
		{Key: cat([]byte("a"), be64(20), be32(0)), Value: int64Bytes(3), Timestamp: 21},
		{Key: cat([]byte("b"), be64(10), be32(0)), Value: nil, Timestamp: 13}, // tombstone
		{Key: cat([]byte("a"), be64(10), be32(0)), Value: int64Bytes(4), Timestamp: 14},
	}
	t.Run("plain", func(t *testing.T) {
		ctx := &recordingContext{}
		s := must(windowBuilder(false).Build())
		if err := s.(Restorer).Restore(records); err != nil { // before Init
			t.Fatal(err)
		}
		ws := s.(WindowStore[string, int64])
		if err := ws.Init(ctx); err != nil {
			t.Fatal(err)
		}
		it, err := ws.All()
		checkEntries(t, "restored", drain(t, it, err), []KeyValue[window.Windowed[string], int64]{wkv("a", 10, 20, 4), wkv("a", 20, 30, 3)})
		checkChanges(t, ctx.take(), nil)
	})
	t.Run("timestamped puts the record timestamp back", func(t *testing.T) {
		s := newTWS(t, &recordingContext{})
		if err := s.(Restorer).Restore(records); err != nil {
			t.Fatal(err)
		}
		v, found, err := s.Fetch("a", 10)
		if err != nil || !found || v != (ValueAndTimestamp[int64]{Value: 4, Timestamp: 14}) {
			t.Fatalf("Fetch(a, 10) = %+v, %v, %v", v, found, err)
		}
		stored := must(s.(BytesBacked).Bytes().Get(cat([]byte{0}, ord64(0), []byte("a"), ord64(20), be32(0))))
		if want := cat(be64(21), int64Bytes(3)); !bytes.Equal(stored, want) {
			t.Fatalf("stored = %x, want %x", stored, want)
		}
	})
	t.Run("duplicates continue after the restored sequence numbers", func(t *testing.T) {
		ctx := &recordingContext{}
		s := newWS(t, ctx, true)
		if err := s.(Restorer).Restore([]ChangelogRecord{
			{Key: cat([]byte("a"), be64(10), be32(1)), Value: int64Bytes(1)},
			{Key: cat([]byte("a"), be64(10), be32(7)), Value: int64Bytes(2)},
		}); err != nil {
			t.Fatal(err)
		}
		if err := s.Put("a", 3, 10); err != nil {
			t.Fatal(err)
		}
		it, err := s.FetchRange("a", 10, 10)
		checkEntries(t, "FetchRange", drain(t, it, err), []KeyValue[int64, int64]{skv(10, 1), skv(10, 2), skv(10, 3)})
		checkChanges(t, ctx.take(), []loggedChange{{"win", cat([]byte("a"), be64(10), be32(8)), int64Bytes(3), 0}})
	})
	t.Run("bad key writes nothing", func(t *testing.T) {
		s := newWS(t, &recordingContext{}, false)
		err := s.(Restorer).Restore([]ChangelogRecord{records[0], {Key: []byte("short")}})
		if !errors.Is(err, ErrKeyTooShort) || err.Error() != `store "win": restore: record 1: decode window key: 5 bytes, need at least 12: key too short for window suffix` {
			t.Fatalf("Restore = %v", err)
		}
		if n := must(s.(BytesBacked).Bytes().ApproximateNumEntries()); n != 0 {
			t.Fatalf("%d entries written", n)
		}
	})
	t.Run("expired windows are skipped", func(t *testing.T) {
		s := newWS(t, &recordingContext{}, false)
		if err := s.Expire(119); err != nil { // keeps starts >= 20
			t.Fatal(err)
		}
		if err := s.(Restorer).Restore(records); err != nil {
			t.Fatal(err)
		}
		it, err := s.All()
		checkEntries(t, "restored", drain(t, it, err), []KeyValue[window.Windowed[string], int64]{wkv("a", 20, 30, 3)})
	})
}

// windowModel is what a window store should hold, for randomised tests.
type windowModel map[windowModelKey]int64

type windowModelKey struct {
	key   string
	start int64
	seq   uint32
}

// timeOrder is the documented FetchAll order: start, then key bytes and
// sequence number.
func (k windowModelKey) timeOrder(o windowModelKey) int {
	if c := cmp.Compare(k.start, o.start); c != 0 {
		return c
	}
	return bytes.Compare(append([]byte(k.key), be32(k.seq)...), append([]byte(o.key), be32(o.seq)...))
}

// TestWindowStoreModel runs random operations against a store and a map,
// with keys chosen so that their bytes interleave in the key-first index,
// and compares every read. Then it restores a second store from the logged
// changes and requires the same bytes in both indexes. A store without the
// time index must hold no time-first entry and give FetchAll in the same
// order.
func TestWindowStoreModel(t *testing.T) {
	keys := []string{"", "a", "aa", "a\x00", "a\x80", "a\xff", "\x00", "\xff", "a\x80\x00\x00\x00\x00\x00\x00"}
	starts := []int64{math.MinInt64, -300, -1, 0, 1, 10, 20, 255, 256, 1 << 40, math.MaxInt64}
	for _, c := range []struct{ dups, keyOnly bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		dups := c.dups
		build := func(ctx Context) WindowStore[string, int64] {
			b := windowBuilder(dups)
			if c.keyOnly {
				b.WithoutTimeIndex()
			}
			return buildInit[WindowStore[string, int64]](t, b, ctx)
		}
		t.Run(fmt.Sprintf("dups=%v/key-index-only=%v", dups, c.keyOnly), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(len(keys))))
			ctx := &recordingContext{}
			s := build(ctx)
			model := windowModel{}
			var seq uint32
			for step := range 3000 {
				k, st := keys[rng.IntN(len(keys))], starts[rng.IntN(len(starts))]
				switch op := rng.IntN(10); {
				case op < 6:
					v := rng.Int64()
					if err := s.Put(k, v, st); err != nil {
						t.Fatal(err)
					}
					if dups {
						seq = (seq + 1) & math.MaxInt32
						model[windowModelKey{k, st, seq}] = v
					} else {
						model[windowModelKey{k, st, 0}] = v
					}
				case op < 8:
					if err := s.Delete(k, st); err != nil {
						t.Fatal(err)
					}
					for mk := range model {
						if mk.key == k && mk.start == st {
							delete(model, mk)
						}
					}
				case op < 9:
					from, to := starts[rng.IntN(len(starts))], starts[rng.IntN(len(starts))]
					var want []KeyValue[int64, int64]
					var mks []windowModelKey
					for mk := range model {
						if mk.key == k && mk.start >= from && mk.start <= to {
							mks = append(mks, mk)
						}
					}
					slices.SortFunc(mks, windowModelKey.timeOrder)
					for _, mk := range mks {
						want = append(want, skv(mk.start, model[mk]))
					}
					it, err := s.FetchRange(k, from, to)
					checkEntries(t, fmt.Sprintf("step %d: FetchRange(%q, %d, %d)", step, k, from, to), drain(t, it, err), want)
				default:
					from, to := starts[rng.IntN(len(starts))], starts[rng.IntN(len(starts))]
					var mks []windowModelKey
					for mk := range model {
						if mk.start >= from && mk.start <= to {
							mks = append(mks, mk)
						}
					}
					slices.SortFunc(mks, windowModelKey.timeOrder)
					var want []KeyValue[window.Windowed[string], int64]
					for _, mk := range mks {
						want = append(want, wkv(mk.key, mk.start, addSat(mk.start, 10), model[mk]))
					}
					it, err := s.FetchAll(from, to)
					checkEntries(t, fmt.Sprintf("step %d: FetchAll(%d, %d)", step, from, to), drain(t, it, err), want)
				}
			}

			// Replaying the changelog into a fresh store gives the same bytes.
			var records []ChangelogRecord
			for _, c := range ctx.take() {
				records = append(records, ChangelogRecord{Key: c.Key, Value: c.Value, Timestamp: c.Timestamp})
			}
			r := build(&recordingContext{})
			if err := r.(Restorer).Restore(records); err != nil {
				t.Fatal(err)
			}
			got := collect(t, must(r.(BytesBacked).Bytes().All()))
			want := collect(t, must(s.(BytesBacked).Bytes().All()))
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("restored store differs: %d entries, want %d", len(got), len(want))
			}
			segs, timeFirst := keyFirstSegments(t, s.(BytesBacked).Bytes())
			if c.keyOnly && timeFirst != 0 || !c.keyOnly && len(model) > 0 && timeFirst == 0 {
				t.Fatalf("%d time-first entries beside %d segments of key-first ones", timeFirst, len(segs))
			}
		})
	}
}

func TestTimestampedWindowStoreRestoreFromLog(t *testing.T) {
	ctx := &recordingContext{ts: 77}
	s := newTWS(t, ctx)
	for i, k := range []string{"a", "b", "a", "c"} {
		if err := s.Put(k, ValueAndTimestamp[int64]{Value: int64(i), Timestamp: int64(100 + i)}, int64(10*i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Delete("b", 10); err != nil {
		t.Fatal(err)
	}
	var records []ChangelogRecord
	for _, c := range ctx.take() {
		records = append(records, ChangelogRecord{Key: c.Key, Value: c.Value, Timestamp: c.Timestamp})
	}
	r := newTWS(t, &recordingContext{})
	if err := r.(Restorer).Restore(records); err != nil {
		t.Fatal(err)
	}
	got := collect(t, must(r.(BytesBacked).Bytes().All()))
	want := collect(t, must(s.(BytesBacked).Bytes().All()))
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("restored =\n  %x\nwant\n  %x", got, want)
	}
}

func TestWindowStoreErrors(t *testing.T) {
	t.Run("not initialized", func(t *testing.T) {
		s := must(windowBuilder(false).Build()).(WindowStore[string, int64])
		errs := []error{
			s.Put("a", 1, 0),
			second2(s.Fetch("a", 0)),
			second(s.FetchRange("a", 0, 1)),
			second(s.FetchAll(0, 1)),
			second(s.All()),
			s.Delete("a", 0),
		}
		for i, err := range errs {
			if !errors.Is(err, ErrNotInitialized) {
				t.Fatalf("op %d: %v, want ErrNotInitialized", i, err)
			}
		}
	})
	t.Run("init without changelog topic", func(t *testing.T) {
		s := must(windowBuilder(false).Build())
		if err := s.Init(&recordingContext{noTopic: true}); err == nil {
			t.Fatal("Init without a changelog topic succeeded")
		}
		if err := s.Init(nil); err == nil {
			t.Fatal("Init(nil) succeeded")
		}
	})
	t.Run("serde failures name the store", func(t *testing.T) {
		ctx := &recordingContext{}
		s := buildInit[WindowStore[string, int64]](t,
			WindowStoreBuilder("bad", serde.Serde[string](stringSerde{}), serde.Serde[int64](failingSerde{}), testRetention, testSize, false, InMemory()), ctx)
		if err := s.Put("a", 1, 0); !errors.Is(err, errSerde) || err.Error() != `store "bad": put: serialize value: serde failed` {
			t.Fatalf("Put = %v", err)
		}
		if err := s.(Restorer).Restore([]ChangelogRecord{{Key: EncodeWindowKey([]byte("a"), 0, 0), Value: []byte{1}}}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Fetch("a", 0); !errors.Is(err, errSerde) {
			t.Fatalf("Fetch = %v", err)
		}
		it, err := s.FetchRange("a", 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for it.Next() {
			_ = it.Value()
		}
		if err := it.Err(); !errors.Is(err, errSerde) || err.Error() != `store "bad": iterate: deserialize value: serde failed` {
			t.Fatalf("iterator Err = %v", err)
		}
		it.Close()
	})
	t.Run("log failure", func(t *testing.T) {
		logErr := errors.New("broker down")
		s := newWS(t, &recordingContext{logErr: logErr}, false)
		if err := s.Put("a", 1, 0); !errors.Is(err, logErr) {
			t.Fatalf("Put = %v", err)
		}
	})
	t.Run("closed", func(t *testing.T) {
		s := newWS(t, &recordingContext{}, false)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := s.Put("a", 1, 0); !errors.Is(err, ErrClosed) {
			t.Fatalf("Put on closed store = %v", err)
		}
		if _, err := s.FetchAll(0, 1); !errors.Is(err, ErrClosed) {
			t.Fatalf("FetchAll on closed store = %v", err)
		}
		if err := s.Expire(1000); !errors.Is(err, ErrClosed) {
			t.Fatalf("Expire on closed store = %v", err)
		}
	})
}

// FetchAll looks values up as it goes: a window deleted during the scan is
// skipped, a window written during it is read as it is now.
func TestWindowStoreWriteDuringFetchAll(t *testing.T) {
	s := newWS(t, &recordingContext{}, false)
	for i := range int64(5) {
		if err := s.Put("k", i, i); err != nil {
			t.Fatal(err)
		}
	}
	it, err := s.FetchAll(0, 10)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var got []int64
	for it.Next() {
		start := it.Key().Window.Start
		got = append(got, it.Value())
		if start == 1 {
			if err := s.Delete("k", 2); err != nil {
				t.Fatal(err)
			}
			if err := s.Put("k", 30, 3); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	if want := []int64{0, 1, 30, 4}; !slices.Equal(got, want) {
		t.Fatalf("values = %v, want %v", got, want)
	}
}

// TestWindowStoreConcurrentReaders runs readers alongside the writer under
// -race.
func TestWindowStoreConcurrentReaders(t *testing.T) {
	s := newWS(t, &recordingContext{}, true)
	var wg sync.WaitGroup
	done := make(chan struct{})
	for range 3 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				it, err := s.FetchAll(math.MinInt64, math.MaxInt64)
				if err != nil {
					t.Error(err)
					return
				}
				prev := int64(math.MinInt64)
				for it.Next() {
					if st := it.Key().Window.Start; st < prev {
						t.Errorf("FetchAll out of order: %d after %d", st, prev)
					} else {
						prev = st
					}
				}
				if err := it.Err(); err != nil {
					t.Error(err)
				}
				it.Close()
				if _, _, err := s.Fetch("k", 5); err != nil {
					t.Error(err)
				}
			}
		})
	}
	for i := range int64(2000) {
		if err := s.Put(fmt.Sprint(i%13), i, i%200); err != nil {
			t.Fatal(err)
		}
		if i%100 == 0 {
			if err := s.Expire(i / 4); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(done)
	wg.Wait()
}

func FuzzDecodeWindowKey(f *testing.F) {
	f.Add([]byte{'a', 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0})
	f.Add(make([]byte, 12))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		key, start, seq, err := DecodeWindowKey(b)
		if err != nil {
			if len(b) >= 12 || !errors.Is(err, ErrKeyTooShort) {
				t.Fatalf("DecodeWindowKey(%x): %v", b, err)
			}
			return
		}
		if got := EncodeWindowKey(key, start, seq); !bytes.Equal(got, b) {
			t.Fatalf("re-encode of %x gave %x", b, got)
		}
	})
}

// FuzzWindowIndexKeys checks that the byte-store index layouts decode what
// they encode, and that decoding arbitrary bytes never panics.
func FuzzWindowIndexKeys(f *testing.F) {
	f.Add([]byte("a"), int64(0), uint32(0), []byte{0, 0x80, 0, 0, 0, 0, 0, 0, 0, 'a', 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{}, int64(-1), uint32(math.MaxUint32), []byte{1})
	f.Fuzz(func(t *testing.T, key []byte, start int64, seq uint32, raw []byte) {
		sg, k, st, sq, ok := decodeWindowKeyFirst(windowKeyFirst(start/7, key, start, seq))
		if !ok || sg != start/7 || !bytes.Equal(k, key) || st != start || sq != seq {
			t.Fatalf("key-first round trip of %x %d %d gave %x %d %d %v", key, start, seq, k, st, sq, ok)
		}
		k, st, sq, ok = decodeWindowTimeFirst(windowTimeFirst(key, start, seq))
		if !ok || !bytes.Equal(k, key) || st != start || sq != seq {
			t.Fatalf("time-first round trip of %x %d %d gave %x %d %d %v", key, start, seq, k, st, sq, ok)
		}
		if sg, k, st, sq, ok := decodeWindowKeyFirst(raw); ok && !bytes.Equal(windowKeyFirst(sg, k, st, sq), raw) {
			t.Fatalf("key-first %x re-encodes differently", raw)
		}
		if k, st, sq, ok := decodeWindowTimeFirst(raw); ok && !bytes.Equal(windowTimeFirst(k, st, sq), raw) {
			t.Fatalf("time-first %x re-encodes differently", raw)
		}
		// The ordered encoding keeps numeric order.
		if c := bytes.Compare(appendOrderedTime(nil, start), appendOrderedTime(nil, int64(seq)-1<<31)); c != cmp.Compare(start, int64(seq)-1<<31) {
			t.Fatalf("ordered time misorders %d and %d", start, int64(seq)-1<<31)
		}
	})
}

// FuzzWindowRestore feeds arbitrary changelog records to Restore: it must
// fail cleanly or leave a store whose every entry reads back.
func FuzzWindowRestore(f *testing.F) {
	f.Add([]byte{'a', 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0}, []byte("v"), int64(5), false)
	f.Add([]byte{1, 2}, []byte(nil), int64(0), true)
	f.Fuzz(func(t *testing.T, key, value []byte, ts int64, timestamped bool) {
		s, str := serde.Serde[string](stringSerde{}), serde.Serde[string](stringSerde{})
		var b StoreBuilder = WindowStoreBuilder("f", s, str, testRetention, testSize, true, InMemory())
		if timestamped {
			b = TimestampedWindowStoreBuilder("f", s, str, testRetention, testSize, false, InMemory())
		}
		st := must(b.Build())
		if err := st.Init(&recordingContext{}); err != nil {
			t.Fatal(err)
		}
		err := st.(Restorer).Restore([]ChangelogRecord{{Key: key, Value: value, Timestamp: ts}})
		if err != nil {
			if !errors.Is(err, ErrKeyTooShort) {
				t.Fatalf("Restore: %v", err)
			}
			return
		}
		var n int
		if timestamped {
			n = len(drain(t, must(st.(TimestampedWindowStore[string, string]).All()), nil))
		} else {
			n = len(drain(t, must(st.(WindowStore[string, string]).All()), nil))
		}
		if want := 1; value == nil && n != 0 || value != nil && n != want {
			t.Fatalf("restored %d windows from one record (value %x)", n, value)
		}
	})
}

// TestWindowStoreFetchPutModel runs random Fetches, Puts, null Puts and
// Deletes against a map, with the built-in String serde (whose key bytes
// the store views rather than copies): a Put after a Fetch of the same
// window skips the time-first entry, and every other sequence must write
// it, so FetchAll, which reads that index, must always agree with the
// map. Keys include the empty one and some longer than a Fetch's inline
// entry buffer.
func TestWindowStoreFetchPutModel(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	keys := []string{"", "a", "ab", "b", strings.Repeat("k", 43), strings.Repeat("k", 44), strings.Repeat("x", 100)}
	starts := []int64{0, 10, 20, 1 << 40}
	st, err := TimestampedWindowStoreBuilder("win", serde.String(), serde.Int64(), 24*time.Hour, 10*time.Millisecond, false, InMemory()).Build()
	if err != nil {
		t.Fatal(err)
	}
	s := st.(TimestampedWindowStore[string, int64])
	if err := s.Init(&recordingContext{}); err != nil {
		t.Fatal(err)
	}
	type wk struct {
		key   string
		start int64
	}
	model := map[wk]int64{}
	for i := range 5000 {
		k := wk{keys[rng.IntN(len(keys))], starts[rng.IntN(len(starts))]}
		switch op := rng.IntN(10); {
		case op < 4:
			v, found, err := s.Fetch(k.key, k.start)
			want, ok := model[k]
			if err != nil || found != ok || found && v.Value != want {
				t.Fatalf("op %d: Fetch(%q, %d) = %v, %v, %v; want %d, %v", i, k.key, k.start, v, found, err, want, ok)
			}
		case op < 8:
			v := rng.Int64N(1000)
			if err := s.Put(k.key, ValueAndTimestamp[int64]{Value: v, Timestamp: 1}, k.start); err != nil {
				t.Fatal(err)
			}
			model[k] = v
		default:
			if err := s.Delete(k.key, k.start); err != nil {
				t.Fatal(err)
			}
			delete(model, k)
		}
		it, err := s.FetchAll(math.MinInt64, math.MaxInt64)
		got := drain(t, it, err)
		if len(got) != len(model) {
			t.Fatalf("op %d: FetchAll gives %d windows, the model has %d", i, len(got), len(model))
		}
		for _, kv := range got {
			if want, ok := model[wk{kv.Key.Key, kv.Key.Window.Start}]; !ok || want != kv.Value.Value {
				t.Fatalf("op %d: FetchAll has %q@%d = %d; the model %d, %v", i, kv.Key.Key, kv.Key.Window.Start, kv.Value.Value, want, ok)
			}
		}
	}
}
