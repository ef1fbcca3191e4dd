package keyorder

// Less is a < b in unsigned byte order. It compares 8 bytes at a time
// first: store keys share long prefixes (a store's name, an index byte, a
// record key, a timestamp), which word compares skip faster than the
// runtime's string compare, a call away.
func Less(a, b string) bool {
	for len(a) >= 8 && len(b) >= 8 {
		if x, y := word(a), word(b); x != y {
			return x < y
		}
		a, b = a[8:], b[8:]
	}
	return a < b
}

// word reads the first 8 bytes of s big-endian (one load and a byte swap).
func word(s string) uint64 {
	_ = s[7]
	return uint64(s[7]) | uint64(s[6])<<8 | uint64(s[5])<<16 | uint64(s[4])<<24 |
		uint64(s[3])<<32 | uint64(s[2])<<40 | uint64(s[1])<<48 | uint64(s[0])<<56
}
