package keyorder

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestLess: Less is bytes.Compare's order on keys of bytes either side of
// the sign bit, of every length around a word, and with long shared
// prefixes.
func TestLess(t *testing.T) {
	const seed = 1
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	alphabet := []byte{0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff}
	key := func() string {
		k := make([]byte, rng.IntN(20))
		for i := range k {
			k[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(k)
	}
	for range 100_000 {
		a, c := key(), key()
		if rng.IntN(4) == 0 { // a long shared prefix
			c = a[:rng.IntN(len(a)+1)] + c
		}
		if got, want := Less(a, c), bytes.Compare([]byte(a), []byte(c)) < 0; got != want {
			t.Fatalf("Less(%x, %x) = %v, want %v", a, c, got, want)
		}
	}
}
