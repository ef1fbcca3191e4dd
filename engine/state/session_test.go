package state

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/window"
)

// sessionRetention is AbstractSessionBytesStoreTest's RETENTION_PERIOD.
const sessionRetention = 10_000 * time.Millisecond

func newSS(t *testing.T, ctx Context, retention time.Duration) SessionStore[string, int64] {
	t.Helper()
	return buildInit[SessionStore[string, int64]](t,
		SessionStoreBuilder("sess", serde.Serde[string](stringSerde{}), serde.Serde[int64](int64Serde{}), retention, InMemory()), ctx)
}

func sess(key string, start, end int64) window.Windowed[string] {
	return window.Windowed[string]{Key: key, Window: window.Window{Start: start, End: end}}
}

func putSessions(t *testing.T, s SessionStore[string, int64], kvs ...KeyValue[window.Windowed[string], int64]) {
	t.Helper()
	for _, kv := range kvs {
		if err := s.Put(kv.Key, kv.Value); err != nil {
			t.Fatal(err)
		}
	}
}

// The cases mirror Kafka Streams' AbstractSessionBytesStoreTest, which
// compares sets; here the order is checked too: a key's sessions by end,
// then start.
func TestSessionStoreFindSessions(t *testing.T) {
	type kvs = []KeyValue[window.Windowed[string], int64]
	tests := []struct {
		name      string
		retention time.Duration
		puts      kvs
		key       string
		end       int64 // earliestSessionEnd
		start     int64 // latestSessionStart
		want      kvs
	}{
		{"shouldPutAndFindSessionsInRange", sessionRetention,
			kvs{wkv("a", 10, 10, 1), wkv("a", 500, 1000, 2), wkv("a", 1500, 2000, 1), wkv("a", 2500, 3000, 2)},
			"a", 0, 1000, kvs{wkv("a", 10, 10, 1), wkv("a", 500, 1000, 2)}},
		{"shouldPutAndFindSessionsInRange narrower", sessionRetention,
			kvs{wkv("a", 10, 10, 1), wkv("a", 500, 1000, 2), wkv("a", 1500, 2000, 1), wkv("a", 2500, 3000, 2)},
			"a", 400, 600, kvs{wkv("a", 500, 1000, 2)}},
		{"shouldFetchAllSessionsWithSameRecordKey", sessionRetention,
			kvs{wkv("a", 0, 0, 1), wkv("a", 10, 10, 2), wkv("a", 100, 100, 3), wkv("a", 1000, 1000, 4), wkv("aa", 0, 0, 5)},
			"a", 0, math.MaxInt64, kvs{wkv("a", 0, 0, 1), wkv("a", 10, 10, 2), wkv("a", 100, 100, 3), wkv("a", 1000, 1000, 4)}},
		{"shouldFindValuesWithinMergingSessionWindowRange", sessionRetention,
			kvs{wkv("a", 0, 0, 1), wkv("a", 1000, 1000, 2)},
			"a", -1, 1000, kvs{wkv("a", 0, 0, 1), wkv("a", 1000, 1000, 2)}},
		{"shouldFindSessionsToMerge", sessionRetention,
			kvs{wkv("a", 0, 100, 1), wkv("a", 101, 200, 2), wkv("a", 201, 300, 3), wkv("a", 301, 400, 4), wkv("a", 401, 500, 5)},
			"a", 150, 300, kvs{wkv("a", 101, 200, 2), wkv("a", 201, 300, 3)}},
		{"shouldFetchExactKeys a", sessionRetention,
			kvs{wkv("a", 0, 0, 1), wkv("aa", 0, 10, 2), wkv("a", 10, 20, 3), wkv("aa", 10, 20, 4), wkv("a", 0x7a00000000000000-2, 0x7a00000000000000-1, 5)},
			"a", 0, math.MaxInt64, kvs{wkv("a", 0, 0, 1), wkv("a", 10, 20, 3), wkv("a", 0x7a00000000000000-2, 0x7a00000000000000-1, 5)}},
		{"shouldFetchExactKeys aa", sessionRetention,
			kvs{wkv("a", 0, 0, 1), wkv("aa", 0, 10, 2), wkv("a", 10, 20, 3), wkv("aa", 10, 20, 4)},
			"aa", 0, math.MaxInt64, kvs{wkv("aa", 0, 10, 2), wkv("aa", 10, 20, 4)}},
		{"shouldFetchAndIterateOverExactBinaryKeys", sessionRetention,
			kvs{wkv("\x00", 1, 100, 1), wkv("\x00\x00", 2, 100, 2), wkv("\x00\x00\x00", 3, 100, 3),
				wkv("\x00", 4, 100, 4), wkv("\x00\x00", 5, 100, 5), wkv("\x00\x00\x00", 6, 100, 6),
				wkv("\x00", 7, 100, 7), wkv("\x00\x00", 8, 100, 8), wkv("\x00\x00\x00", 9, 100, 9)},
			"\x00\x00", 0, math.MaxInt64, kvs{wkv("\x00\x00", 2, 100, 2), wkv("\x00\x00", 5, 100, 5), wkv("\x00\x00", 8, 100, 8)}},
		{"testIteratorPeek", sessionRetention,
			kvs{wkv("a", 0, 0, 1), wkv("aa", 0, 10, 2), wkv("a", 10, 20, 3), wkv("aa", 10, 20, 4)},
			"a", 0, 20, kvs{wkv("a", 0, 0, 1), wkv("a", 10, 20, 3)}},
		{"same end orders by start", sessionRetention,
			kvs{wkv("a", 5, 10, 1), wkv("a", 0, 10, 2), wkv("a", 10, 10, 3)},
			"a", math.MinInt64, math.MaxInt64, kvs{wkv("a", 0, 10, 2), wkv("a", 5, 10, 1), wkv("a", 10, 10, 3)}},
		{"negative times", sessionRetention,
			kvs{wkv("a", -10, -5, 1), wkv("a", -3, 2, 2)},
			"a", -6, 0, kvs{wkv("a", -10, -5, 1), wkv("a", -3, 2, 2)}},
		{"absent key", sessionRetention, kvs{wkv("a", 0, 0, 1)}, "b", 0, 10, nil},
		{"nothing ends late enough", sessionRetention, kvs{wkv("a", 0, 5, 1)}, "a", 6, 10, nil},
		{"nothing starts early enough", sessionRetention, kvs{wkv("a", 5, 5, 1)}, "a", 0, 4, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSS(t, &recordingContext{}, tt.retention)
			putSessions(t, s, tt.puts...)
			it, err := s.FindSessions(tt.key, tt.end, tt.start)
			checkEntries(t, fmt.Sprintf("FindSessions(%q, %d, %d)", tt.key, tt.end, tt.start), drain(t, it, err), tt.want)
		})
	}
}

func TestSessionStoreFetchSession(t *testing.T) {
	s := newSS(t, &recordingContext{}, sessionRetention)
	// shouldFetchExactSession
	putSessions(t, s, wkv("a", 0, 4, 1), wkv("aa", 0, 3, 2), wkv("aa", 0, 4, 3), wkv("aa", 1, 4, 4), wkv("aaa", 0, 4, 5))
	tests := []struct {
		key        string
		start, end int64
		want       int64
		found      bool
	}{
		{"aa", 0, 4, 3, true},
		{"aa", 1, 4, 4, true},
		{"a", 0, 4, 1, true},
		{"aa", 0, 5, 0, false},
		{"any key", 0, 5, 0, false}, // shouldReturnNullOnSessionNotFound
	}
	for _, tt := range tests {
		v, found, err := s.FetchSession(tt.key, tt.start, tt.end)
		if err != nil || v != tt.want || found != tt.found {
			t.Fatalf("FetchSession(%q, %d, %d) = %d, %v, %v; want %d, %v", tt.key, tt.start, tt.end, v, found, err, tt.want, tt.found)
		}
	}
}

func TestSessionStoreRemove(t *testing.T) {
	t.Run("shouldRemove", func(t *testing.T) {
		s := newSS(t, &recordingContext{}, sessionRetention)
		putSessions(t, s, wkv("a", 0, 1000, 1), wkv("a", 1500, 2500, 2))
		if err := s.Remove(sess("a", 0, 1000)); err != nil {
			t.Fatal(err)
		}
		it, err := s.FindSessions("a", 0, 1000)
		checkEntries(t, "removed range", drain(t, it, err), nil)
		it, err = s.FindSessions("a", 1500, 2500)
		checkEntries(t, "kept range", drain(t, it, err), []KeyValue[window.Windowed[string], int64]{wkv("a", 1500, 2500, 2)})
		// shouldNotThrowExceptionRemovingNonexistentKey
		if err := s.Remove(sess("b", 0, 1)); err != nil {
			t.Fatal(err)
		}
		if n := must(s.(BytesBacked).Bytes().ApproximateNumEntries()); n != 2 {
			t.Fatalf("%d byte entries, want 2", n)
		}
	})
	t.Run("shouldRemoveOnNullAggValue", func(t *testing.T) {
		ctx := &recordingContext{ts: 3}
		s := buildInit[SessionStore[string, *int64]](t,
			SessionStoreBuilder("p", serde.Serde[string](stringSerde{}), serde.Serde[*int64](ptrSerde{}), sessionRetention, InMemory()), ctx)
		one, two := int64(1), int64(2)
		if err := s.Put(sess("a", 0, 1000), &one); err != nil {
			t.Fatal(err)
		}
		if err := s.Put(sess("a", 1500, 2500), &two); err != nil {
			t.Fatal(err)
		}
		ctx.take()
		if err := s.Put(sess("a", 0, 1000), nil); err != nil {
			t.Fatal(err)
		}
		checkChanges(t, ctx.take(), []loggedChange{{"p", cat([]byte("a"), be64(1000), be64(0)), nil, 3}})
		it, err := s.FindSessions("a", 0, 1000)
		if got := drain(t, it, err); len(got) != 0 {
			t.Fatalf("found %+v after null put", got)
		}
	})
}

// The changelog bytes are written out by hand from Kafka Streams'
// SessionKeySchema.toBinary: key, 8-byte end, 8-byte start, big-endian.
func TestSessionStoreChangelogLayout(t *testing.T) {
	ctx := &recordingContext{ts: 1000}
	s := newSS(t, ctx, sessionRetention)
	a := []byte{'a'}
	steps := []struct {
		name string
		do   func() error
		want []loggedChange
	}{
		{"put", func() error { return s.Put(sess("a", 5, 10), 2) },
			[]loggedChange{{"sess", cat(a, be64(10), be64(5)), int64Bytes(2), 1000}}},
		{"remove", func() error { return s.Remove(sess("a", 5, 10)) },
			[]loggedChange{{"sess", cat(a, be64(10), be64(5)), nil, 1000}}},
		{"big-endian fields", func() error { return s.Put(sess("ab", 0x0102, 0x0304), 7) },
			[]loggedChange{{"sess", cat([]byte("ab"), []byte{0, 0, 0, 0, 0, 0, 3, 4}, []byte{0, 0, 0, 0, 0, 0, 1, 2}), int64Bytes(7), 1000}}},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		checkChanges(t, ctx.take(), st.want)
	}
	got := collect(t, must(s.(BytesBacked).Bytes().All()))
	want := []KeyValue[[]byte, []byte]{
		{Key: cat([]byte{0}, ord64(0), []byte("ab"), ord64(0x0304), ord64(0x0102)), Value: int64Bytes(7)},
		{Key: cat([]byte{1}, ord64(0x0304), ord64(0x0102), []byte("ab")), Value: []byte{}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("byte store =\n  %x\nwant\n  %x", got, want)
	}
}

func TestEncodeSessionKey(t *testing.T) {
	got := EncodeSessionKey([]byte("k"), 5, 10)
	if want := []byte{'k', 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0, 0, 0, 5}; !bytes.Equal(got, want) {
		t.Fatalf("EncodeSessionKey = % x, want % x", got, want)
	}
	key, start, end, err := DecodeSessionKey(got)
	if err != nil || string(key) != "k" || start != 5 || end != 10 {
		t.Fatalf("DecodeSessionKey = %q %d %d %v", key, start, end, err)
	}
	if _, _, _, err := DecodeSessionKey(make([]byte, 15)); !errors.Is(err, ErrKeyTooShort) {
		t.Fatalf("short key: %v", err)
	}
}

func TestSessionStoreFindSessionsAll(t *testing.T) {
	s := newSS(t, &recordingContext{}, sessionRetention)
	putSessions(t, s, wkv("b", 0, 30, 1), wkv("a", 5, 10, 2), wkv("c", 10, 10, 3), wkv("a", 20, 30, 4), wkv("aa", 0, 10, 5), wkv("a", 0, 10, 6))
	type kvs = []KeyValue[window.Windowed[string], int64]
	tests := []struct {
		name       string
		end, start int64
		want       kvs
	}{
		{"end order, then start, then key", math.MinInt64, math.MaxInt64,
			kvs{wkv("a", 0, 10, 6), wkv("aa", 0, 10, 5), wkv("a", 5, 10, 2), wkv("c", 10, 10, 3), wkv("b", 0, 30, 1), wkv("a", 20, 30, 4)}},
		{"earliest end", 11, math.MaxInt64, kvs{wkv("b", 0, 30, 1), wkv("a", 20, 30, 4)}},
		{"latest start", math.MinInt64, 4, kvs{wkv("a", 0, 10, 6), wkv("aa", 0, 10, 5), wkv("b", 0, 30, 1)}},
		{"both", 10, 5, kvs{wkv("a", 0, 10, 6), wkv("aa", 0, 10, 5), wkv("a", 5, 10, 2), wkv("b", 0, 30, 1)}},
		{"none", 31, math.MaxInt64, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			it, err := s.FindSessionsAll(tt.end, tt.start)
			checkEntries(t, fmt.Sprintf("FindSessionsAll(%d, %d)", tt.end, tt.start), drain(t, it, err), tt.want)
		})
	}
}

func TestSessionStoreExpire(t *testing.T) {
	ctx := &recordingContext{}
	// Segments of 1 ms: what expiry drops is exact (TestSessionStoreSegments
	// has wider ones).
	s := buildInit[SessionStore[string, int64]](t,
		SessionStoreBuilder("sess", serde.Serde[string](stringSerde{}), serde.Serde[int64](int64Serde{}), 10*time.Millisecond, InMemory()).WithSegmentInterval(time.Millisecond), ctx)
	putSessions(t, s, wkv("a", 0, 0, 1), wkv("a", 1, 9, 2), wkv("b", 5, 10, 3), wkv("a", 15, 20, 4))
	ctx.take()
	ends := func() []int64 {
		it, err := s.FindSessionsAll(math.MinInt64, math.MaxInt64)
		var out []int64
		for _, kv := range drain(t, it, err) {
			out = append(out, kv.Key.Window.End)
		}
		return out
	}
	steps := []struct {
		frontier int64
		want     []int64
	}{
		{9, []int64{0, 9, 10, 20}},
		{10, []int64{9, 10, 20}},   // end 0 <= 10 - 10
		{19, []int64{10, 20}},      // end 9 <= 19 - 10; end 10 stays
		{15, []int64{10, 20}},      // lower frontier: nothing
		{30, []int64{}},            // end 20 <= 30 - 10
		{math.MinInt64, []int64{}}, // no overflow
	}
	for _, st := range steps {
		if err := s.Expire(st.frontier); err != nil {
			t.Fatal(err)
		}
		if got := ends(); !slices.Equal(got, st.want) && (len(got) != 0 || len(st.want) != 0) {
			t.Fatalf("Expire(%d) left ends %v, want %v", st.frontier, got, st.want)
		}
		if n := must(s.(BytesBacked).Bytes().ApproximateNumEntries()); n != int64(2*len(st.want)) {
			t.Fatalf("Expire(%d): %d byte entries, want %d", st.frontier, n, 2*len(st.want))
		}
	}
	checkChanges(t, ctx.take(), nil)

	// shouldLogAndMeasureExpiredRecords, with the frontier given: a late
	// session is dropped, an on-time one kept.
	s = newSS(t, ctx, sessionRetention)
	if err := s.Expire(2 * 60_000); err != nil {
		t.Fatal(err)
	}
	putSessions(t, s, wkv("late record", 0, 0, 0), wkv("another on-time record", 0, 2*60_000, 0))
	if changes := ctx.take(); len(changes) != 1 || string(changes[0].Key[:len("another")]) != "another" {
		t.Fatalf("logged %+v, want only the on-time record", changes)
	}
	if _, found, _ := s.FetchSession("late record", 0, 0); found {
		t.Fatal("late session was stored")
	}
}

func TestSessionStoreRestore(t *testing.T) {
	// shouldRestore: what the store logged restores it.
	ctx := &recordingContext{ts: 4}
	s := newSS(t, ctx, sessionRetention)
	putSessions(t, s, wkv("a", 0, 0, 1), wkv("a", 10, 10, 2), wkv("a", 100, 100, 3), wkv("a", 1000, 1000, 4), wkv("b", 5, 50, 5))
	if err := s.Remove(sess("b", 5, 50)); err != nil {
		t.Fatal(err)
	}
	var records []ChangelogRecord
	for _, c := range ctx.take() {
		records = append(records, ChangelogRecord{Key: c.Key, Value: c.Value, Timestamp: c.Timestamp})
	}
	r := must(SessionStoreBuilder("sess", serde.Serde[string](stringSerde{}), serde.Serde[int64](int64Serde{}), sessionRetention, InMemory()).Build())
	if err := r.(Restorer).Restore(records); err != nil { // before Init
		t.Fatal(err)
	}
	got := collect(t, must(r.(BytesBacked).Bytes().All()))
	want := collect(t, must(s.(BytesBacked).Bytes().All()))
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("restored =\n  %x\nwant\n  %x", got, want)
	}

	t.Run("hand-written records", func(t *testing.T) {
		s := newSS(t, &recordingContext{}, sessionRetention)
		if err := s.(Restorer).Restore([]ChangelogRecord{
			{Key: cat([]byte("k"), be64(10), be64(5)), Value: int64Bytes(1)},
			{Key: cat([]byte("k"), be64(20), be64(15)), Value: int64Bytes(2)},
			{Key: cat([]byte("k"), be64(10), be64(5)), Value: nil},
		}); err != nil {
			t.Fatal(err)
		}
		it, err := s.FindSessions("k", math.MinInt64, math.MaxInt64)
		checkEntries(t, "restored", drain(t, it, err), []KeyValue[window.Windowed[string], int64]{wkv("k", 15, 20, 2)})
	})
	t.Run("bad key writes nothing", func(t *testing.T) {
		s := newSS(t, &recordingContext{}, sessionRetention)
		err := s.(Restorer).Restore([]ChangelogRecord{records[0], {Key: make([]byte, 15)}})
		if !errors.Is(err, ErrKeyTooShort) || err.Error() != `store "sess": restore: record 1: decode session key: 15 bytes, need at least 16: key too short for window suffix` {
			t.Fatalf("Restore = %v", err)
		}
		if n := must(s.(BytesBacked).Bytes().ApproximateNumEntries()); n != 0 {
			t.Fatalf("%d entries written", n)
		}
	})
	t.Run("expired sessions are skipped", func(t *testing.T) {
		s := newSS(t, &recordingContext{}, sessionRetention)
		if err := s.Expire(10_100); err != nil { // keeps ends > 100
			t.Fatal(err)
		}
		if err := s.(Restorer).Restore(records); err != nil {
			t.Fatal(err)
		}
		it, err := s.FindSessionsAll(math.MinInt64, math.MaxInt64)
		checkEntries(t, "restored", drain(t, it, err), []KeyValue[window.Windowed[string], int64]{wkv("a", 1000, 1000, 4)})
	})
}

func TestSessionStoreErrors(t *testing.T) {
	t.Run("not initialized", func(t *testing.T) {
		s := must(SessionStoreBuilder("sess", serde.Serde[string](stringSerde{}), serde.Serde[int64](int64Serde{}), sessionRetention, InMemory()).Build()).(SessionStore[string, int64])
		errs := []error{
			s.Put(sess("a", 0, 0), 1),
			s.Remove(sess("a", 0, 0)),
			second2(s.FetchSession("a", 0, 0)),
			second(s.FindSessions("a", 0, 0)),
			second(s.FindSessionsAll(0, 0)),
		}
		for i, err := range errs {
			if !errors.Is(err, ErrNotInitialized) {
				t.Fatalf("op %d: %v, want ErrNotInitialized", i, err)
			}
		}
	})
	t.Run("session ending before it starts", func(t *testing.T) {
		s := newSS(t, &recordingContext{}, sessionRetention)
		if err := s.Put(sess("a", 5, 4), 1); err == nil || err.Error() != `store "sess": put: session [5, 4] ends before it starts` {
			t.Fatalf("Put = %v", err)
		}
	})
	t.Run("iterator decode failure", func(t *testing.T) {
		s := buildInit[SessionStore[string, int64]](t,
			SessionStoreBuilder("bad", serde.Serde[string](stringSerde{}), serde.Serde[int64](failingSerde{}), sessionRetention, InMemory()), &recordingContext{})
		if err := s.(Restorer).Restore([]ChangelogRecord{{Key: EncodeSessionKey([]byte("a"), 0, 0), Value: []byte{1}}}); err != nil {
			t.Fatal(err)
		}
		it, err := s.FindSessionsAll(math.MinInt64, math.MaxInt64)
		if err != nil {
			t.Fatal(err)
		}
		defer it.Close()
		if !it.Next() {
			t.Fatal("no session")
		}
		_ = it.Value()
		if err := it.Err(); !errors.Is(err, errSerde) || err.Error() != `store "bad": iterate: deserialize value: serde failed` {
			t.Fatalf("Err = %v", err)
		}
		if it.Next() {
			t.Fatal("Next after a failure")
		}
	})
}

type sessionModelKey struct {
	key        string
	start, end int64
}

// TestSessionStoreModel compares random operations against a map, with
// the time index and without it (which must hold no time-first entry and
// give FindSessionsAll in the same order).
func TestSessionStoreModel(t *testing.T) {
	for _, keyOnly := range []bool{false, true} {
		t.Run(fmt.Sprintf("key-index-only=%v", keyOnly), func(t *testing.T) { testSessionStoreModel(t, keyOnly) })
	}
}

func testSessionStoreModel(t *testing.T, keyOnly bool) {
	keys := []string{"", "a", "aa", "a\x00", "a\x80", "\xff", "a\x80\x00\x00\x00\x00\x00\x00"}
	times := []int64{math.MinInt64, -7, -1, 0, 1, 5, 10, 256, 1 << 40, math.MaxInt64}
	rng := rand.New(rand.NewPCG(2, 3))
	ctx := &recordingContext{}
	build := func(ctx Context) SessionStore[string, int64] {
		b := SessionStoreBuilder("sess", serde.Serde[string](stringSerde{}), serde.Serde[int64](int64Serde{}), sessionRetention, InMemory())
		if keyOnly {
			b.WithoutTimeIndex()
		}
		return buildInit[SessionStore[string, int64]](t, b, ctx)
	}
	s := build(ctx)
	model := map[sessionModelKey]int64{}
	pick := func() int64 { return times[rng.IntN(len(times))] }
	for step := range 3000 {
		k := keys[rng.IntN(len(keys))]
		a, b := pick(), pick()
		start, end := min(a, b), max(a, b)
		switch op := rng.IntN(10); {
		case op < 5:
			v := rng.Int64()
			if err := s.Put(sess(k, start, end), v); err != nil {
				t.Fatal(err)
			}
			model[sessionModelKey{k, start, end}] = v
		case op < 7:
			if err := s.Remove(sess(k, start, end)); err != nil {
				t.Fatal(err)
			}
			delete(model, sessionModelKey{k, start, end})
		case op < 9:
			earliestEnd, latestStart := pick(), pick()
			var mks []sessionModelKey
			for mk := range model {
				if mk.key == k && mk.end >= earliestEnd && mk.start <= latestStart {
					mks = append(mks, mk)
				}
			}
			slices.SortFunc(mks, func(x, y sessionModelKey) int {
				return cmp.Or(cmp.Compare(x.end, y.end), cmp.Compare(x.start, y.start))
			})
			var want []KeyValue[window.Windowed[string], int64]
			for _, mk := range mks {
				want = append(want, wkv(mk.key, mk.start, mk.end, model[mk]))
			}
			it, err := s.FindSessions(k, earliestEnd, latestStart)
			checkEntries(t, fmt.Sprintf("step %d: FindSessions(%q, %d, %d)", step, k, earliestEnd, latestStart), drain(t, it, err), want)
		default:
			earliestEnd, latestStart := pick(), pick()
			var mks []sessionModelKey
			for mk := range model {
				if mk.end >= earliestEnd && mk.start <= latestStart {
					mks = append(mks, mk)
				}
			}
			slices.SortFunc(mks, func(x, y sessionModelKey) int {
				return cmp.Or(cmp.Compare(x.end, y.end), cmp.Compare(x.start, y.start), bytes.Compare([]byte(x.key), []byte(y.key)))
			})
			var want []KeyValue[window.Windowed[string], int64]
			for _, mk := range mks {
				want = append(want, wkv(mk.key, mk.start, mk.end, model[mk]))
			}
			it, err := s.FindSessionsAll(earliestEnd, latestStart)
			checkEntries(t, fmt.Sprintf("step %d: FindSessionsAll(%d, %d)", step, earliestEnd, latestStart), drain(t, it, err), want)
		}
	}
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
	if keyOnly && timeFirst != 0 || !keyOnly && len(model) > 0 && timeFirst == 0 {
		t.Fatalf("%d time-first entries beside %d segments of key-first ones", timeFirst, len(segs))
	}
}

func FuzzDecodeSessionKey(f *testing.F) {
	f.Add([]byte{'k', 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0, 0, 0, 5})
	f.Add(make([]byte, 16))
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, b []byte) {
		key, start, end, err := DecodeSessionKey(b)
		if err != nil {
			if len(b) >= 16 || !errors.Is(err, ErrKeyTooShort) {
				t.Fatalf("DecodeSessionKey(%x): %v", b, err)
			}
			return
		}
		if got := EncodeSessionKey(key, start, end); !bytes.Equal(got, b) {
			t.Fatalf("re-encode of %x gave %x", b, got)
		}
	})
}

func FuzzSessionIndexKeys(f *testing.F) {
	f.Add([]byte("a"), int64(0), int64(1), []byte{0, 'a'})
	f.Add([]byte{}, int64(-1), int64(math.MaxInt64), []byte{1, 0x80, 0, 0, 0, 0, 0, 0, 0, 0x80, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, key []byte, start, end int64, raw []byte) {
		sg, k, st, en, ok := decodeSessionKeyFirst(sessionKeyFirst(end/7, key, start, end))
		if !ok || sg != end/7 || !bytes.Equal(k, key) || st != start || en != end {
			t.Fatalf("key-first round trip of %x %d %d gave %x %d %d %v", key, start, end, k, st, en, ok)
		}
		k, st, en, ok = decodeSessionTimeFirst(sessionTimeFirst(key, start, end))
		if !ok || !bytes.Equal(k, key) || st != start || en != end {
			t.Fatalf("time-first round trip of %x %d %d gave %x %d %d %v", key, start, end, k, st, en, ok)
		}
		if sg, k, st, en, ok := decodeSessionKeyFirst(raw); ok && !bytes.Equal(sessionKeyFirst(sg, k, st, en), raw) {
			t.Fatalf("key-first %x re-encodes differently", raw)
		}
		if k, st, en, ok := decodeSessionTimeFirst(raw); ok && !bytes.Equal(sessionTimeFirst(k, st, en), raw) {
			t.Fatalf("time-first %x re-encodes differently", raw)
		}
	})
}

func FuzzSessionRestore(f *testing.F) {
	f.Add([]byte{'k', 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0, 0, 0, 5}, []byte("v"), int64(5))
	f.Add([]byte{1, 2}, []byte(nil), int64(0))
	f.Fuzz(func(t *testing.T, key, value []byte, ts int64) {
		s := buildInit[SessionStore[string, string]](t,
			SessionStoreBuilder("f", serde.Serde[string](stringSerde{}), serde.Serde[string](stringSerde{}), sessionRetention, InMemory()), &recordingContext{})
		err := s.(Restorer).Restore([]ChangelogRecord{{Key: key, Value: value, Timestamp: ts}})
		if err != nil {
			if !errors.Is(err, ErrKeyTooShort) {
				t.Fatalf("Restore: %v", err)
			}
			return
		}
		n := len(drain(t, must(s.FindSessionsAll(math.MinInt64, math.MaxInt64)), nil))
		if value == nil && n != 0 || value != nil && n != 1 {
			t.Fatalf("restored %d sessions from one record (value %x)", n, value)
		}
		if value != nil {
			k, start, end, _ := DecodeSessionKey(key)
			v, found, err := s.FetchSession(string(k), start, end)
			if err != nil || !found || v != string(value) {
				t.Fatalf("FetchSession = %q, %v, %v", v, found, err)
			}
		}
	})
}
