package state_test

import (
	"flag"
	"slices"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/state"
	"github.com/stoatflow/stoatctl/engine/state/internal/versionedtest"
)

// logContext keeps the changelog a store writes, as restore reads it.
type logContext struct{ log []state.ChangelogRecord }

func (*logContext) ApplicationID() string { return "app" }
func (*logContext) ChangelogTopic(store string) string {
	return "app-" + store + "-changelog"
}
func (*logContext) RecordTimestamp() int64 { return 0 }
func (c *logContext) LogChange(_ string, key, value []byte, ts int64, _ []state.Header) error {
	c.log = append(c.log, state.ChangelogRecord{Key: append([]byte(nil), key...), Value: value, Timestamp: ts})
	return nil
}

// openVersioned builds a versioned store over backend.
func openVersioned(t *testing.T, backend state.BytesSupplier) versionedtest.Opener {
	return func(t *testing.T, name string, retention int64) versionedtest.Env {
		ctx := &logContext{}
		sup := state.VersionedKeyValueStoreOver(backend, time.Duration(retention)*time.Millisecond)
		st, err := state.VersionedKeyValueStoreBuilder(name, serde.String(), serde.Pointer(serde.String()), sup).Build()
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Init(ctx); err != nil {
			t.Fatal(err)
		}
		return versionedtest.Env{
			Store:     st.(state.VersionedKeyValueStore[string, *string]),
			Changelog: func() []state.ChangelogRecord { return ctx.log },
		}
	}
}

// TestVersionedStoreKafkaStreams runs Kafka Streams'
// RocksDBVersionedStoreTest scenarios (versionedtest.Scenarios) over the
// in-memory byte store and the default supplier.
func TestVersionedStoreKafkaStreams(t *testing.T) {
	t.Run("in-memory", func(t *testing.T) { versionedtest.Run(t, openVersioned(t, state.InMemory())) })
	t.Run("default", func(t *testing.T) { versionedtest.Run(t, openVersioned(t, state.Default())) })
}

// TestVersionedStorePrunes holds a key's history to what reads can reach:
// with stream time moving on, a key written every millisecond keeps the
// versions within the retention and one before it, not every version.
func TestVersionedStorePrunes(t *testing.T) {
	ctx := &logContext{}
	st, err := state.VersionedKeyValueStoreBuilder("v", serde.String(), serde.String(),
		state.VersionedKeyValueStoreOver(state.InMemory(), 10*time.Millisecond)).Build()
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Init(ctx); err != nil {
		t.Fatal(err)
	}
	vs := st.(state.VersionedKeyValueStore[string, string])
	for ts := int64(0); ts < 1000; ts++ {
		if _, err := vs.Put("k", "v", ts); err != nil {
			t.Fatal(err)
		}
	}
	n, err := st.(state.BytesBacked).Bytes().ApproximateNumEntries()
	if err != nil {
		t.Fatal(err)
	}
	// Versions 989..999 lie within the retention of stream time 999; 989
	// is the horizon itself, still readable, and nothing older is.
	if n != 11 {
		t.Errorf("%d versions stored, want 11", n)
	}
	if r, ok, err := vs.GetAsOf("k", 989); err != nil || !ok || r.Timestamp != 989 || r.ValidTo != 990 {
		t.Errorf("get(k, 989) = %+v, %v, %v; want the version from 989 to 990", r, ok, err)
	}
	if len(ctx.log) != 1000 {
		t.Errorf("%d changelog records, want one per put (1000)", len(ctx.log))
	}
}

// FuzzVersionEntry decodes byte-store entries of a versioned store, which
// come back from RocksDB written by an earlier run: a decoder must refuse
// what it cannot read, never panic, and read back what it wrote.
func FuzzVersionEntry(f *testing.F) {
	f.Add(state.EncodeVersionKey([]byte("k"), 42), state.EncodeVersionValue([]byte("v")))
	f.Add(state.EncodeVersionKey(nil, -1), state.EncodeVersionValue(nil))
	f.Add([]byte{0, 0, 0, 9}, []byte{2})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		if k, ts, err := state.DecodeVersionKey(key); err == nil {
			if again := state.EncodeVersionKey(k, ts); string(again) != string(key) {
				t.Fatalf("key %x decodes to %q at %d, which encodes to %x", key, k, ts, again)
			}
		}
		if v, err := state.DecodeVersionValue(value); err == nil {
			if again := state.EncodeVersionValue(v); string(again) != string(value) {
				t.Fatalf("value %x decodes to %x, which encodes to %x", value, v, again)
			}
		}
	})
}

// TestVersionedStoreAll lists each key's latest value: out-of-order
// versions do not replace it, a key whose latest version is a tombstone
// is left out, and keys that prefix one another stay apart.
func TestVersionedStoreAll(t *testing.T) {
	env := openVersioned(t, state.InMemory())(t, "all", 1000)
	s := func(v string) *string { return &v }
	for _, p := range []struct {
		k  string
		v  *string
		ts int64
	}{{"a", s("a20"), 20}, {"a", s("a10"), 10}, {"ab", s("ab5"), 5}, {"ab", nil, 7}, {"ab", s("ab6"), 6}, {"b", s("b1"), 1}, {"b", nil, 3}, {"abc", s("abc"), 4}} {
		if _, err := env.Store.Put(p.k, p.v, p.ts); err != nil {
			t.Fatal(err)
		}
	}
	got := versionedtest.List(t, env.Store)
	want := []string{`a="a20"@20`, `abc="abc"@4`}
	if !slices.Equal(got, want) {
		t.Errorf("all = %v, want %v", got, want)
	}
}

// TestVersionedStoreModel holds the store to a plain model of versions
// under random operations (versionedtest.RunModel); the seed is logged and
// -versioned-seed replays it.
func TestVersionedStoreModel(t *testing.T) {
	seed := *versionedSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -versioned-seed %d)", seed, seed)
	versionedtest.RunModel(t, openVersioned(t, state.InMemory()), seed, false)
}

var versionedSeed = flag.Uint64("versioned-seed", 0, "seed of TestVersionedStoreModel (0 picks one)")
