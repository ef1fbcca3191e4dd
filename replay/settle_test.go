package replay

import (
	"fmt"
	"strings"
	"testing"
)

// TestJoinable holds which record steps share a settle in engine mode.
func TestJoinable(t *testing.T) {
	rec := func(i int, topic string, ts int64) Step {
		return Step{Kind: StepRecord, Index: i, Record: &Record{Topic: topic, Timestamp: ts, HasTimestamp: true}}
	}
	untimed := func(i int) Step {
		return Step{Kind: StepRecord, Index: i, Record: &Record{Topic: "sentences"}}
	}
	const wall = 500
	for _, tc := range []struct {
		name   string
		expect string // the fixture's expect section
		steps  []Step
		want   []bool // joinable(steps[i], steps[i+1])
	}{
		{"in order", "", []Step{rec(1, "sentences", 1), rec(2, "sentences", 1), rec(3, "sentences", 7)}, []bool{true, true}},
		{"out of order", "", []Step{rec(1, "sentences", 5), rec(2, "sentences", 4), rec(3, "sentences", 6)}, []bool{false, true}},
		{"below an advance", "", []Step{{Kind: StepAdvanceWatermark, Index: 1, Time: 10}, rec(2, "sentences", 11), rec(3, "sentences", 9)}, []bool{false, false}},
		{"wall-clock stamps", "", []Step{rec(1, "sentences", wall), untimed(2), untimed(3)}, []bool{true, true}},
		{"other kinds", "", []Step{rec(1, "sentences", 1), {Kind: StepCommitBarrier, Index: 2}, rec(3, "sentences", 2)}, []bool{false, false}},
		{"named step", "expect:\n  outputs:\n    shouted:\n      - {key: a, value: A, after: 1}\n",
			[]Step{rec(1, "sentences", 1), rec(2, "sentences", 2), rec(3, "sentences", 3)}, []bool{false, true}},
		{"in order across keys", "expect:\n  outputs:\n    shouted:\n      - {key: a, value: A}\n      - {key: b, value: B}\n",
			[]Step{rec(1, "sentences", 1), rec(2, "sentences", 2)}, []bool{false}},
		{"per key", "expect:\n  outputs:\n    shouted:\n      order: per-key\n      records:\n        - {key: a, value: A}\n        - {key: b, value: B}\n",
			[]Step{rec(1, "sentences", 1), rec(2, "sentences", 2)}, []bool{true}},
		{"one key in order", "expect:\n  outputs:\n    shouted:\n      - {key: a, value: A}\n      - {key: a, value: B}\n",
			[]Step{rec(1, "sentences", 1), rec(2, "sentences", 2)}, []bool{true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Three steps, so that an expectation may name them; the
			// steps judged are tc.steps.
			three := "steps:\n" + strings.Repeat("  - {topic: sentences, key: a, value: x}\n", 3)
			f, err := Parse("joinable.fixture.yaml", []byte("topology: uppercase\n"+three+tc.expect))
			if err != nil {
				t.Fatal(err)
			}
			r, rerr := newRunner(f)
			if rerr != nil {
				t.Fatal(rerr)
			}
			defer r.d.Close()
			j := newJoiner(f, r.built)
			stamp := func(rec *Record) int64 {
				if rec.HasTimestamp {
					return rec.Timestamp
				}
				return wall
			}
			var got []bool
			for i, st := range tc.steps {
				switch st.Kind {
				case StepRecord:
					j.piped(stamp(st.Record))
				case StepAdvanceWatermark:
					j.piped(st.Time)
				}
				if i+1 < len(tc.steps) {
					got = append(got, j.joinable(st, tc.steps[i+1], stamp))
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("joinable %v, want %v", got, tc.want)
			}
		})
	}
}

// TestJoinerOff holds the topologies in which no record steps share a
// settle: a repartition topic, a global table's topic.
func TestJoinerOff(t *testing.T) {
	for _, tc := range []struct {
		topology string
		off      bool
	}{
		{"uppercase", false},
		{"word-count", true}, // groupBy the word: a repartition topic
	} {
		f, err := Parse("off.fixture.yaml", []byte("topology: "+tc.topology+"\nsteps: []\n"))
		if err != nil {
			t.Fatal(err)
		}
		r, rerr := newRunner(f)
		if rerr != nil {
			t.Fatal(rerr)
		}
		if got := newJoiner(f, r.built).off; got != tc.off {
			t.Errorf("%s: off %v, want %v", tc.topology, got, tc.off)
		}
		r.d.Close()
	}
}

// TestCountOnly runs fixtures counting only: a wrong value in a list of
// the right length passes, a wrong count fails, and so does an output the
// fixture does not list.
func TestCountOnly(t *testing.T) {
	for src, want := range map[string]Status{
		// A wrong value, the right count.
		"topology: uppercase\nsteps:\n  - {topic: sentences, key: a, value: b}\nexpect:\n  outputs:\n    shouted:\n      - {key: a, value: WRONG}\n": Pass,
		// One record too many.
		"topology: uppercase\nsteps:\n  - {topic: sentences, key: a, value: b}\nexpect:\n  outputs:\n    shouted:\n      - {key: a, value: B}\n      - {key: a, value: B}\n": Fail,
	} {
		f, err := Parse("count-only.fixture.yaml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		f.CountOnly()
		r := Run(f)
		if r.Status != want {
			t.Errorf("%s: %s, want %s", src, r.Status, want)
		}
		for _, o := range r.Outputs {
			if !o.CountOnly || len(o.Actual) != 0 {
				t.Errorf("%s: output %s kept %d records (count-only %v)", src, o.Topic, len(o.Actual), o.CountOnly)
			}
		}
	}
	// An output nobody lists counts against the fixture.
	f, err := Parse("unlisted.fixture.yaml", []byte("topology: uppercase\nsteps:\n  - {topic: sentences, key: a, value: b}\nexpect:\n  outputs: {}\n"))
	if err != nil {
		t.Fatal(err)
	}
	f.CountOnly()
	if r := Run(f); r.Status != Fail || len(r.Outputs) != 1 || r.Outputs[0].ActualCount != 1 {
		t.Errorf("unlisted output: %s, %d outputs", r.Status, len(r.Outputs))
	}
}
