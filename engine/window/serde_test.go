package window_test

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/window"
)

func TestWindowedSerdeNames(t *testing.T) {
	if got := window.TimeWindowedSerde(serde.String(), 10).Name(); got != "windowed(string)" {
		t.Fatalf("time windowed name = %q", got)
	}
	if got := window.SessionWindowedSerde(serde.Int64()).Name(); got != "session-windowed(int64)" {
		t.Fatalf("session windowed name = %q", got)
	}
}

// Golden bytes are laid out by hand from Kafka Streams' WindowKeySchema.toBinary
// (key, then 8-byte big-endian start) and SessionKeySchema.toBinary (key,
// then 8-byte end, then 8-byte start).
func TestTimeWindowedSerde(t *testing.T) {
	s := window.TimeWindowedSerde(serde.String(), 10)
	tests := []struct {
		name  string
		in    window.Windowed[string]
		bytes []byte
		back  window.Window // what Deserialize gives: End = Start + 10
	}{
		{"start 0", window.Windowed[string]{Key: "ab", Window: window.Window{Start: 0, End: 10}},
			[]byte{'a', 'b', 0, 0, 0, 0, 0, 0, 0, 0}, window.Window{Start: 0, End: 10}},
		{"big-endian start", window.Windowed[string]{Key: "k", Window: window.Window{Start: 0x0102030405060708, End: 0}},
			[]byte{'k', 1, 2, 3, 4, 5, 6, 7, 8}, window.Window{Start: 0x0102030405060708, End: 0x0102030405060712}},
		{"end is not written", window.Windowed[string]{Key: "k", Window: window.Window{Start: 1000, End: 99}},
			[]byte{'k', 0, 0, 0, 0, 0, 0, 0x03, 0xe8}, window.Window{Start: 1000, End: 1010}},
		{"empty key", window.Windowed[string]{Window: window.Window{Start: 5}},
			[]byte{0, 0, 0, 0, 0, 0, 0, 5}, window.Window{Start: 5, End: 15}},
		{"negative start is two's complement", window.Windowed[string]{Key: "k", Window: window.Window{Start: -1}},
			[]byte{'k', 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, window.Window{Start: -1, End: 9}},
		{"end clamps at max int64", window.Windowed[string]{Key: "k", Window: window.Window{Start: math.MaxInt64 - 1}},
			[]byte{'k', 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe}, window.Window{Start: math.MaxInt64 - 1, End: math.MaxInt64}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Serialize("t", tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tt.bytes) {
				t.Fatalf("Serialize = % x, want % x", got, tt.bytes)
			}
			back, err := s.Deserialize("t", got)
			if err != nil {
				t.Fatal(err)
			}
			if back.Key != tt.in.Key || back.Window != tt.back {
				t.Fatalf("Deserialize = %+v, want key %q window %+v", back, tt.in.Key, tt.back)
			}
		})
	}
}

func TestSessionWindowedSerde(t *testing.T) {
	s := window.SessionWindowedSerde(serde.String())
	tests := []struct {
		name  string
		in    window.Windowed[string]
		bytes []byte
	}{
		{"end then start", window.Windowed[string]{Key: "k", Window: window.Window{Start: 5, End: 10}},
			[]byte{'k', 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0, 0, 0, 5}},
		{"single-point session", window.Windowed[string]{Key: "ab", Window: window.Window{Start: 0x0102, End: 0x0102}},
			[]byte{'a', 'b', 0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 0, 0, 1, 2}},
		{"empty key", window.Windowed[string]{Window: window.Window{Start: 0, End: 1}},
			[]byte{0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Serialize("t", tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tt.bytes) {
				t.Fatalf("Serialize = % x, want % x", got, tt.bytes)
			}
			back, err := s.Deserialize("t", got)
			if err != nil {
				t.Fatal(err)
			}
			if back != tt.in {
				t.Fatalf("Deserialize = %+v, want %+v", back, tt.in)
			}
		})
	}
}

func TestWindowedSerdeErrors(t *testing.T) {
	tw := window.TimeWindowedSerde(serde.Int64(), 10)
	sw := window.SessionWindowedSerde(serde.Int64())
	tests := []struct {
		name    string
		decode  func() error
		serde   string
		wantErr error // wrapped, or nil to only require a *DecodeError
	}{
		{"time windowed shorter than start", func() error { _, err := tw.Deserialize("orders", make([]byte, 7)); return err },
			"windowed(int64)", window.ErrKeyTooShort},
		{"time windowed empty", func() error { _, err := tw.Deserialize("orders", nil); return err },
			"windowed(int64)", window.ErrKeyTooShort},
		{"time windowed bad inner key", func() error { _, err := tw.Deserialize("orders", make([]byte, 11)); return err },
			"windowed(int64)", nil},
		{"session windowed shorter than end and start", func() error { _, err := sw.Deserialize("orders", make([]byte, 15)); return err },
			"session-windowed(int64)", window.ErrKeyTooShort},
		{"session windowed bad inner key", func() error { _, err := sw.Deserialize("orders", make([]byte, 17)); return err },
			"session-windowed(int64)", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.decode()
			de, ok := serde.AsDecodeError(err)
			if !ok || de.Serde != tt.serde || de.Topic != "orders" {
				t.Fatalf("error = %#v, want a *serde.DecodeError from %s on topic orders", err, tt.serde)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("error = %v, want it to wrap %v", err, tt.wantErr)
			}
		})
	}

	// The inner serde's own DecodeError stays in the chain.
	_, err := tw.Deserialize("orders", make([]byte, 11))
	var inner *serde.DecodeError
	if !errors.As(errors.Unwrap(err), &inner) || inner.Serde != "int64" {
		t.Fatalf("inner error lost: %v", err)
	}

	// A null key cannot be windowed.
	bw := window.TimeWindowedSerde(serde.Bytes(), 10)
	if _, err := bw.Serialize("t", window.Windowed[[]byte]{}); !errors.Is(err, window.ErrNullKey) {
		t.Fatalf("Serialize(nil key) = %v, want ErrNullKey", err)
	}
	if _, err := window.SessionWindowedSerde(serde.Bytes()).Serialize("t", window.Windowed[[]byte]{}); !errors.Is(err, window.ErrNullKey) {
		t.Fatalf("session Serialize(nil key) = %v, want ErrNullKey", err)
	}
}

// Serialize must not append into the inner serializer's buffer: Bytes hands
// back its input, whose spare capacity belongs to the caller.
func TestWindowedSerdeDoesNotAlias(t *testing.T) {
	key := make([]byte, 1, 64)
	key[0] = 'k'
	spare := key[:20]
	before := bytes.Clone(spare)
	for _, s := range []serde.Serde[window.Windowed[[]byte]]{
		window.TimeWindowedSerde(serde.Bytes(), 10),
		window.SessionWindowedSerde(serde.Bytes()),
	} {
		if _, err := s.Serialize("t", window.Windowed[[]byte]{Key: key, Window: window.Window{Start: -1, End: -1}}); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(spare, before) {
			t.Fatalf("%s wrote into the key's spare capacity: % x", s.Name(), spare)
		}
	}
}
