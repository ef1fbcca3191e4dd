package window_test

import (
	"errors"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine/window"
)

const ms = time.Millisecond

func TestTimeWindowsFor(t *testing.T) {
	tumbling4 := window.TimeWindowsOfSizeWithNoGrace(4 * ms)
	hopping4by1 := window.TimeWindowsOfSizeWithNoGrace(4 * ms).AdvanceBy(ms)
	hopping20by5 := window.TimeWindowsOfSizeAndGrace(20*ms, 3*ms).AdvanceBy(5 * ms)
	hopping5by3 := window.TimeWindowsOfSizeWithNoGrace(5 * ms).AdvanceBy(3 * ms)
	tumbling10 := window.TimeWindowsOfSizeWithNoGrace(10 * ms)

	type w = window.Window
	tests := []struct {
		name string
		tw   window.TimeWindows
		ts   int64
		want []w
	}{
		{"tumbling at 0", tumbling4, 0, []w{{0, 4}}},
		{"tumbling at 3", tumbling4, 3, []w{{0, 4}}},
		{"tumbling at 4 starts the next window", tumbling4, 4, []w{{4, 8}}},
		{"tumbling at 7", tumbling4, 7, []w{{4, 8}}},
		{"tumbling negative timestamp has no window", tumbling4, -1, nil},
		{"tumbling far negative does not overflow", tumbling4, math.MinInt64, nil},

		// size/advance = 4: up to four windows, fewer near the epoch
		// because starts -3..-1 would be negative.
		{"hopping 4/1 at 0 drops negative starts", hopping4by1, 0, []w{{0, 4}}},
		{"hopping 4/1 at 1", hopping4by1, 1, []w{{0, 4}, {1, 5}}},
		{"hopping 4/1 at 2", hopping4by1, 2, []w{{0, 4}, {1, 5}, {2, 6}}},
		{"hopping 4/1 at 3 is the first with all four", hopping4by1, 3, []w{{0, 4}, {1, 5}, {2, 6}, {3, 7}}},
		{"hopping 4/1 at 10", hopping4by1, 10, []w{{7, 11}, {8, 12}, {9, 13}, {10, 14}}},

		{"hopping 20/5 at 0", hopping20by5, 0, []w{{0, 20}}},
		{"hopping 20/5 at 7", hopping20by5, 7, []w{{0, 20}, {5, 25}}},
		{"hopping 20/5 at 19", hopping20by5, 19, []w{{0, 20}, {5, 25}, {10, 30}, {15, 35}}},
		{"hopping 20/5 at 20 leaves the first window", hopping20by5, 20, []w{{5, 25}, {10, 30}, {15, 35}, {20, 40}}},
		{"hopping 20/5 at 24", hopping20by5, 24, []w{{5, 25}, {10, 30}, {15, 35}, {20, 40}}},
		{"hopping 20/5 at 25", hopping20by5, 25, []w{{10, 30}, {15, 35}, {20, 40}, {25, 45}}},

		// Kafka Streams' own example: size 5, advance 3 gives [0;5),[3;8),...
		{"hopping 5/3 at 4", hopping5by3, 4, []w{{0, 5}, {3, 8}}},
		{"hopping 5/3 at 5", hopping5by3, 5, []w{{3, 8}}},
		{"hopping 5/3 at 6", hopping5by3, 6, []w{{3, 8}, {6, 11}}},

		{"end clamps at max int64", tumbling10, math.MaxInt64, []w{{9223372036854775800, math.MaxInt64}}},
		{"invalid definition has no windows", window.TimeWindowsOfSizeWithNoGrace(0), 5, nil},
		{"advance larger than size has no windows", window.TimeWindowsOfSizeWithNoGrace(2 * ms).AdvanceBy(3 * ms), 5, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.tw.WindowsFor(tt.ts)
			if len(got) == 0 && len(tt.want) == 0 {
				return
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("%s.WindowsFor(%d) = %v, want %v", tt.tw, tt.ts, got, tt.want)
			}
		})
	}
}

// TestTimeWindowsForContainsTimestamp checks WindowsFor against its
// definition by brute force: every window with a non-negative start aligned
// to the advance that contains ts, and no other.
func TestTimeWindowsForContainsTimestamp(t *testing.T) {
	for size := int64(1); size <= 6; size++ {
		for advance := int64(1); advance <= size; advance++ {
			tw := window.TimeWindowsOfSizeWithNoGrace(time.Duration(size) * ms).AdvanceBy(time.Duration(advance) * ms)
			for ts := int64(-3); ts < 40; ts++ {
				var want []window.Window
				for start := int64(0); start <= ts; start += advance {
					if ts < start+size {
						want = append(want, window.Window{Start: start, End: start + size})
					}
				}
				if got := tw.WindowsFor(ts); !reflect.DeepEqual(got, want) && (len(got) != 0 || len(want) != 0) {
					t.Fatalf("%s.WindowsFor(%d) = %v, want %v", tw, ts, got, want)
				}
			}
		}
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		def  interface{ Validate() error }
		want string // "" for valid
	}{
		{"tumbling", window.TimeWindowsOfSizeWithNoGrace(5 * ms), ""},
		{"hopping advance equal to size", window.TimeWindowsOfSizeAndGrace(5*ms, ms).AdvanceBy(5 * ms), ""},
		{"zero size", window.TimeWindowsOfSizeWithNoGrace(0),
			"invalid time windows [size 0ms, advance 0ms, grace 0ms]: size must be positive; advance must lie within (0, size]"},
		{"negative size", window.TimeWindowsOfSizeWithNoGrace(-5 * ms).AdvanceBy(ms),
			"invalid time windows [size -5ms, advance 1ms, grace 0ms]: size must be positive; advance must lie within (0, size]"},
		{"sub-millisecond size truncates to zero", window.TimeWindowsOfSizeWithNoGrace(500 * time.Microsecond),
			"invalid time windows [size 0ms, advance 0ms, grace 0ms]: size must be positive; advance must lie within (0, size]"},
		{"zero advance", window.TimeWindowsOfSizeWithNoGrace(10 * ms).AdvanceBy(0),
			"invalid time windows [size 10ms, advance 0ms, grace 0ms]: advance must lie within (0, size]"},
		{"advance past size", window.TimeWindowsOfSizeWithNoGrace(10 * ms).AdvanceBy(11 * ms),
			"invalid time windows [size 10ms, advance 11ms, grace 0ms]: advance must lie within (0, size]"},
		{"negative grace", window.TimeWindowsOfSizeAndGrace(10*ms, -ms),
			"invalid time windows [size 10ms, advance 10ms, grace -1ms]: grace must not be negative"},
		{"zero value", window.TimeWindows{},
			"invalid time windows [size 0ms, advance 0ms, grace 0ms]: size must be positive; advance must lie within (0, size]"},

		{"sliding", window.SlidingWindowsOfTimeDifferenceAndGrace(5*ms, 2*ms), ""},
		{"sliding zero difference", window.SlidingWindowsOfTimeDifferenceWithNoGrace(0), ""},
		{"sliding negative difference", window.SlidingWindowsOfTimeDifferenceWithNoGrace(-ms),
			"invalid sliding windows [time difference -1ms, grace 0ms]: time difference must not be negative"},
		{"sliding negative grace", window.SlidingWindowsOfTimeDifferenceAndGrace(ms, -2*ms),
			"invalid sliding windows [time difference 1ms, grace -2ms]: grace must not be negative"},

		{"session", window.SessionWindowsOfInactivityGapWithNoGrace(ms), ""},
		{"session zero gap", window.SessionWindowsOfInactivityGapWithNoGrace(0),
			"invalid session windows [inactivity gap 0ms, grace 0ms]: inactivity gap must be positive"},
		{"session negative gap and grace", window.SessionWindowsOfInactivityGapAndGrace(-ms, -ms),
			"invalid session windows [inactivity gap -1ms, grace -1ms]: inactivity gap must be positive; grace must not be negative"},

		{"join", window.JoinWindowsOfTimeDifferenceAndGrace(5*ms, ms), ""},
		{"join zero difference", window.JoinWindowsOfTimeDifferenceWithNoGrace(0), ""},
		{"join negative before within after", window.JoinWindowsOfTimeDifferenceWithNoGrace(5 * ms).Before(-5 * ms), ""},
		{"join negative difference", window.JoinWindowsOfTimeDifferenceWithNoGrace(-ms),
			"invalid join windows [before -1ms, after -1ms, grace 0ms]: before + after must not be negative"},
		{"join after below minus before", window.JoinWindowsOfTimeDifferenceWithNoGrace(5 * ms).After(-6 * ms),
			"invalid join windows [before 5ms, after -6ms, grace 0ms]: before + after must not be negative"},
		{"join negative grace", window.JoinWindowsOfTimeDifferenceAndGrace(ms, -ms),
			"invalid join windows [before 1ms, after 1ms, grace -1ms]: grace must not be negative"},
		{"join most negative durations", window.JoinWindowsOfTimeDifferenceWithNoGrace(math.MinInt64).After(math.MinInt64),
			"invalid join windows [before -9223372036854ms, after -9223372036854ms, grace 0ms]: before + after must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.def.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || err.Error() != tt.want {
				t.Fatalf("Validate() = %v\nwant %s", err, tt.want)
			}
			var ie *window.InvalidError
			if !errors.As(err, &ie) || len(ie.Problems) == 0 || ie.Windows == "" {
				t.Fatalf("Validate() = %#v, want a *window.InvalidError with problems", err)
			}
		})
	}
}

func TestAccessors(t *testing.T) {
	tw := window.TimeWindowsOfSizeAndGrace(time.Minute, time.Second).AdvanceBy(10 * time.Second)
	if tw.Size() != 60000 || tw.Advance() != 10000 || tw.Grace() != 1000 {
		t.Fatalf("time windows = %d %d %d", tw.Size(), tw.Advance(), tw.Grace())
	}
	if tw := window.TimeWindowsOfSizeWithNoGrace(time.Second); tw.Advance() != tw.Size() || tw.Grace() != 0 {
		t.Fatalf("tumbling = %s", tw)
	}
	sw := window.SlidingWindowsOfTimeDifferenceAndGrace(3*time.Second, 2*time.Second)
	if sw.TimeDifference() != 3000 || sw.Grace() != 2000 {
		t.Fatalf("sliding = %s", sw)
	}
	ss := window.SessionWindowsOfInactivityGapAndGrace(5*time.Second, time.Second)
	if ss.Gap() != 5000 || ss.Grace() != 1000 {
		t.Fatalf("session = %s", ss)
	}
	jw := window.JoinWindowsOfTimeDifferenceAndGrace(5*ms, 2*ms).Before(3 * ms)
	if before, after := jw.Bounds(); before != 3 || after != 5 || jw.Size() != 8 || jw.Grace() != 2 {
		t.Fatalf("join = %s size %d", jw, jw.Size())
	}
	// Builders return new values: the original is unchanged.
	base := window.JoinWindowsOfTimeDifferenceWithNoGrace(5 * ms)
	_ = base.After(ms)
	if _, after := base.Bounds(); after != 5 {
		t.Fatalf("After changed its receiver: %s", base)
	}
}

// The oracles below are Kafka Streams' own open-window tests, transcribed
// from KStreamWindowAggregate, KStreamSlidingWindowAggregate and
// KStreamSessionWindowAggregate. CloseTime must be the first stream time at
// which each says "closed".

func timeWindowOpen(w window.TimeWindows, win window.Window, streamTime int64) bool {
	return win.End > streamTime-w.Grace() // windowEnd > windowCloseTime
}

func slidingWindowOpen(w window.SlidingWindows, win window.Window, streamTime int64) bool {
	return win.Start+w.TimeDifference() >= streamTime-w.Grace() // windowEnd >= closeTime
}

// sessionOpen is StoatFlow's rule, not Kafka Streams': a session is
// closed once the floor reaches mergedEnd + gap + grace (Kafka Streams
// admits one more tick, see SessionWindows.CloseTime).
func sessionOpen(w window.SessionWindows, mergedEnd, streamTime int64) bool {
	return mergedEnd+w.Gap()+w.Grace() > streamTime
}

func TestCloseTime(t *testing.T) {
	tests := []struct {
		name      string
		closeTime int64
		want      int64
		open      func(streamTime int64) bool
	}{
		{"tumbling no grace closes at end",
			window.TimeWindowsOfSizeWithNoGrace(10 * ms).CloseTime(window.Window{Start: 10, End: 20}), 20,
			func(st int64) bool {
				return timeWindowOpen(window.TimeWindowsOfSizeWithNoGrace(10*ms), window.Window{Start: 10, End: 20}, st)
			}},
		{"hopping closes at end plus grace",
			window.TimeWindowsOfSizeAndGrace(10*ms, 5*ms).AdvanceBy(2 * ms).CloseTime(window.Window{Start: 4, End: 14}), 19,
			func(st int64) bool {
				return timeWindowOpen(window.TimeWindowsOfSizeAndGrace(10*ms, 5*ms), window.Window{Start: 4, End: 14}, st)
			}},
		{"sliding closes one past end plus grace",
			window.SlidingWindowsOfTimeDifferenceAndGrace(10*ms, 5*ms).CloseTime(window.Window{Start: 100, End: 110}), 116,
			func(st int64) bool {
				return slidingWindowOpen(window.SlidingWindowsOfTimeDifferenceAndGrace(10*ms, 5*ms), window.Window{Start: 100, End: 110}, st)
			}},
		{"sliding no grace",
			window.SlidingWindowsOfTimeDifferenceWithNoGrace(10 * ms).CloseTime(window.Window{Start: 0, End: 10}), 11,
			func(st int64) bool {
				return slidingWindowOpen(window.SlidingWindowsOfTimeDifferenceWithNoGrace(10*ms), window.Window{Start: 0, End: 10}, st)
			}},
		{"sliding uses start, not end",
			window.SlidingWindowsOfTimeDifferenceWithNoGrace(10 * ms).CloseTime(window.Window{Start: 0, End: 999}), 11, nil},
		{"session closes at end plus gap plus grace",
			window.SessionWindowsOfInactivityGapAndGrace(30*ms, 5*ms).CloseTime(100), 135,
			func(st int64) bool {
				return sessionOpen(window.SessionWindowsOfInactivityGapAndGrace(30*ms, 5*ms), 100, st)
			}},
		{"session no grace",
			window.SessionWindowsOfInactivityGapWithNoGrace(30 * ms).CloseTime(100), 130,
			func(st int64) bool {
				return sessionOpen(window.SessionWindowsOfInactivityGapWithNoGrace(30*ms), 100, st)
			}},
		{"time window close saturates",
			window.TimeWindowsOfSizeAndGrace(10*ms, time.Hour).CloseTime(window.Window{Start: math.MaxInt64 - 5, End: math.MaxInt64}), math.MaxInt64, nil},
		{"sliding close saturates",
			window.SlidingWindowsOfTimeDifferenceAndGrace(10*ms, time.Hour).CloseTime(window.Window{Start: math.MaxInt64 - 5}), math.MaxInt64, nil},
		{"session close saturates",
			window.SessionWindowsOfInactivityGapAndGrace(10*ms, time.Hour).CloseTime(math.MaxInt64 - 5), math.MaxInt64, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.closeTime != tt.want {
				t.Fatalf("CloseTime = %d, want %d", tt.closeTime, tt.want)
			}
			if tt.open == nil {
				return
			}
			if !tt.open(tt.want - 1) {
				t.Fatalf("Kafka Streams' rule says the window is closed at stream time %d, before CloseTime", tt.want-1)
			}
			if tt.open(tt.want) {
				t.Fatalf("Kafka Streams' rule says the window is still open at CloseTime %d", tt.want)
			}
		})
	}
}

// TestClosedIsInclusive pins the late rule's boundary: closed at the close
// time itself, open one millisecond before it.
func TestClosedIsInclusive(t *testing.T) {
	tests := []struct {
		close, floor int64
		want         bool
	}{
		{close: 100, floor: 99, want: false},
		{close: 100, floor: 100, want: true},
		{close: 100, floor: 101, want: true},
		{close: math.MaxInt64, floor: math.MaxInt64 - 1, want: false},
		{close: math.MinInt64, floor: math.MinInt64, want: true},
	}
	for _, tt := range tests {
		if got := window.Closed(tt.close, tt.floor); got != tt.want {
			t.Errorf("Closed(close %d, floor %d) = %v, want %v", tt.close, tt.floor, got, tt.want)
		}
	}
}

// TestJoinCloseTime: a record at t pairing up to after past t closes at
// t + after + 1 + grace; a negative after counts as 0; the sum saturates.
func TestJoinCloseTime(t *testing.T) {
	tests := []struct{ t, after, grace, want int64 }{
		{t: 1000, after: 100, grace: 10, want: 1111},
		{t: 1000, after: -50, grace: 0, want: 1001},
		{t: math.MaxInt64 - 5, after: 100, grace: 0, want: math.MaxInt64},
	}
	for _, tt := range tests {
		if got := window.JoinCloseTime(tt.t, tt.after, tt.grace); got != tt.want {
			t.Errorf("JoinCloseTime(%d, %d, %d) = %d, want %d", tt.t, tt.after, tt.grace, got, tt.want)
		}
	}
}
