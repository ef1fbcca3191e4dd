//go:build cgo

package rocks

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stoatflow/stoatctl/engine/state"
)

var seedFlag = flag.Uint64("seed", 0, "seed of TestModel (0 picks one)")

// scenarioEnv names the scenario a re-executed test binary runs.
const scenarioEnv = "STOAT_ROCKS_SCENARIO"

// lifetimeScenarios are the ways a batch can go away or change under an
// iterator still reading it (the defect classes of the RocksDB iterator
// use-after-free write-up): freed under it, rewritten under it, a key read
// twice, a value read back as garbage. Each runs in its own process, with
// glibc scribbling over freed memory, so that a use-after-free reads
// garbage or crashes, and a crash fails only its own case.
var lifetimeScenarios = []struct {
	name string
	run  func(t *testing.T, d *DB)
}{
	{"batch committed under an iterator", func(t *testing.T, d *DB) {
		s := fill(t, d, 200)
		it := must(s.All())
		half(t, it, 100)
		d.Seal(d.Epoch())
		must(0, d.Commit(d.Epoch()-1, Checkpoint{Lanes: 1}))
		rest(t, it, 100, 200, "v")
	}},
	{"batch aborted under an iterator", func(t *testing.T, d *DB) {
		s := fill(t, d, 200)
		it := must(s.All())
		half(t, it, 100)
		d.Abort()
		rest(t, it, 100, 200, "v")
		if n := len(collect(t, must(s.All()))); n != 0 {
			t.Fatalf("%d keys after the abort, want 0", n)
		}
	}},
	{"database closed under an iterator", func(t *testing.T, d *DB) {
		s := fill(t, d, 200)
		it := must(s.All())
		half(t, it, 100)
		must(0, d.Close())
		if it.Next() {
			t.Fatal("the iterator read on after its database closed")
		}
		if it.Err() == nil {
			t.Fatal("no error from an iterator of a closed database")
		}
		it.Close()
	}},
	{"batch rewritten under an iterator", func(t *testing.T, d *DB) {
		s := fill(t, d, 200)
		it := must(s.All())
		half(t, it, 100)
		// Every key rewritten with a longer value, which would move the
		// batch's buffer, and new keys between the old ones.
		for i := range 200 {
			must(0, s.Put(key(i), bytes.Repeat([]byte("w"), 100)))
			must(0, s.Put(append(key(i), '+'), []byte("new")))
		}
		rest(t, it, 100, 200, "v")
	}},
	{"second iterator over writes made under the first", func(t *testing.T, d *DB) {
		s := fill(t, d, 100)
		first := must(s.All())
		half(t, first, 50)
		for i := range 100 {
			must(0, s.Put(key(i), []byte(fmt.Sprintf("w%d", i))))
		}
		// The second iterator reads the layer with the new writes; the
		// first still reads its snapshot.
		second := must(s.All())
		for i := range 100 {
			if !second.Next() || string(second.Value()) != fmt.Sprintf("w%d", i) {
				t.Fatalf("second iterator at %d: %q=%q (%v)", i, second.Key(), second.Value(), second.Err())
			}
		}
		second.Close()
		rest(t, first, 50, 100, "v")
	}},
	{"many scans with writes under an iterator", func(t *testing.T, d *DB) {
		s := fill(t, d, 50)
		it := must(s.All())
		half(t, it, 25)
		for i := range 32 {
			other := must(s.All())
			other.Next()
			must(0, s.Put(key(i), []byte(fmt.Sprintf("m%d", i))))
			other.Close()
		}
		rest(t, it, 25, 50, "v")
	}},
	{"key deleted and put again under an iterator", func(t *testing.T, d *DB) {
		s := fill(t, d, 100)
		d.Seal(1)
		must(0, d.Commit(1, Checkpoint{Lanes: 1}))
		it := must(s.All())
		seen := map[string]int{}
		i := 0
		for it.Next() {
			k := string(it.Key())
			seen[k]++
			if seen[k] > 1 {
				t.Fatalf("key %s read twice", k)
			}
			must(s.Delete(it.Key()))
			must(0, s.Put(it.Key(), []byte("again")))
			if i%10 == 0 {
				d.Seal(d.Epoch())
				must(0, d.Commit(d.Epoch()-1, Checkpoint{Lanes: 1}))
			}
			i++
		}
		must(0, it.Err())
		it.Close()
		if len(seen) != 100 {
			t.Fatalf("read %d keys, want 100", len(seen))
		}
	}},
	{"values kept past the batch", func(t *testing.T, d *DB) {
		s := fill(t, d, 100)
		it := must(s.All())
		var keys, vals [][]byte
		for i := 0; i < 50 && it.Next(); i++ {
			keys, vals = append(keys, it.Key()), append(vals, it.Value())
		}
		got := must(s.Get(key(3)))
		d.Abort()
		for i := range 100 {
			must(0, s.Put(key(i), []byte("garbage?")))
		}
		it.Close()
		must(0, d.Close())
		for i := range keys {
			if !bytes.Equal(keys[i], key(i)) || string(vals[i]) != fmt.Sprintf("v%d", i) {
				t.Fatalf("entry %d read back as %q=%q", i, keys[i], vals[i])
			}
		}
		if string(got) != "v3" {
			t.Fatalf("a value from Get read back as %q", got)
		}
	}},
}

func key(i int) []byte { return []byte(fmt.Sprintf("k%04d", i)) }

func fill(t *testing.T, d *DB, n int) state.KeyValueBytesStore {
	t.Helper()
	s := d.Store("s")
	for i := range n {
		must(0, s.Put(key(i), []byte(fmt.Sprintf("v%d", i))))
	}
	return s
}

func half(t *testing.T, it state.BytesIterator, n int) {
	t.Helper()
	for i := range n {
		if !it.Next() {
			t.Fatalf("iterator ended at %d: %v", i, it.Err())
		}
		if !bytes.Equal(it.Key(), key(i)) || string(it.Value()) != fmt.Sprintf("v%d", i) {
			t.Fatalf("entry %d is %q=%q", i, it.Key(), it.Value())
		}
	}
}

// rest reads entries from to end of it, which must hold the values it had
// when it was opened.
func rest(t *testing.T, it state.BytesIterator, from, end int, prefix string) {
	t.Helper()
	for i := from; i < end; i++ {
		if !it.Next() {
			t.Fatalf("iterator ended at %d: %v", i, it.Err())
		}
		if !bytes.Equal(it.Key(), key(i)) || string(it.Value()) != fmt.Sprintf("%s%d", prefix, i) {
			t.Fatalf("entry %d is %q=%q, want %q=%s%d", i, it.Key(), it.Value(), key(i), prefix, i)
		}
	}
	if it.Next() {
		t.Fatalf("iterator read %q past the keys it had when opened", it.Key())
	}
	must(0, it.Err())
	it.Close()
}

// TestIteratorLifetime runs each scenario in a process of its own.
func TestIteratorLifetime(t *testing.T) {
	if name := os.Getenv(scenarioEnv); name != "" {
		for _, sc := range lifetimeScenarios {
			if sc.name == name {
				d := must(Open(filepath.Join(t.TempDir(), "lane0")))
				defer d.Close()
				sc.run(t, d)
				return
			}
		}
		t.Fatalf("no scenario %q", name)
	}
	for _, sc := range lifetimeScenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0], "-test.run=^TestIteratorLifetime$", "-test.v")
			// MALLOC_PERTURB_ makes glibc fill freed memory with a pattern,
			// so a read of a freed batch sees garbage instead of the old
			// bytes still lying there; MALLOC_CHECK_ aborts on a double free.
			cmd.Env = append(os.Environ(), scenarioEnv+"="+sc.name, "MALLOC_PERTURB_=165", "MALLOC_CHECK_=3")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("scenario process failed: %v\n%s", err, out)
			}
			if !strings.Contains(string(out), "PASS") {
				t.Fatalf("scenario process did not pass:\n%s", out)
			}
		})
	}
}
