//go:build cgo

package rocks

import (
	"fmt"
	"testing"
)

// TestProperties: a database with committed keys reports every property
// the engine exports, its keys and memtable among them, and nothing once
// closed.
func TestProperties(t *testing.T) {
	d := openTest(t)
	s := d.Store("s")
	for i := range 1000 {
		if err := s.Put(fmt.Appendf(nil, "k%04d", i), []byte("value")); err != nil {
			t.Fatal(err)
		}
	}
	d.Seal(1)
	if err := d.Commit(1, Checkpoint{Lanes: 1}); err != nil {
		t.Fatal(err)
	}
	p := d.Properties()
	for _, name := range PropertyNames {
		if _, ok := p[name]; !ok {
			t.Errorf("no %s in %v", name, p)
		}
	}
	if keys := p["rocksdb.estimate-num-keys"]; keys < 1000 || keys > 1100 {
		t.Errorf("estimate-num-keys %d, want about 1000 (the keys and the checkpoint)", keys)
	}
	if p["rocksdb.cur-size-all-mem-tables"] == 0 || p["rocksdb.background-errors"] != 0 {
		t.Errorf("memtable %d bytes, %d background errors", p["rocksdb.cur-size-all-mem-tables"], p["rocksdb.background-errors"])
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if p := d.Properties(); p != nil {
		t.Errorf("a closed database answers %v", p)
	}
}
