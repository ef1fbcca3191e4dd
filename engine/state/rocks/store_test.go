//go:build cgo

package rocks

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stoatflow/stoatctl/engine/state"
)

func openTest(t testing.TB) *DB {
	t.Helper()
	d, err := Open(filepath.Join(t.TempDir(), "lane0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func beKey(i int) []byte { return binary.BigEndian.AppendUint32(nil, uint32(i)) }

func collect(t testing.TB, it state.BytesIterator) []string {
	t.Helper()
	defer it.Close()
	var out []string
	for it.Next() {
		out = append(out, fmt.Sprintf("%s=%s", it.Key(), it.Value()))
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestStoreScans runs the scans of the byte-store contract over a store
// whose entries are spread over the database, a committing layer and a
// processing layer, with keys of a neighbouring store around them.
func TestStoreScans(t *testing.T) {
	d := openTest(t)
	s := d.Store("s")
	other := d.Store("s2")
	put := func(st state.KeyValueBytesStore, k, v string) {
		if err := st.Put([]byte(k), []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	// Committed: a b c d.
	for _, k := range []string{"a", "b", "c", "d"} {
		put(s, k, "0")
	}
	put(other, "a", "x")
	d.Seal(1)
	if err := d.Commit(1, Checkpoint{Lanes: 1}); err != nil {
		t.Fatal(err)
	}
	// Committing: b updated, c deleted, e added.
	put(s, "b", "2")
	if _, err := s.Delete([]byte("c")); err != nil {
		t.Fatal(err)
	}
	put(s, "e", "2")
	d.Seal(2)
	// Processing: c back, d deleted, f added.
	put(s, "c", "3")
	put(s, "d", "")
	put(s, "d", "3")
	if err := s.Put([]byte("d"), nil); err != nil {
		t.Fatal(err)
	}
	put(s, "f", "3")
	if got := d.layerCount(); got != 2 {
		t.Fatalf("%d layers, want 2", got)
	}
	all := []string{"a=0", "b=2", "c=3", "e=2", "f=3"}
	rev := func(in []string) []string {
		out := make([]string, len(in))
		for i, v := range in {
			out[len(in)-1-i] = v
		}
		return out
	}
	cases := []struct {
		name string
		scan func() (state.BytesIterator, error)
		want []string
	}{
		{"all", s.All, all},
		{"reverse all", s.ReverseAll, rev(all)},
		{"range", func() (state.BytesIterator, error) { return s.Range([]byte("b"), []byte("e")) }, all[1:4]},
		{"range open from", func() (state.BytesIterator, error) { return s.Range(nil, []byte("c")) }, all[:3]},
		{"range open to", func() (state.BytesIterator, error) { return s.Range([]byte("c"), nil) }, all[2:]},
		{"range between keys", func() (state.BytesIterator, error) { return s.Range([]byte("bb"), []byte("dd")) }, all[2:3]},
		{"inverted range", func() (state.BytesIterator, error) { return s.Range([]byte("e"), []byte("b")) }, nil},
		{"reverse range", func() (state.BytesIterator, error) { return s.ReverseRange([]byte("b"), []byte("e")) }, rev(all[1:4])},
		{"reverse range open", func() (state.BytesIterator, error) { return s.ReverseRange(nil, nil) }, rev(all)},
		{"reverse range between keys", func() (state.BytesIterator, error) { return s.ReverseRange([]byte("bb"), []byte("dd")) }, all[2:3]},
		{"prefix", func() (state.BytesIterator, error) { return s.PrefixScan([]byte("e")) }, all[3:4]},
		{"empty prefix", func() (state.BytesIterator, error) { return s.PrefixScan(nil) }, all},
		{"other store", other.All, []string{"a=x"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := collect(t, must(c.scan()))
			if strings.Join(got, " ") != strings.Join(c.want, " ") {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
	gets := map[string]string{"a": "0", "b": "2", "c": "3", "d": "<nil>", "e": "2", "f": "3", "g": "<nil>"}
	for k, want := range gets {
		v := must(s.Get([]byte(k)))
		got := "<nil>"
		if v != nil {
			got = string(v)
		}
		if got != want {
			t.Errorf("get %s = %s, want %s", k, got, want)
		}
	}
}

// TestEpochs pins what commit and abort do to the layers and the database.
func TestEpochs(t *testing.T) {
	type step struct {
		op   string // put, del, seal, commit, abort, reopen
		k, v string
		n    int64
	}
	cases := []struct {
		name  string
		steps []step
		want  string // All after the steps
		cp    bool   // a checkpoint is there
	}{
		{"uncommitted writes are read", []step{{op: "put", k: "a", v: "1"}}, "a=1", false},
		{"abort drops the processing epoch", []step{{op: "put", k: "a", v: "1"}, {op: "abort"}}, "", false},
		{"abort drops the committing epoch too", []step{
			{op: "put", k: "a", v: "1"}, {op: "seal", n: 1}, {op: "commit", n: 1},
			{op: "put", k: "a", v: "2"}, {op: "seal", n: 2}, {op: "put", k: "b", v: "3"}, {op: "abort"},
		}, "a=1", true},
		{"commit keeps the processing epoch above", []step{
			{op: "put", k: "a", v: "1"}, {op: "seal", n: 1}, {op: "put", k: "a", v: "2"}, {op: "del", k: "b"}, {op: "commit", n: 1},
		}, "a=2", true},
		{"reopen sees only what committed", []step{
			{op: "put", k: "a", v: "1"}, {op: "put", k: "b", v: "1"}, {op: "seal", n: 1}, {op: "commit", n: 1},
			{op: "del", k: "a"}, {op: "put", k: "c", v: "2"}, {op: "seal", n: 2}, {op: "reopen"},
		}, "a=1 b=1", true},
		{"a delete commits", []step{
			{op: "put", k: "a", v: "1"}, {op: "seal", n: 1}, {op: "commit", n: 1},
			{op: "del", k: "a"}, {op: "seal", n: 2}, {op: "commit", n: 2}, {op: "reopen"},
		}, "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "lane0")
			d := must(Open(dir))
			defer func() { d.Close() }()
			for _, st := range c.steps {
				s := d.Store("s")
				switch st.op {
				case "put":
					must(0, s.Put([]byte(st.k), []byte(st.v)))
				case "del":
					must(s.Delete([]byte(st.k)))
				case "seal":
					d.Seal(st.n)
				case "commit":
					must(0, d.Commit(st.n, Checkpoint{Lanes: 1, Offsets: map[string]map[int32]int64{"c": {0: st.n}}}))
				case "abort":
					d.Abort()
				case "reopen":
					must(0, d.Close())
					d = must(Open(dir))
				}
			}
			got := strings.Join(collect(t, must(d.Store("s").All())), " ")
			if got != c.want {
				t.Fatalf("store holds %q, want %q", got, c.want)
			}
			_, ok, err := d.Checkpoint()
			if err != nil || ok != c.cp {
				t.Fatalf("checkpoint present %v (%v), want %v", ok, err, c.cp)
			}
		})
	}
}

// TestWriteDuringIteration: an iterator sees the store as it was when it
// was opened, while the caller deletes what it scans and inserts keys.
func TestWriteDuringIteration(t *testing.T) {
	for _, reverse := range []bool{false, true} {
		t.Run(fmt.Sprintf("reverse=%v", reverse), func(t *testing.T) {
			d := openTest(t)
			s := d.Store("s")
			const n = 300
			for i := range n {
				must(0, s.Put(beKey(2*i), []byte{1}))
				if i == n/2 {
					d.Seal(1)
					must(0, d.Commit(1, Checkpoint{Lanes: 1}))
				}
			}
			it := must(s.All())
			if reverse {
				it.Close()
				it = must(s.ReverseAll())
			}
			seen := 0
			for it.Next() {
				k := it.Key()
				if binary.BigEndian.Uint32(k)%2 != 0 {
					t.Fatalf("key %x inserted during the scan showed up", k)
				}
				must(s.Delete(k))
				must(0, s.Put(beKey(int(binary.BigEndian.Uint32(k))+1), []byte{2}))
				if !bytes.Equal(it.Value(), []byte{1}) {
					t.Fatalf("value of %x = %x", k, it.Value())
				}
				seen++
			}
			must(0, it.Err())
			it.Close()
			if seen != n {
				t.Fatalf("iterated %d keys, want %d", seen, n)
			}
			after := collect(t, must(s.All()))
			if len(after) != n {
				t.Fatalf("%d keys after, want %d", len(after), n)
			}
		})
	}
}

// TestLayersStayBounded: writes while scans are open go to the epoch's one
// layer, which the scans read snapshots of.
func TestLayersStayBounded(t *testing.T) {
	d := openTest(t)
	s := d.Store("s")
	for i := range 100 {
		it := must(s.All())
		it.Next()
		must(0, s.Put(beKey(i), []byte{byte(i)}))
		it.Close()
	}
	if n := d.layerCount(); n != 1 {
		t.Fatalf("%d layers after 100 scans in one epoch, want 1", n)
	}
	if got := len(collect(t, must(s.All()))); got != 100 {
		t.Fatalf("%d keys, want 100", got)
	}
}

// TestStoreErrors: nil keys, closed stores, closed databases, a second
// open of a locked directory and a corrupt checkpoint, each named.
func TestStoreErrors(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "app", "0")
	d := must(Open(dir))
	defer d.Close()
	s := d.Store("s")
	if err := s.Put(nil, []byte{1}); !errors.Is(err, state.ErrNilKey) {
		t.Errorf("put nil key: %v", err)
	}
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "LOCK")) {
		t.Errorf("second open: %v, want an error naming %s", err, filepath.Join(dir, "LOCK"))
	}
	it := must(s.All())
	must(0, s.Close())
	if _, err := s.Get([]byte("a")); !errors.Is(err, state.ErrClosed) {
		t.Errorf("get on a closed store: %v", err)
	}
	if it.Next() || !errors.Is(it.Err(), state.ErrClosed) {
		t.Errorf("iterator of a closed store: %v", it.Err())
	}
	it.Close()

	// A checkpoint that does not decode is an error naming the directory.
	d2dir := filepath.Join(t.TempDir(), "1")
	d2 := must(Open(d2dir))
	d2.mu.Lock()
	must(0, d2.db.Put(d2.wo, checkpointKey, []byte("{not json")))
	d2.mu.Unlock()
	if _, _, err := d2.Checkpoint(); !errors.Is(err, ErrCorruptCheckpoint) || !strings.Contains(err.Error(), d2dir) {
		t.Errorf("corrupt checkpoint: %v", err)
	}
	must(0, d2.Close())
	if _, err := d2.Store("s").Get([]byte("a")); err == nil || !strings.Contains(err.Error(), d2dir) {
		t.Errorf("get on a closed database: %v", err)
	}
}

// TestWipe empties every store and the checkpoint.
func TestWipe(t *testing.T) {
	d := openTest(t)
	for _, name := range []string{"a", "b"} {
		must(0, d.Store(name).Put([]byte("k"), []byte("v")))
	}
	d.Seal(1)
	must(0, d.Commit(1, Checkpoint{Lanes: 2}))
	must(0, d.Wipe())
	for _, name := range []string{"a", "b"} {
		if got := collect(t, must(d.Store(name).All())); len(got) != 0 {
			t.Fatalf("store %s after wipe: %v", name, got)
		}
	}
	if _, ok, _ := d.Checkpoint(); ok {
		t.Fatal("checkpoint survived the wipe")
	}
}

// modelOp is one write of the model: a put (v set), a delete (v nil), or
// a range delete of from <= key < to. Keys are the store's name, a zero
// byte and the key, so that a range stays within its store.
type modelOp struct {
	k, to string
	v     *string
	rng   bool
}

func applyOps(m map[string]string, ops []modelOp) {
	for _, o := range ops {
		switch {
		case o.rng:
			for k := range m {
				if k >= o.k && k < o.to {
					delete(m, k)
				}
			}
		case o.v == nil:
			delete(m, o.k)
		default:
			m[o.k] = *o.v
		}
	}
}

// openScan is a scan the model left open across later operations, and
// the entries it has still to read: those of the store when it opened.
type openScan struct {
	it   state.BytesIterator
	rest []string
}

// TestModel runs random operations on two stores of one database (puts,
// deletes, range deletes, gets, scans, scans left open across later
// writes, seals, commits of one or two epochs, aborts and reopens)
// against a map model of what is committed and what is not; a scan left
// open must read, when it goes on, what the store held when it opened.
// Run with -seed to replay.
// TestScanMemo: scans of one upper bound from rising lower bounds read
// what the database holds, under the layers, through commits that change
// the range, aborts and range deletes; a memo (rangeMemo) serves the
// third scan of a generation on.
func TestScanMemo(t *testing.T) {
	d := must(Open(filepath.Join(t.TempDir(), "lane")))
	defer d.Close()
	s := d.Store("s")
	put := func(k, v string) { must(0, s.Put([]byte(k), []byte(v))) }
	commit := func() {
		t.Helper()
		e := d.Epoch()
		d.Seal(e)
		must(0, d.Commit(e, Checkpoint{Lanes: 1}))
	}
	scan := func(from string, want ...string) {
		t.Helper()
		for range 3 {
			if got := collect(t, must(s.Range([]byte(from), []byte("k9")))); !slices.Equal(got, want) {
				t.Fatalf("scan from %s read %v, want %v", from, got, want)
			}
		}
	}
	put("k1", "a")
	put("k3", "b")
	put("k5", "c")
	commit()
	scan("k0", "k1=a", "k3=b", "k5=c")
	if d.memos.get(d.gen, []byte("s\x00k2"), append([]byte("s\x00k9"), 0)) == nil {
		t.Fatal("no memo after three scans of one range")
	}
	scan("k2", "k3=b", "k5=c")
	// A write to the layer is read over the memo.
	put("k4", "d")
	must(s.Delete([]byte("k5")))
	scan("k2", "k3=b", "k4=d")
	// Committed, it changes the database: the memo goes.
	commit()
	scan("k2", "k3=b", "k4=d")
	put("k6", "e")
	d.Abort()
	scan("k3", "k3=b", "k4=d")
	must(0, s.(state.RangeDeleter).DeleteRange([]byte("k3"), []byte("k4")))
	scan("k0", "k1=a", "k4=d")
	commit()
	scan("k0", "k1=a", "k4=d")
	scan("k4", "k4=d")
}

func TestModel(t *testing.T) {
	seed := uint64(*seedFlag)
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d (replay with -seed=%d)", seed, seed)
	r := rand.New(rand.NewPCG(seed, 0))
	dir := filepath.Join(t.TempDir(), "lane")
	d := must(Open(dir))
	defer func() { d.Close() }()
	committed := map[string]string{}
	var sealed, open []modelOp // the committing and processing epochs' writes
	hasSealed := false
	epoch := int64(1)
	// view is what store st holds, by its own keys.
	view := func(st string) map[string]string {
		m := map[string]string{}
		for k, v := range committed {
			m[k] = v
		}
		applyOps(m, sealed)
		applyOps(m, open)
		out := map[string]string{}
		for k, v := range m {
			if rest, ok := strings.CutPrefix(k, st+"\x00"); ok {
				out[rest] = v
			}
		}
		return out
	}
	entries := func(m map[string]string, from, to string, reverse bool) []string {
		var want []string
		for k, v := range m {
			if (from == "" || k >= from) && (to == "" || k <= to) {
				want = append(want, k+"="+v)
			}
		}
		slices.Sort(want)
		if reverse {
			slices.Reverse(want)
		}
		return want
	}
	// check reads a scan whole against the model, in order.
	check := func(op int, it state.BytesIterator, m map[string]string, from, to string, reverse bool) {
		want := entries(m, from, to, reverse)
		if got := collect(t, it); !slices.Equal(got, want) {
			t.Fatalf("op %d: scan [%s, %s] reverse=%v read\n  %v\nwant\n  %v", op, from, to, reverse, got, want)
		}
	}
	var scans []openScan
	for op := range 4000 {
		st := []string{"s", "t"}[r.IntN(2)]
		s := d.Store(st)
		k := fmt.Sprintf("k%02d", r.IntN(40))
		mk := st + "\x00" + k
		switch x := r.IntN(100); {
		case x < 28:
			v := fmt.Sprintf("v%d", op)
			must(0, s.Put([]byte(k), []byte(v)))
			open = append(open, modelOp{k: mk, v: &v})
		case x < 40:
			// A read-modify-write, as a count makes: the put of the key
			// just read may change the layer's write in place, never
			// what an open scan reads, nor a write the layer dropped. The value's length varies, so
			// that it fits the old bytes or not.
			want, ok := view(st)[k]
			got := must(s.Get([]byte(k)))
			if (got != nil) != ok || string(got) != want {
				t.Fatalf("op %d: get %s/%s = %q, want %q (%v)", op, st, k, got, want, ok)
			}
			if r.IntN(3) == 0 {
				// Removed and put again, as a session store merges: a
				// key only this epoch wrote leaves the layer.
				must(s.Delete([]byte(k)))
			}
			v := fmt.Sprintf("%s%d", strings.Repeat("w", r.IntN(3)), op%100)
			for range 1 + r.IntN(2) {
				must(0, s.Put([]byte(k), []byte(v)))
				v += "+"
			}
			v = v[:len(v)-1]
			open = append(open, modelOp{k: mk, v: &v})
		case x < 52:
			must(s.Delete([]byte(k)))
			open = append(open, modelOp{k: mk})
		case x < 56:
			// A range delete, as expiry drops a segment.
			to := fmt.Sprintf("k%02d", r.IntN(45))
			must(0, s.(state.RangeDeleter).DeleteRange([]byte(k), []byte(to)))
			open = append(open, modelOp{k: mk, to: st + "\x00" + to, rng: true})
		case x < 68:
			want, ok := view(st)[k]
			got := must(s.Get([]byte(k)))
			if (got != nil) != ok || string(got) != want {
				t.Fatalf("op %d: get %s/%s = %q, want %q (%v)", op, st, k, got, want, ok)
			}
		case x < 72:
			to := fmt.Sprintf("k%02d", r.IntN(45))
			if r.IntN(2) == 0 {
				check(op, must(s.Range([]byte(k), []byte(to))), view(st), k, to, false)
			} else {
				check(op, must(s.ReverseRange([]byte(k), []byte(to))), view(st), k, to, true)
			}
		case x < 74:
			if r.IntN(2) == 0 {
				check(op, must(s.ReverseAll()), view(st), "", "", true)
				break
			}
			// Scans of one upper bound from rising lower bounds, as a
			// session store looks a key up record after record: the
			// later ones may read a memo of the first (rangeMemo).
			to := fmt.Sprintf("k%02d", 30+r.IntN(15))
			for from := r.IntN(20); from < 40; from += 1 + r.IntN(8) {
				k := fmt.Sprintf("k%02d", from)
				check(op, must(s.Range([]byte(k), []byte(to))), view(st), k, to, false)
				if r.IntN(3) == 0 {
					// A write between, to a layer: the memo is of the
					// database, under the layers.
					v := fmt.Sprintf("m%d", op)
					must(0, s.Put([]byte(k), []byte(v)))
					open = append(open, modelOp{k: st + "\x00" + k, v: &v})
				}
			}
		case x < 82:
			// A scan, sometimes left open across later operations.
			reverse := r.IntN(2) == 0
			it := must(s.All())
			if reverse {
				it.Close()
				it = must(s.ReverseAll())
			}
			want := entries(view(st), "", "", reverse)
			n := 0
			for it.Next() {
				if got := fmt.Sprintf("%s=%s", it.Key(), it.Value()); n >= len(want) || got != want[n] {
					t.Fatalf("op %d: scan of %s read %s at %d, want %v", op, st, got, n, want)
				}
				n++
				if r.IntN(4) == 0 {
					break
				}
			}
			if n < len(want) {
				scans = append(scans, openScan{it: it, rest: want[n:]})
			} else {
				must(0, it.Err())
				it.Close()
			}
		case x < 88:
			// A second seal before the commit makes the commit write
			// two epochs' layers at once, merged.
			d.Seal(epoch)
			sealed, open, hasSealed = append(sealed, open...), nil, true
			epoch++
		case x < 94 && hasSealed:
			must(0, d.Commit(epoch-1, Checkpoint{Lanes: 1}))
			applyOps(committed, sealed)
			sealed, hasSealed = nil, false
		case x < 96:
			d.Abort()
			sealed, open, hasSealed = nil, nil, false
		case x < 98:
			// The open scans go on, or close unread.
			for _, sc := range scans {
				if r.IntN(2) == 0 {
					sc.it.Close()
					continue
				}
				if got := collect(t, sc.it); !slices.Equal(got, sc.rest) {
					t.Fatalf("op %d: a scan left open read on\n  %v\nwant what it had when opened\n  %v", op, got, sc.rest)
				}
			}
			scans = nil
		default:
			must(0, d.Close())
			for _, sc := range scans {
				if sc.it.Next() {
					t.Fatalf("op %d: an iterator read on after its database closed", op)
				}
				sc.it.Close()
			}
			scans = nil
			d = must(Open(dir))
			sealed, open, hasSealed = nil, nil, false
			epoch = d.Epoch()
		}
	}
	for _, sc := range scans {
		if got := collect(t, sc.it); !slices.Equal(got, sc.rest) {
			t.Fatalf("end: a scan left open read on\n  %v\nwant\n  %v", got, sc.rest)
		}
	}
	for _, st := range []string{"s", "t"} {
		check(-1, must(d.Store(st).All()), view(st), "", "", false)
	}
}

// TestLeakedIteratorReleasesTheDatabase: an iterator nobody closed does
// not keep the database, and its lock, from the next owner; it fails on
// its next Next.
func TestLeakedIteratorReleasesTheDatabase(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lane0")
	d := must(Open(dir))
	must(0, d.Store("s").Put([]byte("a"), []byte("1")))
	d.Seal(1)
	must(0, d.Commit(1, Checkpoint{Lanes: 1}))
	it := must(d.Store("s").All())
	must(0, d.Close())
	again, err := Open(dir)
	if err != nil {
		t.Fatalf("reopen with an iterator left open: %v", err)
	}
	defer again.Close()
	if it.Next() || !errors.Is(it.Err(), state.ErrClosed) && it.Err() == nil {
		t.Fatalf("the leaked iterator read on: %v", it.Err())
	}
	it.Close()
	if got := collect(t, must(again.Store("s").All())); len(got) != 1 {
		t.Fatalf("after reopening: %v", got)
	}
}

// TestRestoreMode: writes between BeginRestore and EndRestore go straight
// to the database in bulk (past the bulk bound too), reads in between see
// them, and EndRestore commits the checkpoint with them.
func TestRestoreMode(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lane0")
	d := must(Open(dir))
	s := d.Store("s")
	d.BeginRestore()
	big := bytes.Repeat([]byte("v"), 1<<10)
	var entries []state.KeyValue[[]byte, []byte]
	for i := range 10_000 { // 10 MB: more than one bulk write
		entries = append(entries, state.KeyValue[[]byte, []byte]{Key: beKey(i), Value: big})
	}
	must(0, s.PutAll(entries))
	must(0, s.Put(beKey(1), nil))
	if v := must(s.Get(beKey(1))); v != nil {
		t.Fatalf("a key deleted during the restore reads %q", v)
	}
	must(0, s.Put(beKey(2), []byte("last")))
	if d.layerCount() != 0 {
		t.Fatalf("a restore pushed %d layers", d.layerCount())
	}
	must(0, d.EndRestore(Checkpoint{Lanes: 3}))
	must(0, d.Close())
	d = must(Open(dir))
	defer d.Close()
	cp, ok, err := d.Checkpoint()
	if err != nil || !ok || cp.Lanes != 3 {
		t.Fatalf("checkpoint after the restore: %+v %v %v", cp, ok, err)
	}
	if n := len(collect(t, must(d.Store("s").All()))); n != 9_999 {
		t.Fatalf("%d keys after the restore, want 9999", n)
	}
	if v := must(d.Store("s").Get(beKey(2))); string(v) != "last" {
		t.Fatalf("key 2 = %q, want the last write", v)
	}
}

// TestRestoreModeVersions: a restore writes many versions of few keys,
// values growing, shrinking, empty and deleted, across several bulk
// batches (a small batch-bytes) and across an arena block, with a value
// larger than a quarter block among them; the database ends with each
// key's last write, as a map of them does. Randomised: it prints its seed.
func TestRestoreModeVersions(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	d := openTest(t)
	d.SetRestoreBatchBytes(64 << 10)
	s := d.Store("s")
	d.BeginRestore()
	want := map[string][]byte{}
	big := bytes.Repeat([]byte("b"), arenaBlock/3)
	for i := range 20_000 {
		k := beKey(rng.IntN(300))
		var v []byte
		switch r := rng.IntN(10); {
		case r == 0:
			v = nil
		case r == 1:
			v = []byte{}
		case r == 2 && i%1000 == 0:
			v = big
		default:
			v = bytes.Repeat([]byte{byte(i)}, 1+rng.IntN(40))
		}
		// The caller's buffer is its own again after the call.
		in := bytes.Clone(v)
		if v == nil {
			in = nil
		}
		must(0, s.PutAll([]state.KeyValue[[]byte, []byte]{{Key: k, Value: in}}))
		for j := range in {
			in[j] = 'x'
		}
		if v == nil {
			delete(want, string(k))
		} else {
			want[string(k)] = v
		}
	}
	must(0, d.EndRestore(Checkpoint{Lanes: 1}))
	for i := range 300 {
		k := beKey(i)
		got := must(s.Get(k))
		w, ok := want[string(k)]
		if !ok && got != nil || ok && !bytes.Equal(got, w) || ok && got == nil {
			t.Fatalf("key %d = %q (nil %v), want %q (present %v)", i, got, got == nil, w, ok)
		}
	}
}

// TestAdoptTask copies one task's stores from a standby's database into a
// lane's: every store of the task comes over, with nothing of the task
// beside it (t1 and t10 share a first character), and the standby's copy
// and its checkpoint stay as they were.
func TestAdoptTask(t *testing.T) {
	from, to := openTest(t), openTest(t)
	for _, p := range []int32{1, 10, 2} {
		for _, name := range []string{"counts", "windows"} {
			s := from.TaskSupplier(p).Get(name)
			for i := range 3 {
				must(0, s.Put(fmt.Appendf(nil, "k%d", i), fmt.Appendf(nil, "%s-%d-%d", name, p, i)))
			}
		}
	}
	from.Seal(1)
	must(0, from.Commit(1, Checkpoint{Lanes: 1, Owned: []string{"0_1", "0_10", "0_2"}}))
	must(0, to.TaskSupplier(2).Get("counts").Put([]byte("k0"), []byte("mine")))
	to.Seal(1)
	must(0, to.Commit(1, Checkpoint{Lanes: 1, Owned: []string{"0_2"}}))

	n, err := to.AdoptTask(from, 1)
	if err != nil {
		t.Fatal(err)
	}
	if n != 6 {
		t.Errorf("adopted %d entries, want 6", n)
	}
	for _, name := range []string{"counts", "windows"} {
		want := []string{fmt.Sprintf("k0=%s-1-0", name), fmt.Sprintf("k1=%s-1-1", name), fmt.Sprintf("k2=%s-1-2", name)}
		if got := collect(t, must(to.TaskSupplier(1).Get(name).All())); !slices.Equal(got, want) {
			t.Errorf("adopted %s: %v, want %v", name, got, want)
		}
		if got := collect(t, must(to.TaskSupplier(10).Get(name).All())); len(got) != 0 {
			t.Errorf("task 10's %s came along: %v", name, got)
		}
		if got := collect(t, must(from.TaskSupplier(1).Get(name).All())); len(got) != 3 {
			t.Errorf("the standby's %s after the adoption: %v", name, got)
		}
	}
	if got := collect(t, must(to.TaskSupplier(2).Get("counts").All())); !slices.Equal(got, []string{"k0=mine"}) {
		t.Errorf("the lane's own task 2: %v", got)
	}
	if cp, ok, err := to.Checkpoint(); err != nil || !ok || !slices.Equal(cp.Owned, []string{"0_2"}) {
		t.Errorf("the lane's checkpoint after the adoption: %+v %v %v", cp, ok, err)
	}
	if _, err := to.AdoptTask(to, 1); err == nil {
		t.Error("a database adopted from itself")
	}
}

// TestWipeTaskForgetsTheTask: a wiped task leaves the checkpoint in the
// same write as its data. A checkpoint still naming it, with its offsets,
// would let a later start keep the task and restore only what follows
// them, over nothing: the generation that wiped it writes its own
// checkpoint only when its restore ends, and one cut short never does.
func TestWipeTaskForgetsTheTask(t *testing.T) {
	d := openTest(t)
	for _, p := range []int32{1, 2, 11} {
		must(0, d.TaskSupplier(p).Get("counts").Put([]byte("k"), []byte("v")))
	}
	d.Seal(1)
	must(0, d.Commit(1, Checkpoint{Application: "app", Lanes: 2, Owned: []string{"0_1", "0_2", "0_11"},
		Offsets: map[string]map[int32]int64{"c1": {1: 5, 2: 7, 11: 9}, "c2": {1: 3}}}))
	must(0, d.WipeTask(1))
	cp, ok, err := d.Checkpoint()
	if err != nil || !ok {
		t.Fatalf("checkpoint after the wipe: %v %v", ok, err)
	}
	if !slices.Equal(cp.Owned, []string{"0_2", "0_11"}) {
		t.Errorf("owned after wiping task 1: %v", cp.Owned)
	}
	if want := map[string]map[int32]int64{"c1": {2: 7, 11: 9}}; fmt.Sprint(cp.Offsets) != fmt.Sprint(want) {
		t.Errorf("offsets after wiping task 1: %v, want %v", cp.Offsets, want)
	}
	if cp.Application != "app" || cp.Lanes != 2 {
		t.Errorf("the rest of the checkpoint changed: %+v", cp)
	}
	if got := collect(t, must(d.TaskSupplier(1).Get("counts").All())); len(got) != 0 {
		t.Errorf("task 1 after its wipe: %v", got)
	}
	if got := collect(t, must(d.TaskSupplier(11).Get("counts").All())); len(got) != 1 {
		t.Errorf("task 11 after task 1's wipe: %v", got)
	}
	// A database without a checkpoint wipes as before.
	e := openTest(t)
	must(0, e.WipeTask(3))
	if _, ok, _ := e.Checkpoint(); ok {
		t.Error("a wipe wrote a checkpoint where there was none")
	}
}

// TestRangeSinceEpoch: a scan since an epoch reads the layers of that
// epoch and those after it, the ones the last commit wrote included,
// without the database; a scan since an epoch an older commit wrote, or
// once anything else wrote to the database, reads the database too. "a"
// is written in the first epoch only, so whether a scan shows it tells
// whether it read RocksDB.
func TestRangeSinceEpoch(t *testing.T) {
	d := must(Open(filepath.Join(t.TempDir(), "lane0")))
	defer d.Close()
	s := d.Store("s").(state.EpochLayered)
	kv := s.(state.KeyValueBytesStore)
	commit := func() int64 {
		e := d.Epoch()
		d.Seal(e)
		must(0, d.Commit(e, Checkpoint{Lanes: 1}))
		return e
	}
	since := func(epoch int64) []string {
		return collect(t, must(s.RangeSinceEpoch(epoch, []byte("a"), []byte("z"))))
	}
	check := func(what string, got []string, want ...string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s: read %v, want %v", what, got, want)
		}
	}
	must(0, kv.Put([]byte("a"), []byte("1")))
	e1 := commit()
	must(0, kv.Put([]byte("b"), []byte("2")))
	e2 := commit()
	must(0, kv.Put([]byte("c"), []byte("3")))
	e3 := d.Epoch()
	check("since the processing epoch", since(e3), "c=3")
	check("since the epoch the last commit wrote", since(e2), "b=2", "c=3")
	check("since an epoch an older commit wrote", since(e1), "a=1", "b=2", "c=3")

	// The processing epoch's writes hide what the last commit wrote.
	must(kv.Delete([]byte("b")))
	check("after a delete of b", since(e2), "c=3")
	must(0, kv.Put([]byte("b"), []byte("4")))
	must(0, kv.(state.RangeDeleter).DeleteRange([]byte("b"), []byte("c")))
	check("after a range delete of b", since(e2), "c=3")

	// A sealed epoch above the last commit's, then a commit of both: the
	// epochs of the last commit are all readable from it.
	d.Seal(e3)
	must(0, kv.Put([]byte("d"), []byte("5")))
	e4 := commit()
	check("since the older epoch of the last commit", since(e3), "c=3", "d=5")
	check("since the newer epoch of the last commit", since(e4), "d=5")
	check("since the epoch before the last commit", since(e2), "a=1", "c=3", "d=5")

	// A restore writes to the database around the layers: every scan
	// reads the database again.
	d.BeginRestore()
	must(0, kv.Put([]byte("e"), []byte("6")))
	must(0, d.EndRestore(Checkpoint{Lanes: 1}))
	check("since the last commit's epoch after a restore", since(e4), "a=1", "c=3", "d=5", "e=6")
	must(0, kv.Put([]byte("f"), []byte("7")))
	check("since the processing epoch after a restore", since(d.Epoch()), "f=7")
}
