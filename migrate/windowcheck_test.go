package migrate

import (
	"testing"

	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/state"
)

// TestWindowCheck: each contradiction of a window definition a record can
// show, and the records that show none, one at a time.
func TestWindowCheck(t *testing.T) {
	tumbling := dsl.WindowSpec{Kind: "tumbling", Size: 60_000, Advance: 60_000, Grace: 10_000, Retention: 70_000}
	hopping := dsl.WindowSpec{Kind: "hopping", Size: 60_000, Advance: 30_000, Grace: 10_000, Retention: 70_000}
	sliding := dsl.WindowSpec{Kind: "sliding", Size: 60_000, Grace: 10_000, Retention: 130_000}
	session := dsl.WindowSpec{Kind: "session", Gap: 30_000, Grace: 10_000, Retention: 40_000}
	win := func(start, ts int64) Entry {
		return Entry{Key: state.EncodeWindowKey([]byte("k"), start, 0), LaneKey: []byte("k"), Value: []byte{1}, Start: start, End: -1, Timestamp: ts}
	}
	ses := func(start, end int64) Entry {
		return Entry{LaneKey: []byte("k"), Value: []byte{1}, Start: start, End: end, Timestamp: end}
	}
	for _, tc := range []struct {
		name    string
		spec    dsl.WindowSpec
		entries []Entry
		want    []string
		// stream is Kafka Streams' stream time, when known.
		stream int64
	}{
		{"tumbling on the grid", tumbling, []Entry{win(0, 0), win(60_000, 119_999)}, nil, 0},
		{"tumbling off the grid", tumbling, []Entry{win(30_000, 40_000)}, []string{ProblemWindowGrid}, 0},
		{"a record past the window's end", tumbling, []Entry{win(0, 60_000)}, []string{ProblemWindowTimestamp}, 0},
		{"a record before its start", tumbling, []Entry{win(60_000, 59_999)}, []string{ProblemWindowTimestamp}, 0},
		{"both", tumbling, []Entry{win(70_000, 135_000)}, []string{ProblemWindowGrid, ProblemWindowTimestamp}, 0},
		{"hopping on its grid", hopping, []Entry{win(30_000, 40_000), win(0, 40_000)}, nil, 0},
		{"hopping, each record in every open window of ours", hopping, []Entry{win(30_000, 45_000), win(0, 45_000)}, nil, 50_000},
		{"tumbling on our hopping", hopping, []Entry{win(0, 45_000)}, []string{ProblemWindowHop}, 50_000},
		{"tumbling on our hopping, the other window closed", hopping, []Entry{win(60_000, 80_000)}, nil, 200_000},
		{"a window removed is missing", hopping, []Entry{win(0, 45_000), win(30_000, 45_000), {LaneKey: []byte("k"), Start: 30_000, End: -1}, win(60_000, 61_000)}, []string{ProblemWindowHop}, 50_000},
		{"a tombstone is not held against it", tumbling, []Entry{{LaneKey: []byte("k"), Start: 30_000, End: -1}}, nil, 0},
		{"sliding, end inclusive", sliding, []Entry{win(5_001, 65_001), win(7, 7)}, nil, 0},
		{"sliding, past its end", sliding, []Entry{win(0, 60_001)}, []string{ProblemWindowTimestamp}, 0},
		{"sessions further apart than our gap", session, []Entry{ses(0, 10_000), ses(40_001, 50_000)}, nil, 0},
		{"sessions within our gap", session, []Entry{ses(0, 10_000), ses(40_000, 50_000)}, []string{ProblemSessionGap}, 0},
		{"a session removed is not held against it", session, []Entry{ses(0, 10_000), ses(20_000, 20_000), {LaneKey: []byte("k"), Start: 20_000, End: 20_000}}, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newWindowCheck(tc.spec)
			if tc.stream > 0 {
				c.setStreamTime(tc.stream)
			}
			for _, e := range tc.entries {
				c.entry(e, "here")
			}
			var got []string
			for _, p := range c.problems("ks", "ours") {
				got = append(got, p.Code)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("problems %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("problems %v, want %v", got, tc.want)
				}
			}
		})
	}
}

// FuzzWindowCheck feeds the check window and session keys as a changelog
// holds them, decoded: it never panics, and a time window on the grid
// holding a record inside it is never held against the definition.
func FuzzWindowCheck(f *testing.F) {
	f.Add(state.EncodeWindowKey([]byte("k"), 60_000, 0), int64(65_000), false)
	f.Add(state.EncodeSessionKey([]byte("k"), 0, 10_000), int64(10_000), true)
	f.Add([]byte{0, 0, 0}, int64(-1), false)
	f.Fuzz(func(t *testing.T, key []byte, ts int64, session bool) {
		kind, spec := Window, dsl.WindowSpec{Kind: "hopping", Size: 60_000, Advance: 20_000, Grace: 5_000}
		if session {
			kind, spec = Session, dsl.WindowSpec{Kind: "session", Gap: 30_000, Grace: 5_000}
		}
		e, err := Decode(kind, key, []byte{1}, ts, nil)
		if err != nil {
			return
		}
		c := newWindowCheck(spec)
		c.setStreamTime(ts)
		c.entry(e, "fuzz")
		c.entry(e, "fuzz")
		probs := c.problems("ks", "ours")
		if !session && e.Start%spec.Advance == 0 && ts >= e.Start && ts < e.Start+spec.Size {
			for _, p := range probs {
				if p.Code != ProblemWindowHop {
					t.Fatalf("window at %d with a record at %d on our grid: %v", e.Start, ts, probs)
				}
			}
		}
	})
}
