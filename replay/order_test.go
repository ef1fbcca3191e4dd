package replay

import (
	"strconv"
	"testing"
)

func TestOrdered(t *testing.T) {
	e := func(key string, value int64, ts int64, after int) ExpectedRecord {
		r := ExpectedRecord{Key: Value{Kind: String, Text: key}, Value: Value{Kind: Number, Text: itoa(value)}, After: after}
		if ts >= 0 {
			r.Timestamp, r.HasTimestamp = ts, true
		}
		return r
	}
	a := func(key string, value int64, ts int64, step int) Actual {
		return Actual{Key: key, Value: value, Timestamp: ts, HasTimestamp: true, Step: step}
	}
	written := []Actual{a("fox", 1, 1000, 1), a("the", 1, 1000, 1), a("fox", 1, 3000, 2), a("the", 2, 3000, 2)}
	tests := []struct {
		name  string
		order Order
		exp   []ExpectedRecord
		want  bool
	}{
		{"in order", InOrder, []ExpectedRecord{e("fox", 1, -1, 0), e("the", 1, -1, 0), e("fox", 1, -1, 0), e("the", 2, -1, 0)}, true},
		{"in order, swapped", InOrder, []ExpectedRecord{e("the", 1, -1, 0), e("fox", 1, -1, 0), e("fox", 1, -1, 0), e("the", 2, -1, 0)}, false},
		{"per key, across keys swapped", PerKey, []ExpectedRecord{e("the", 1, -1, 0), e("fox", 1, 1000, 0), e("the", 2, -1, 2), e("fox", 1, 3000, 0)}, true},
		{"per key, within a key swapped", PerKey, []ExpectedRecord{e("fox", 1, 3000, 0), e("fox", 1, 1000, 0), e("the", 1, -1, 0), e("the", 2, -1, 0)}, false},
		{"per key, wrong step", PerKey, []ExpectedRecord{e("fox", 1, -1, 1), e("fox", 1, -1, 1), e("the", 1, -1, 0), e("the", 2, -1, 0)}, false},
		// A greedy pairing takes the first written fox for the first
		// expected one, leaving none stamped 1000 for the second: the
		// matching must re-pair.
		{"multiset, needs re-pairing", Multiset, []ExpectedRecord{e("the", 2, -1, 0), e("fox", 1, -1, 0), e("fox", 1, 1000, 0), e("the", 1, -1, 1)}, true},
		{"multiset, steps re-paired", Multiset, []ExpectedRecord{e("fox", 1, -1, 0), e("fox", 1, -1, 1), e("the", 2, -1, 0), e("the", 1, -1, 0)}, true},
		{"multiset, one short", Multiset, []ExpectedRecord{e("fox", 1, -1, 0), e("the", 1, -1, 0), e("the", 2, -1, 0)}, false},
		{"multiset, one different", Multiset, []ExpectedRecord{e("fox", 1, -1, 0), e("fox", 1, -1, 0), e("the", 1, -1, 0), e("the", 3, -1, 0)}, false},
		{"multiset, no pairing", Multiset, []ExpectedRecord{e("fox", 1, 1000, 0), e("fox", 1, 1000, 0), e("the", 1, -1, 0), e("the", 2, -1, 0)}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ordered(tc.order, tc.exp, written, false); got != tc.want {
				t.Errorf("ordered(%s) = %v, want %v", tc.order, got, tc.want)
			}
		})
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// BenchmarkMultisetAlike pairs 100 k written records that are all alike,
// the case an augmenting-path matching alone would take quadratic time
// over.
func BenchmarkMultisetAlike(b *testing.B) {
	exp := make([]ExpectedRecord, 100_000)
	act := make([]Actual, len(exp))
	for i := range exp {
		exp[i] = ExpectedRecord{Key: Value{Kind: String, Text: "k"}, Value: Value{Kind: Number, Text: "1"}}
		act[i] = Actual{Key: "k", Value: int64(1), HasTimestamp: true, Timestamp: int64(i)}
	}
	for b.Loop() {
		if !ordered(Multiset, exp, act, false) {
			b.Fatal("no match")
		}
	}
}
