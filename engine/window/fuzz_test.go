package window_test

import (
	"bytes"
	"testing"

	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/window"
)

// The fuzz targets check that the windowed deserializers never panic, that
// every failure is a *serde.DecodeError, and that what decodes encodes back
// to the same bytes (the layouts have one encoding per value).

func checkWindowed[K any](t *testing.T, s serde.Serde[window.Windowed[K]], data []byte, suffix, keyWidth int) {
	t.Helper()
	v, err := s.Deserialize("fuzz", data)
	if err != nil {
		de, ok := serde.AsDecodeError(err)
		if !ok || de.Serde != s.Name() || de.Topic != "fuzz" {
			t.Fatalf("%s: error %T %q is not a DecodeError naming the serde and topic", s.Name(), err, err)
		}
		if len(data) >= suffix && (keyWidth < 0 || len(data)-suffix == keyWidth) {
			t.Fatalf("%s: rejected % x: %v", s.Name(), data, err)
		}
		return
	}
	if len(data) < suffix || (keyWidth >= 0 && len(data)-suffix != keyWidth) {
		t.Fatalf("%s: accepted % x", s.Name(), data)
	}
	back, err := s.Serialize("fuzz", v)
	if err != nil {
		t.Fatalf("%s: Serialize(%+v): %v", s.Name(), v, err)
	}
	if !bytes.Equal(back, data) {
		t.Fatalf("%s: % x decoded to %+v, which encodes to % x", s.Name(), data, v, back)
	}
}

func FuzzTimeWindowedDeserialize(f *testing.F) {
	f.Add([]byte{'a', 'b', 0, 0, 0, 0, 0, 0, 0, 0}, int64(10))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 5}, int64(1))
	f.Add([]byte{0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, int64(1<<62))
	f.Add([]byte{1, 2, 3}, int64(0))
	f.Fuzz(func(t *testing.T, data []byte, size int64) {
		checkWindowed(t, window.TimeWindowedSerde(serde.Bytes(), size), data, 8, -1)
		checkWindowed(t, window.TimeWindowedSerde(serde.Int64(), size), data, 8, 8)
		if v, err := window.TimeWindowedSerde(serde.Bytes(), size).Deserialize("fuzz", data); err == nil {
			if size >= 0 && v.Window.End < v.Window.Start {
				t.Fatalf("window %+v ends before it starts with size %d", v.Window, size)
			}
		}
	})
}

func FuzzSessionWindowedDeserialize(f *testing.F) {
	f.Add([]byte{'k', 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0, 0, 0, 5})
	f.Add(make([]byte, 16))
	f.Add(make([]byte, 24))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		checkWindowed(t, window.SessionWindowedSerde(serde.Bytes()), data, 16, -1)
		checkWindowed(t, window.SessionWindowedSerde(serde.Int64()), data, 16, 8)
	})
}
