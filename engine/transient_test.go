package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTransient: which reset errors are retried. The wrapped forms are the
// ones the runtime meets: franz-go's dial errors, kerr codes inside
// fmt.Errorf chains.
func TestTransient(t *testing.T) {
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: &net.AddrError{Err: "connection refused", Addr: "127.0.0.1:9"}}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"connection refused", fmt.Errorf("restore watermark stamp: %w", syscall.ECONNREFUSED), true},
		{"connection reset", fmt.Errorf("fetch: %w", syscall.ECONNRESET), true},
		{"dial error", fmt.Errorf("unable to dial: %w", dial), true},
		{"not coordinator", fmt.Errorf("fetch offsets: %w", kerr.NotCoordinator), true},
		{"coordinator loading", fmt.Errorf("fetch offsets: %w", kerr.CoordinatorLoadInProgress), true},
		{"fenced", fmt.Errorf("init producer: %w", kerr.ProducerFenced), false},
		{"authorization", fmt.Errorf("fetch offsets: %w", kerr.GroupAuthorizationFailed), false},
		{"missing topic", &MissingTopicError{Topics: []string{"in"}}, false},
		{"split boundary", fmt.Errorf("engine: %w: two instances", ErrSplitBoundary), false},
		{"client closed", fmt.Errorf("poll: %w", kgo.ErrClientClosed), false},
		{"cancelled", fmt.Errorf("restore: %w", context.Canceled), false},
		{"restore error", errors.New("state store counts cannot be restored from its changelog"), false},
	} {
		if got := transient(tc.err); got != tc.want {
			t.Errorf("%s (%v): transient %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
