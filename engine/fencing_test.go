package engine

import (
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestFenceRule: fencings with the brokers answering all along count, and
// the third within a minute is a twin; a fencing within a minute of a
// broker connection failure is a restart's and does not count; old
// fencings fall out of the window.
func TestFenceRule(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	type event struct {
		trouble bool // a broker connection failure, else a fencing
		at      int  // seconds
		// the verdict on a fencing
		twin, afterTrouble bool
	}
	for _, tc := range []struct {
		name   string
		events []event
	}{
		{"three fencings in a minute, brokers fine", []event{{at: 0}, {at: 20}, {at: 40, twin: true}}},
		{"three fencings over more than a minute", []event{{at: 0}, {at: 40}, {at: 80}, {at: 100, twin: true}}},
		{"three restarts in a minute", []event{
			{trouble: true, at: 0}, {at: 2, afterTrouble: true},
			{trouble: true, at: 15}, {at: 17, afterTrouble: true},
			{trouble: true, at: 30}, {at: 33, afterTrouble: true}}},
		{"a restart, then a twin", []event{
			{trouble: true, at: 0}, {at: 2, afterTrouble: true},
			{at: 70}, {at: 80}, {at: 90, twin: true}}},
		{"a restart among twin fencings holds the verdict back a minute", []event{
			{at: 0}, {at: 10}, {trouble: true, at: 20}, {at: 21, afterTrouble: true}, {at: 50, afterTrouble: true},
			{at: 85}, {at: 90}, {at: 95, twin: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f fenceRule
			for i, ev := range tc.events {
				if ev.trouble {
					f.noteTrouble(at(ev.at))
					continue
				}
				twin, after, _ := f.judge(at(ev.at))
				if twin != ev.twin || after != ev.afterTrouble {
					t.Fatalf("event %d (fencing at %d s): twin %v, after trouble %v; want %v, %v", i, ev.at, twin, after, ev.twin, ev.afterTrouble)
				}
			}
		})
	}
}

// TestBrokerTroubleHook: failed dials, reads and writes are trouble; the
// client's own closing and ended contexts are not.
func TestBrokerTroubleHook(t *testing.T) {
	for _, tc := range []struct {
		err     error
		trouble bool
	}{
		{nil, false},
		{io.EOF, true},
		{errors.New("dial tcp 127.0.0.1:9092: connect: connection refused"), true},
		{fmt.Errorf("read: %w", kgo.ErrClientClosed), false},
	} {
		var f fenceRule
		h := brokerTroubleHook{&f}
		h.OnBrokerConnect(kgo.BrokerMetadata{}, 0, nil, tc.err)
		h.OnBrokerWrite(kgo.BrokerMetadata{}, 0, 0, 0, 0, tc.err)
		if got := f.trouble.Load() != 0; got != tc.trouble {
			t.Errorf("%v: trouble %v, want %v", tc.err, got, tc.trouble)
		}
	}
}
