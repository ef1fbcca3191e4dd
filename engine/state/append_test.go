package state

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stoatflow/stoatctl/engine/serde"
)

// getOnly hides a byte store's appendValue, so that getAppending falls
// back to Get.
type getOnly struct{ KeyValueBytesStore }

// getAppending reads as Get does, into the caller's buffer where the store
// can: nil for a missing key, a non-nil slice for an empty value, and
// bytes that a later write of the key does not change.
func TestGetAppending(t *testing.T) {
	mem := newTestBytesStore(t)
	for _, kv := range []KeyValue[[]byte, []byte]{{Key: []byte("a"), Value: []byte("abc")}, {Key: []byte("empty"), Value: []byte{}}} {
		if err := mem.Put(kv.Key, kv.Value); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []struct {
		name  string
		store KeyValueBytesStore
	}{{"memory", mem}, {"get only", getOnly{mem}}} {
		for _, dst := range [][]byte{nil, make([]byte, 0, 16)} {
			name := fmt.Sprintf("%s, dst cap %d", s.name, cap(dst))
			if got, err := getAppending(s.store, dst, []byte("missing")); err != nil || got != nil {
				t.Errorf("%s: missing key gave %q, %v; want nil", name, got, err)
			}
			if got, err := getAppending(s.store, dst, []byte("empty")); err != nil || got == nil || len(got) != 0 {
				t.Errorf("%s: empty value gave %#v, %v; want an empty non-nil slice", name, got, err)
			}
			got, err := getAppending(s.store, dst, []byte("a"))
			if err != nil || string(got) != "abc" {
				t.Fatalf("%s: got %q, %v; want abc", name, got, err)
			}
			if _, ok := s.store.(valueAppender); ok && cap(dst) > 0 && &got[0] != &dst[:1][0] {
				t.Errorf("%s: the value was not read into dst", name)
			}
			if err := mem.Put([]byte("a"), []byte("xyz")); err != nil {
				t.Fatal(err)
			}
			if string(got) != "abc" {
				t.Errorf("%s: a later Put changed the bytes read to %q", name, got)
			}
			if err := mem.Put([]byte("a"), []byte("abc")); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// plainSerde hides a serde's AppendSerialize.
type plainSerde[T any] struct{ serde.Serde[T] }

// A timestamped codec writes the same bytes whether its serde appends or
// not, and the changelog value is the stored bytes after the timestamp.
func TestTimestampedEncodeAppending(t *testing.T) {
	ctx := &discardContext{ts: 99}
	check := func(t *testing.T, name string, fast, slow valueCodec[ValueAndTimestamp[int64]], v ValueAndTimestamp[int64]) {
		t.Helper()
		fs, fl, fts, ferr := fast.encode("t", v, ctx)
		ss, sl, sts, serr := slow.encode("t", v, ctx)
		if ferr != nil || serr != nil {
			t.Fatalf("%s: %v, %v", name, ferr, serr)
		}
		if !bytes.Equal(fs, ss) || !bytes.Equal(fl, sl) || fts != sts {
			t.Fatalf("%s: appending gave %x %x %d, serializing %x %x %d", name, fs, fl, fts, ss, sl, sts)
		}
		if !bytes.Equal(fl, fs[timestampSize:]) {
			t.Fatalf("%s: logged %x is not stored %x after the timestamp", name, fl, fs)
		}
		back, err := fast.decode("t", fs)
		if err != nil || back != v {
			t.Fatalf("%s: decoded %v, %v; want %v", name, back, err, v)
		}
	}
	fast := timestampedCodec[int64]{serde: serde.Int64(), null: nullCheckFor[int64]()}
	slow := timestampedCodec[int64]{serde: plainSerde[int64]{serde.Int64()}, null: nullCheckFor[int64]()}
	for _, v := range []ValueAndTimestamp[int64]{{Value: 0, Timestamp: 0}, {Value: 7, Timestamp: 1_700_000_000_000}, {Value: -1, Timestamp: -5}} {
		check(t, fmt.Sprint(v), fast, slow, v)
	}
	fs, fl, _, err := timestampedCodec[string]{serde: serde.String(), null: nullCheckFor[string]()}.encode("t", ValueAndTimestamp[string]{Value: "", Timestamp: 3}, ctx)
	if err != nil || len(fs) != timestampSize || fl == nil || len(fl) != 0 {
		t.Fatalf("empty string: stored %x, logged %#v, %v; want 8 bytes and an empty non-null value", fs, fl, err)
	}
}
