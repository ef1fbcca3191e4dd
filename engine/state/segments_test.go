package state

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine/serde"
)

func TestSegmentOf(t *testing.T) {
	for _, c := range []struct{ t, interval, want int64 }{
		{0, 50, 0}, {49, 50, 0}, {50, 50, 1}, {-1, 50, -1}, {-50, 50, -1}, {-51, 50, -2},
		{math.MaxInt64, 60_000, math.MaxInt64 / 60_000}, {math.MinInt64, 60_000, math.MinInt64/60_000 - 1},
	} {
		if got := segmentOf(c.t, c.interval); got != c.want {
			t.Errorf("segmentOf(%d, %d) = %d, want %d", c.t, c.interval, got, c.want)
		}
	}
	if DefaultSegmentInterval(10_000) != 60_000 || DefaultSegmentInterval(600_000) != 300_000 {
		t.Fatal("DefaultSegmentInterval is not Kafka Streams' max(retention/2, 60 s)")
	}
}

// keyFirstSegments lists the segments of the key-first entries in a
// window or session byte store, and counts the time-first entries.
func keyFirstSegments(t *testing.T, bs KeyValueBytesStore) (segs []int64, timeFirst int) {
	t.Helper()
	it := must(bs.All())
	defer it.Close()
	for it.Next() {
		k := it.Key()
		if k[0] != indexKeyFirst {
			if k[0] == indexTimeFirst {
				timeFirst++
			}
			continue
		}
		seg := readOrderedTime(k[1:])
		if len(segs) == 0 || segs[len(segs)-1] != seg {
			segs = append(segs, seg)
		}
	}
	return segs, timeFirst
}

// TestWindowStoreSegments: with retention 100 and segments of 50, expiry
// at 230 (horizon 131) drops segments 0 and 1 whole, keeps 2 (100..149)
// on disk though 100..130 are past retention, and hides those from every
// read; what is within retention stays readable in start order across
// segments.
func TestWindowStoreSegments(t *testing.T) {
	ctx := &recordingContext{}
	s := buildInit[WindowStore[string, int64]](t, windowBuilder(false).WithSegmentInterval(50*time.Millisecond), ctx)
	for start := int64(0); start < 300; start += 10 {
		for _, k := range []string{"a", "b"} {
			if err := s.Put(k, start, start); err != nil {
				t.Fatal(err)
			}
		}
	}
	sg := s.(Segmented)
	if n := sg.Segments(); n != 6 {
		t.Fatalf("%d segments before expiry, want 6", n)
	}
	ctx.take()
	if err := s.Expire(230); err != nil {
		t.Fatal(err)
	}
	checkChanges(t, ctx.take(), nil) // expiry is not logged
	if n := sg.Segments(); n != 4 {
		t.Fatalf("%d segments after expiry, want 4", n)
	}
	segs, tf := keyFirstSegments(t, s.(BytesBacked).Bytes())
	if !slices.Equal(segs, []int64{2, 3, 4, 5}) || tf != 2*20 {
		t.Fatalf("byte store holds segments %v and %d time-first entries, want [2 3 4 5] and 40", segs, tf)
	}
	for _, c := range []struct {
		start int64
		found bool
	}{{50, false}, {120, false}, {130, false}, {140, true}, {290, true}} {
		if _, found, err := s.Fetch("a", c.start); err != nil || found != c.found {
			t.Errorf("Fetch(a, %d): found %v, %v; want %v", c.start, found, err, c.found)
		}
	}
	var starts []int64
	it, err := s.FetchRange("a", 0, 1000)
	for _, kv := range drain(t, it, err) {
		starts = append(starts, kv.Key)
	}
	want := []int64{140, 150, 160, 170, 180, 190, 200, 210, 220, 230, 240, 250, 260, 270, 280, 290}
	if !slices.Equal(starts, want) {
		t.Fatalf("FetchRange(a, 0, 1000) = %v, want %v", starts, want)
	}
	starts = nil
	all, err := s.FetchAll(0, 1000)
	for _, kv := range drain(t, all, err) {
		if kv.Key.Key == "b" {
			starts = append(starts, kv.Key.Window.Start)
		}
	}
	if !slices.Equal(starts, want) {
		t.Fatalf("FetchAll(0, 1000) for b = %v, want %v", starts, want)
	}
	// A put past retention is dropped; within it, kept, in its segment.
	if err := s.Put("a", 1, 130); err != nil {
		t.Fatal(err)
	}
	if _, found, _ := s.Fetch("a", 130); found {
		t.Fatal("a put past retention was kept")
	}
	if err := s.Put("c", 1, 400); err != nil {
		t.Fatal(err)
	}
	if n := sg.Segments(); n != 5 {
		t.Fatalf("%d segments after a put into a new one, want 5", n)
	}
	// Everything.
	if err := s.Expire(math.MaxInt64); err != nil {
		t.Fatal(err)
	}
	if n := must(s.(BytesBacked).Bytes().ApproximateNumEntries()); n != 0 || sg.Segments() != 0 {
		t.Fatalf("%d byte entries and %d segments after expiring everything", n, sg.Segments())
	}
}

// TestSessionStoreSegments: sessions segment by end; expiry drops the
// segments whose every end is past retention.
func TestSessionStoreSegments(t *testing.T) {
	ctx := &recordingContext{}
	s := buildInit[SessionStore[string, int64]](t,
		SessionStoreBuilder("sess", serde.Serde[string](stringSerde{}), serde.Serde[int64](int64Serde{}), 100*time.Millisecond, InMemory()).WithSegmentInterval(50*time.Millisecond), ctx)
	for end := int64(0); end < 300; end += 10 {
		putSessions(t, s, wkv("a", max(end-5, 0), end, end), wkv("b", end, end, end))
	}
	if err := s.Expire(230); err != nil { // horizon 131: ends < 100 dropped, 100..130 hidden
		t.Fatal(err)
	}
	segs, tf := keyFirstSegments(t, s.(BytesBacked).Bytes())
	if !slices.Equal(segs, []int64{2, 3, 4, 5}) || tf != 2*20 || s.(Segmented).Segments() != 4 {
		t.Fatalf("byte store holds segments %v and %d time-first entries (%d listed), want [2 3 4 5] and 40", segs, tf, s.(Segmented).Segments())
	}
	var ends []int64
	it, err := s.FindSessions("a", 0, math.MaxInt64)
	for _, kv := range drain(t, it, err) {
		ends = append(ends, kv.Key.Window.End)
	}
	want := []int64{140, 150, 160, 170, 180, 190, 200, 210, 220, 230, 240, 250, 260, 270, 280, 290}
	if !slices.Equal(ends, want) {
		t.Fatalf("FindSessions(a) ends = %v, want %v", ends, want)
	}
	ends = nil
	all, err := s.FindSessionsAll(0, math.MaxInt64)
	for _, kv := range drain(t, all, err) {
		if kv.Key.Key == "b" {
			ends = append(ends, kv.Key.Window.End)
		}
	}
	if !slices.Equal(ends, want) {
		t.Fatalf("FindSessionsAll ends of b = %v, want %v", ends, want)
	}
	if _, found, _ := s.FetchSession("a", 115, 120); found {
		t.Fatal("FetchSession read a session past retention")
	}
	if _, found, _ := s.FetchSession("a", 135, 140); !found {
		t.Fatal("FetchSession lost a session within retention")
	}
}

// TestWindowStoreUpdateSkipsTheTimeIndex: a Put of the window the last
// Fetch found writes only its key-first entry; after a delete in between
// it writes both again, so the window stays in FetchAll.
func TestWindowStoreUpdateSkipsTheTimeIndex(t *testing.T) {
	s := buildInit[WindowStore[string, int64]](t, windowBuilder(false), &recordingContext{})
	inAll := func() int {
		it, err := s.FetchAll(0, 1000)
		return len(drain(t, it, err))
	}
	must(0, s.Put("a", 1, 10))
	for _, step := range []func(){
		func() {},                             // fetch, put: an update
		func() { must(0, s.Delete("a", 10)) }, // fetch, delete, put
		func() { must(0, s.Expire(50)) },      // fetch, expire (keeps it), put
		func() { must(0, s.Put("a", 7, 10)); s.Delete("a", 10) }, // fetch, put, delete, put
	} {
		if _, found, err := s.Fetch("a", 10); err != nil || !found {
			t.Fatalf("Fetch(a, 10) = %v, %v", found, err)
		}
		step()
		must(0, s.Put("a", 2, 10))
		if n := inAll(); n != 1 {
			t.Fatalf("FetchAll holds %d windows, want 1", n)
		}
		if n := must(s.(BytesBacked).Bytes().ApproximateNumEntries()); n != 2 {
			t.Fatalf("%d byte entries, want 2", n)
		}
	}
}
