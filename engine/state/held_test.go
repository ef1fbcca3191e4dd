package state

import (
	"sync"
	"testing"

	"github.com/stoatflow/stoatctl/engine/serde"
)

// TestMemoryStorePutHeld: a key's held word is zero in a new record, the
// same word while its value is rewritten in place, a new zero word when
// the key moves to a bigger record, and none for a delete; the word is
// beside the key and value, not in them.
func TestMemoryStorePutHeld(t *testing.T) {
	s := newMemoryStore("held")
	w, err := s.putHeld([]byte("k"), []byte("1234"))
	if err != nil || w == nil || *w != 0 {
		t.Fatalf("new key: word %v (%v), err %v; want a zero word", w, deref(w), err)
	}
	*w = 0xffff_ffff_ffff_ffff
	if v, _ := s.Get([]byte("k")); string(v) != "1234" {
		t.Fatalf("value %q after writing the word, want 1234", v)
	}
	again, err := s.putHeld([]byte("k"), []byte("5678"))
	if err != nil || again != w || *again != 0xffff_ffff_ffff_ffff {
		t.Fatalf("rewrite in place: word %p (%v), want %p with its value kept", again, deref(again), w)
	}
	keys := heldEntries(t, s)
	if len(keys) != 1 || keys[0] != "k=5678" {
		t.Fatalf("store holds %v, want k=5678", keys)
	}
	moved, err := s.putHeld([]byte("k"), make([]byte, 1000))
	if err != nil || moved == nil || moved == w || *moved != 0 {
		t.Fatalf("after the key moved: word %p (%v), want a new zero word", moved, deref(moved))
	}
	if gone, err := s.putHeld([]byte("k"), nil); err != nil || gone != nil {
		t.Fatalf("delete: word %p, err %v; want none", gone, err)
	}
	if v, _ := s.Get([]byte("k")); v != nil {
		t.Fatalf("deleted key reads %q", v)
	}
	// Through the deferral the default supplier builds.
	d := Default().Get("held")
	if dw, err := putHeld(d, []byte("k"), []byte("1")); err != nil || dw == nil {
		t.Fatalf("default store: word %p, err %v; want the memory store's", dw, err)
	}
}

func deref(w *uint64) any {
	if w == nil {
		return nil
	}
	return *w
}

func heldEntries(t *testing.T, s KeyValueBytesStore) []string {
	t.Helper()
	it, err := s.All()
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var out []string
	for it.Next() {
		out = append(out, string(it.Key())+"="+string(it.Value()))
	}
	return out
}

// TestMemoryStoreHeldWordBesideReaders: the writer writes held words
// without the store's lock while other goroutines read and scan the same
// records under it (run with -race).
func TestMemoryStoreHeldWordBesideReaders(t *testing.T) {
	s := newMemoryStore("held")
	keys := [][]byte{[]byte("a"), []byte("b"), []byte("c")}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				for _, k := range keys {
					if _, err := s.Get(k); err != nil {
						t.Error(err)
						return
					}
				}
				heldEntries(t, s)
			}
		})
	}
	for i := range 2000 {
		w, err := s.putHeld(keys[i%3], []byte{byte(i)})
		if err != nil {
			t.Fatal(err)
		}
		*w = uint64(i)
	}
	close(stop)
	wg.Wait()
}

// heldContext records the held words the stores log with.
type heldContext struct {
	recordingContext
	words []*uint64
}

func (c *heldContext) LogChangeHeld(store string, key, value []byte, ts int64, held *uint64) error {
	c.words = append(c.words, held)
	return c.LogChange(store, key, value, ts, nil)
}

// TestStoresLogHeldWords: a key-value store's put and a window store's
// read-modify-write log with the held word of the key's record, the same
// word while the record stays; the writes that do not come from one put
// of the key's record (a new window's two entries, a delete) log without.
func TestStoresLogHeldWords(t *testing.T) {
	ctx := &heldContext{}
	kv := newTS(t, ctx)
	for i := range 3 {
		if err := kv.Put("a", ValueAndTimestamp[int64]{Value: int64(i), Timestamp: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if len(ctx.words) != 3 || ctx.words[0] == nil || ctx.words[1] != ctx.words[0] || ctx.words[2] != ctx.words[0] {
		t.Fatalf("key-value puts logged words %v, want one word three times", ctx.words)
	}
	if _, _, err := kv.Delete("a"); err != nil {
		t.Fatal(err)
	}
	if len(ctx.words) != 3 || len(ctx.take()) != 4 {
		t.Fatalf("a delete logged with a word, or not at all")
	}

	ctx.words = nil
	ws := buildInit[TimestampedWindowStore[string, int64]](t,
		TimestampedWindowStoreBuilder("twin", serde.Serde[string](stringSerde{}), serde.Serde[int64](int64Serde{}), testRetention, testSize, false, Default()), ctx)
	for i := range 3 {
		if _, _, err := ws.Fetch("a", 0); err != nil {
			t.Fatal(err)
		}
		if err := ws.Put("a", ValueAndTimestamp[int64]{Value: int64(i), Timestamp: 1}, 0); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(ctx.take()); n != 3 {
		t.Fatalf("%d window changes logged, want 3", n)
	}
	if len(ctx.words) != 2 || ctx.words[0] == nil || ctx.words[1] != ctx.words[0] {
		t.Fatalf("window writes logged words %v, want none for the new window, then one word twice", ctx.words)
	}
}
