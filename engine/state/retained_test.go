package state

import (
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine/serde"
)

func TestRetainedReopensWhatItsTaskLeft(t *testing.T) {
	r := NewRetained()
	s := r.Get("counts")
	if r.Reopened("counts") {
		t.Fatal("a new store counts as reopened")
	}
	if err := s.Put([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	it, err := s.Range(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get([]byte("k")); err == nil {
		t.Fatal("a closed store answered a read")
	}
	if it.Next() {
		t.Fatal("an iterator of the closed store went on")
	}

	r.Begin()
	again := r.Get("counts")
	if again != s || !r.Reopened("counts") {
		t.Fatalf("Get after close: %p reopened %v, want the same store %p reopened", again, r.Reopened("counts"), s)
	}
	if v, err := again.Get([]byte("k")); err != nil || string(v) != "v" {
		t.Fatalf("reopened store has k = %q, %v; want v", v, err)
	}
	if other := r.Get("other"); r.Reopened("other") {
		t.Fatalf("a store never made came back reopened: %v", other)
	}
	r.Begin()
	if r.Reopened("counts") {
		t.Fatal("Begin left counts reopened")
	}
	// Open, a store is the task's: a second Get of the name makes none
	// the two would share.
	if fresh := r.Get("other"); r.Reopened("other") || fresh == nil {
		t.Fatal("Get of an open store reopened it")
	}
}

func TestInMemoryDropsItsEntriesAtClose(t *testing.T) {
	s := InMemory().Get("counts").(*memoryStore)
	if err := s.Put([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s.closed.Store(false)
	if v, _ := s.Get([]byte("k")); v != nil {
		t.Fatalf("an InMemory store kept %q past its close", v)
	}
}

func TestKeepable(t *testing.T) {
	str, mem := serde.String(), InMemory()
	for _, tc := range []struct {
		b    StoreBuilder
		want bool
	}{
		{KeyValueStoreBuilder("kv", str, str, mem), true},
		{TimestampedKeyValueStoreBuilder("tkv", str, str, mem), true},
		{SessionStoreBuilder("sessions", str, str, time.Minute, mem), true},
		{WindowStoreBuilder("windows", str, str, time.Minute, time.Second, false, mem), true},
		{TimestampedWindowStoreBuilder("twindows", str, str, time.Minute, time.Second, false, mem), true},
		// Its restore takes the next sequence number from the records.
		{WindowStoreBuilder("join", str, str, time.Minute, time.Second, true, mem), false},
		{TimestampedWindowStoreBuilder("tjoin", str, str, time.Minute, time.Second, true, mem), false},
		// Its restore rebuilds its stream time from the versions.
		{VersionedKeyValueStoreBuilder("versions", str, str, VersionedKeyValueStoreOver(mem, time.Hour)), false},
	} {
		if got := Keepable(tc.b); got != tc.want {
			t.Errorf("Keepable(%s, %s) = %v, want %v", tc.b.Name(), tc.b.Kind(), got, tc.want)
		}
	}
}
