package benchcompare

import (
	"math"
	"testing"
)

func TestSummarize(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []float64
		want Summary
	}{
		{"none", nil, Summary{}},
		{"one", []float64{3}, Summary{3, 3, 3, 1}},
		{"odd, unsorted", []float64{5, 1, 3}, Summary{3, 1, 5, 3}},
		{"even: mean of the middle two", []float64{4, 1, 2, 10}, Summary{3, 1, 10, 4}},
		{"NaN ignored", []float64{math.NaN(), 2, 4}, Summary{3, 2, 4, 2}},
		{"only NaN", []float64{math.NaN()}, Summary{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Summarize(tc.in); got != tc.want {
				t.Errorf("Summarize(%v) = %+v, want %+v", tc.in, got, tc.want)
			}
		})
	}
}

func TestRatios(t *testing.T) {
	num := map[int]float64{0: 10, 1: 20, 2: 30, 3: 40}
	den := map[int]float64{0: 5, 1: 0, 3: 20} // round 1 failed (0), round 2 missing
	got := Ratios(num, den)
	want := []float64{2, 2}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("Ratios = %v, want %v", got, want)
	}
}
