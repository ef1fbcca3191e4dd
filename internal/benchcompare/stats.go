package benchcompare

import (
	"math"
	"slices"
)

// Summary is the median and range of a set of samples.
type Summary struct {
	Median, Min, Max float64
	// N is how many samples there were; a summary of none is all zero.
	N int
}

// Summarize returns the median, minimum and maximum of xs, ignoring NaNs
// (a sample that could not be taken). The median of an even count is the
// mean of the two middle samples.
func Summarize(xs []float64) Summary {
	vals := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) {
			vals = append(vals, x)
		}
	}
	if len(vals) == 0 {
		return Summary{}
	}
	slices.Sort(vals)
	n := len(vals)
	med := vals[n/2]
	if n%2 == 0 {
		med = (vals[n/2-1] + vals[n/2]) / 2
	}
	return Summary{Median: med, Min: vals[0], Max: vals[n-1], N: n}
}

// Ratios divides num by den round by round: rounds present in both, with a
// positive denominator. A round missing from either side gives no ratio.
func Ratios(num, den map[int]float64) []float64 {
	var out []float64
	rounds := make([]int, 0, len(num))
	for r := range num {
		rounds = append(rounds, r)
	}
	slices.Sort(rounds)
	for _, r := range rounds {
		d, ok := den[r]
		if !ok || d <= 0 || math.IsNaN(d) || math.IsNaN(num[r]) {
			continue
		}
		out = append(out, num[r]/d)
	}
	return out
}
