package replay

// op is one line of a diff: a record both sides share (' '), one only
// expected ('-') or one only written ('+'); i and j index the expected
// and actual lists.
type op struct {
	kind byte
	i, j int
}

// maxLCS bounds the table of the longest-common-subsequence diff; longer
// lists are compared position by position, which still shows every
// difference, only less cleverly aligned.
const maxLCS = 1 << 22

// diff aligns n expected with m actual records.
func diff(n, m int, eq func(i, j int) bool) []op {
	if n*m > maxLCS {
		return positional(n, m, eq)
	}
	// lcs[i][j] is the longest common subsequence of expected[i:] and
	// actual[j:].
	w := m + 1
	lcs := make([]int32, (n+1)*w)
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if eq(i, j) {
				lcs[i*w+j] = lcs[(i+1)*w+j+1] + 1
			} else {
				lcs[i*w+j] = max(lcs[(i+1)*w+j], lcs[i*w+j+1])
			}
		}
	}
	var ops []op
	i, j := 0, 0
	for i < n && j < m {
		switch {
		case eq(i, j):
			ops = append(ops, op{' ', i, j})
			i, j = i+1, j+1
		case lcs[(i+1)*w+j] >= lcs[i*w+j+1]:
			ops = append(ops, op{'-', i, j})
			i++
		default:
			ops = append(ops, op{'+', i, j})
			j++
		}
	}
	for ; i < n; i++ {
		ops = append(ops, op{'-', i, j})
	}
	for ; j < m; j++ {
		ops = append(ops, op{'+', i, j})
	}
	return ops
}

func positional(n, m int, eq func(i, j int) bool) []op {
	var ops []op
	for k := 0; k < max(n, m); k++ {
		switch {
		case k < n && k < m && eq(k, k):
			ops = append(ops, op{' ', k, k})
		default:
			if k < n {
				ops = append(ops, op{'-', k, min(k, m)})
			}
			if k < m {
				ops = append(ops, op{'+', min(k, n), k})
			}
		}
	}
	return ops
}
