package replay

import (
	"slices"
	"strings"
)

// This file compares an output under its Order: in order, per key, or
// as a multiset.

// ordered reports whether act matches exp under o.
func ordered(o Order, exp []ExpectedRecord, act []Actual, windowedKey bool) bool {
	if len(exp) != len(act) {
		return false
	}
	switch o {
	case Multiset:
		return multisetMatch(exp, act, windowedKey)
	case PerKey:
		exp, act = byKey(exp, act, windowedKey)
	}
	for i := range exp {
		if !recordsEqual(exp[i], act[i], windowedKey) {
			return false
		}
	}
	return true
}

// byKey sorts both sides by key, stably, so that each key's records keep
// their order: comparing the results position by position compares every
// key's records in order and nothing across keys.
func byKey(exp []ExpectedRecord, act []Actual, windowedKey bool) ([]ExpectedRecord, []Actual) {
	return sortedBy(exp, func(e ExpectedRecord) sortKey { return sortKey{s: expectedKey(e, windowedKey)} }),
		sortedBy(act, func(a Actual) sortKey { return sortKey{s: canonical(a.Key)} })
}

// byContent sorts both sides by key and value, then timestamp, for
// showing a multiset's differences: records that match line up.
func byContent(exp []ExpectedRecord, act []Actual, windowedKey bool) ([]ExpectedRecord, []Actual) {
	return sortedBy(exp, func(e ExpectedRecord) sortKey {
			return sortKey{s: expectedKey(e, windowedKey) + " " + canonical(e.Value.any()), ts: e.Timestamp}
		}),
		sortedBy(act, func(a Actual) sortKey {
			return sortKey{s: canonical(a.Key) + " " + canonical(a.Value), ts: a.Timestamp}
		})
}

// sortKey is what sortedBy orders by: s, then ts.
type sortKey struct {
	s  string
	ts int64
}

// sortedBy is a stably sorted copy of xs, each element's key computed
// once: a canonical form costs a JSON encoding, and computing it in the
// comparison made a 100 k-record per-key output take seconds.
func sortedBy[T any](xs []T, key func(T) sortKey) []T {
	keys := make([]sortKey, len(xs))
	idx := make([]int, len(xs))
	for i, x := range xs {
		keys[i], idx[i] = key(x), i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		if c := strings.Compare(keys[a].s, keys[b].s); c != 0 {
			return c
		}
		return cmpInt(keys[a].ts, keys[b].ts)
	})
	out := make([]T, len(xs))
	for i, j := range idx {
		out[i] = xs[j]
	}
	return out
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// multisetMatch reports whether every expected record can be paired with
// a written record of its own that it equals. Key and value are always
// compared, so only records of one key and value can pair; within such a
// group, where a timestamp, headers or step left out make several
// pairings possible, a maximum bipartite matching (augmenting paths)
// decides, so the order of the expected list never matters.
func multisetMatch(exp []ExpectedRecord, act []Actual, windowedKey bool) bool {
	groups := map[string][]int{}
	for j, a := range act {
		k := canonical(a.Key) + " " + canonical(a.Value)
		groups[k] = append(groups[k], j)
	}
	byGroup := map[string][]int{}
	for i, e := range exp {
		k := expectedKey(e, windowedKey) + " " + canonical(e.Value.any())
		if len(byGroup[k]) == len(groups[k]) {
			return false
		}
		byGroup[k] = append(byGroup[k], i)
	}
	for k, is := range byGroup {
		js := groups[k]
		if len(js) != len(is) {
			return false
		}
		owner := make([]int, len(js)) // owner[b] is the expected index paired with js[b], or -1
		for b := range owner {
			owner[b] = -1
		}
		var try func(a int, seen []bool) bool
		try = func(a int, seen []bool) bool {
			for b, j := range js {
				if seen[b] || !recordsEqual(exp[is[a]], act[j], windowedKey) {
					continue
				}
				seen[b] = true
				if owner[b] < 0 || try(owner[b], seen) {
					owner[b] = a
					return true
				}
			}
			return false
		}
		// A greedy pass first pairs what pairs at once, so that a large
		// group of records alike costs one pass; augmenting paths settle
		// the rest.
		free := make([]int, len(js))
		for b := range free {
			free[b] = b
		}
		var left []int
		for a := range is {
			k := slices.IndexFunc(free, func(b int) bool { return recordsEqual(exp[is[a]], act[js[b]], windowedKey) })
			if k < 0 {
				left = append(left, a)
				continue
			}
			owner[free[k]] = a
			if k == 0 {
				free = free[1:]
			} else {
				free = slices.Delete(free, k, k+1)
			}
		}
		for _, a := range left {
			if !try(a, make([]bool, len(js))) {
				return false
			}
		}
	}
	return true
}
