package prom

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestRequestName: the request label is kmsg's name in snake case,
// acronyms kept whole, for every request key the client knows.
func TestRequestName(t *testing.T) {
	for key, want := range map[int16]string{
		0: "produce", 1: "fetch", 17: "sasl_handshake", 23: "offset_for_leader_epoch", 26: "end_txn",
		28: "txn_offset_commit", 29: "describe_acls", 24: "add_partitions_to_txn",
	} {
		if got := requestName(key); got != want {
			t.Errorf("key %d (%s): %q, want %q", key, kmsg.NameForKey(key), got, want)
		}
	}
	for key := range int16(100) {
		if n := requestName(key); n == "" || n != toLowerSnake(n) {
			t.Errorf("key %d: %q is not lower snake case", key, n)
		}
	}
}

func toLowerSnake(s string) string {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return ""
		}
	}
	return s
}
