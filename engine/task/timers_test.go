package task

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/stoatflow/stoatctl/engine/processor"
)

func TestTimerTimeKeyRoundTrip(t *testing.T) {
	tests := []storedTimer{
		{domain: processor.EventTime, time: 10, key: []byte("a"), name: ""},
		{domain: processor.ProcessingTime, time: -7, key: []byte{}, name: "n"},
		{domain: processor.EventTime, time: math.MaxInt64, key: []byte("key with \x00 bytes"), name: "débounce"},
		{domain: processor.EventTime, time: math.MinInt64, key: []byte("k"), name: ""},
	}
	for _, want := range tests {
		b := timerTimeKey(want.domain, want.time, want.key, want.name)
		got, err := decodeTimerTimeKey(b)
		if err != nil {
			t.Fatalf("decode %x: %v", b, err)
		}
		if got.domain != want.domain || got.time != want.time || !bytes.Equal(got.key, want.key) || got.name != want.name {
			t.Fatalf("round trip of %+v gave %+v", want, got)
		}
		if !bytes.HasPrefix(b, timerTimePrefix(want.domain, want.time)) {
			t.Fatalf("%x does not start with its time prefix", b)
		}
	}
}

// The store scans the time index in unsigned byte order; that must be
// time order, negative times included, or timers fire out of order.
func TestTimerTimeKeyOrder(t *testing.T) {
	times := []int64{math.MinInt64, -1 << 40, -5, -1, 0, 1, 10, 1 << 40, math.MaxInt64}
	var keys [][]byte
	for _, at := range times {
		keys = append(keys, timerTimeKey(processor.EventTime, at, []byte("k"), ""))
	}
	if !slices.IsSortedFunc(keys, bytes.Compare) {
		t.Fatal("time index keys do not sort in time order")
	}
}

func TestTimerLayoutErrors(t *testing.T) {
	for _, b := range [][]byte{
		nil,
		[]byte("T"),
		timerNameKey(processor.EventTime, []byte("k"), "n"),
		append(timerTimePrefix(processor.TimeDomain(9), 0), 0, 0, 0, 0),
		append(timerTimePrefix(processor.EventTime, 0), 0, 0, 0, 5, 'k'),
	} {
		if _, err := decodeTimerTimeKey(b); !errors.Is(err, errTimerLayout) {
			t.Errorf("decode %x: %v, want a layout error", b, err)
		}
	}
	if _, err := decodeTimerTime([]byte{1, 2}); !errors.Is(err, errTimerLayout) {
		t.Errorf("short name index value: %v", err)
	}
}

// The timer store's keys come back from a changelog, which is outside
// bytes: decoding must never panic, and what decodes must re-encode to the
// same bytes.
func FuzzDecodeTimerTimeKey(f *testing.F) {
	f.Add(timerTimeKey(processor.EventTime, 10, []byte("a"), "n"))
	f.Add(timerTimeKey(processor.ProcessingTime, -1, nil, ""))
	f.Add([]byte("T\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := decodeTimerTimeKey(b)
		if err != nil {
			return
		}
		if again := timerTimeKey(st.domain, st.time, st.key, st.name); !bytes.Equal(again, b) {
			t.Fatalf("%x decodes to %+v, which encodes to %x", b, st, again)
		}
	})
}
