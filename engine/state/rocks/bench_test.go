//go:build cgo

package rocks

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stoatflow/stoatctl/engine/state"
)

// BenchmarkRestore writes batches of changelog records through PutAll in
// restore mode, as a restore does: ns/op is per record.
func BenchmarkRestore(b *testing.B) {
	d := must(Open(filepath.Join(b.TempDir(), "lane0")))
	defer d.Close()
	s := d.Store("counts")
	batch := make([]state.KeyValue[[]byte, []byte], 0, 10_000)
	b.ResetTimer()
	d.BeginRestore()
	for i := 0; i < b.N; i++ {
		// Keys in no order, as a changelog partition holds them.
		k := uint64(i%100_000)*0x9E3779B97F4A7C15 + 1
		batch = append(batch, state.KeyValue[[]byte, []byte]{Key: []byte(fmt.Sprintf("key-%016x", k)), Value: []byte("0123456789abcdef")})
		if len(batch) == cap(batch) || i == b.N-1 {
			must(0, s.PutAll(batch))
			batch = batch[:0]
		}
	}
	must(0, d.EndRestore(Checkpoint{Lanes: 1}))
}

// BenchmarkGetPut is the read-modify-write of a count, with a commit
// every 1000 records.
func BenchmarkGetPut(b *testing.B) {
	d := must(Open(filepath.Join(b.TempDir(), "lane0")))
	defer d.Close()
	s := d.Store("counts")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := []byte(fmt.Sprintf("key-%08d", i%10_000))
		must(s.Get(k))
		must(0, s.Put(k, []byte("0123456789abcdef")))
		if i%1000 == 999 {
			d.Seal(d.Epoch())
			must(0, d.Commit(d.Epoch()-1, Checkpoint{Lanes: 1}))
		}
	}
}

// BenchmarkRangeScan opens a small range per record, as a window fetch
// does.
func BenchmarkRangeScan(b *testing.B) {
	d := must(Open(filepath.Join(b.TempDir(), "lane0")))
	defer d.Close()
	s := d.Store("win")
	for i := range 10_000 {
		must(0, s.Put([]byte(fmt.Sprintf("key-%08d", i)), []byte("v")))
	}
	d.Seal(1)
	must(0, d.Commit(1, Checkpoint{Lanes: 1}))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := []byte(fmt.Sprintf("key-%08d", i%10_000))
		it := must(s.Range(k, k))
		for it.Next() {
		}
		it.Close()
	}
}

// BenchmarkEpochLayer puts and reads keys of one epoch's layer, of a
// store named as the engine names a task's join store (some 40 bytes,
// which every key of the store begins with), the epoch holding 50,000
// keys at most, then aborted: the layer's tree searches alone, RocksDB
// untouched.
func BenchmarkEpochLayer(b *testing.B) {
	d := must(Open(filepath.Join(b.TempDir(), "lane0")))
	defer d.Close()
	s := d.Store(TaskPrefix(3) + "KSTREAM-JOINTHIS-0000000004-store")
	const keys = 50_000
	k := make([][]byte, keys)
	for i := range k {
		k[i] = []byte(fmt.Sprintf("key-%05d/%016x", i*7919%keys, i))
	}
	v := []byte("0123456789abcdef")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		j := i % keys
		if j == 0 && i > 0 {
			b.StopTimer()
			d.Abort() // the layer goes, the database stays empty
			b.StartTimer()
		}
		must(0, s.Put(k[j], v))
		must(s.Get(k[(j*31)%(j+1)]))
	}
}
