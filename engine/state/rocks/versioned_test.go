//go:build cgo

package rocks

import (
	"path/filepath"
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

// TestVersionedStoreKafkaStreams runs Kafka Streams'
// RocksDBVersionedStoreTest scenarios over RocksDB: each step's writes
// land in an epoch layer, every other step seals and commits the epoch
// (so reads merge the database, a sealed layer and the writable one), and
// the store restored from the changelog is written in bulk, as the
// runtime restores, without reading what it restores.
func TestVersionedStoreKafkaStreams(t *testing.T) {
	versionedtest.Run(t, openVersioned)
}

// TestVersionedStoreModel holds the store in RocksDB to a plain model of
// versions under random operations (versionedtest.RunModel), committing
// an epoch every 97 operations so that reads and prunes cross the
// database and the layers; the seed is logged and -seed replays it.
func TestVersionedStoreModel(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -seed %d)", seed, seed)
	versionedtest.RunModel(t, openVersioned, seed, true)
}

// openVersioned opens a versioned store in a fresh database.
func openVersioned(t *testing.T, name string, retention int64) versionedtest.Env {
	d, err := Open(filepath.Join(t.TempDir(), name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	ctx := &logContext{}
	sup := state.VersionedKeyValueStoreOver(d.Supplier(), time.Duration(retention)*time.Millisecond)
	st, err := state.VersionedKeyValueStoreBuilder(name, serde.String(), serde.Pointer(serde.String()), sup).Build()
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Init(ctx); err != nil {
		t.Fatal(err)
	}
	epoch := int64(0)
	return versionedtest.Env{
		Store:     st.(state.VersionedKeyValueStore[string, *string]),
		Changelog: func() []state.ChangelogRecord { return ctx.log },
		Settle: func(step int) {
			d.Seal(epoch)
			if step%2 == 1 {
				if err := d.Commit(epoch-1, Checkpoint{Lanes: 1}); err != nil {
					t.Fatal(err)
				}
			}
			epoch++
		},
		BeginRestore: d.BeginRestore,
		EndRestore: func() {
			if err := d.EndRestore(Checkpoint{Lanes: 1}); err != nil {
				t.Fatal(err)
			}
		},
	}
}
