//go:build cgo && linux

package rocks

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stoatflow/stoatctl/internal/smalldisk"
)

// TestFullDisk commits epochs to a lane database on a small disk until a
// commit fails: the error names the database's directory, and once the
// disk has room again every epoch committed before it is there, with the
// checkpoint of the last.
func TestFullDisk(t *testing.T) {
	old := minFree
	minFree = 1 << 20
	t.Cleanup(func() { minFree = old })
	disk := smalldisk.Mount(t, 8<<20)
	dir := filepath.Join(disk, "app", "0_0")
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	value := bytes.Repeat([]byte("v"), 4<<10)
	committed := 0 // epochs
	var failure error
	for epoch := int64(1); epoch <= 1000 && failure == nil; epoch++ {
		s := d.Store("s")
		for i := range 64 {
			if err := s.Put(fmt.Appendf(nil, "k%04d-%02d", epoch, i), value); err != nil {
				failure = err
				break
			}
		}
		d.Seal(epoch)
		if failure == nil {
			failure = d.Commit(epoch, Checkpoint{Application: "app", Lanes: 1, Offsets: map[string]map[int32]int64{"c": {0: epoch}}})
		}
		if failure == nil {
			committed++
		}
	}
	if failure == nil {
		t.Fatal("an 8 MiB disk took 1000 epochs of 256 KiB")
	}
	t.Logf("%d epochs committed, then: %v", committed, failure)
	if !errors.Is(failure, ErrDiskFull) || !strings.Contains(failure.Error(), dir) {
		t.Fatalf("the error does not name the state directory %s: %v", dir, failure)
	}
	d.Close()

	// Opening a database on the full disk fails naming its directory.
	filler, err := os.Create(filepath.Join(disk, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := filler.Write(value); err != nil {
			break
		}
	}
	filler.Close()
	other := filepath.Join(disk, "app", "0_1")
	if o, err := Open(other); err == nil {
		o.Close()
		t.Fatalf("opened %s on a full disk", other)
	} else if !errors.Is(err, ErrDiskFull) || !strings.Contains(err.Error(), other) {
		t.Fatalf("the error does not name the state directory %s: %v", other, err)
	} else {
		t.Logf("open on a full disk: %v", err)
	}

	// With room again, nothing committed is lost.
	smalldisk.Grow(t, disk, 64<<20)
	d, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	cp, ok, err := d.Checkpoint()
	if err != nil || !ok || cp.Offsets["c"][0] < int64(committed) {
		t.Fatalf("checkpoint after the full disk = %+v, %v, %v; want offset at least %d", cp, ok, err, committed)
	}
	s := d.Store("s")
	for epoch := 1; epoch <= committed; epoch++ {
		for i := range 64 {
			k := fmt.Appendf(nil, "k%04d-%02d", epoch, i)
			if v, err := s.Get(k); err != nil || !bytes.Equal(v, value) {
				t.Fatalf("committed key %s lost after the full disk: %d bytes, %v", k, len(v), err)
			}
		}
	}
}
