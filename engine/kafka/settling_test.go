package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/stoatflow/stoatctl/engine/kafka"
)

func TestWhileSettling(t *testing.T) {
	other := errors.New("unknown member")
	for _, tc := range []struct {
		name  string
		errs  []error // what op returns, call by call
		want  error
		calls int
	}{
		{name: "first try", errs: []error{nil}, calls: 1},
		{name: "coordinator settles", errs: []error{kerr.CoordinatorNotAvailable, fmt.Errorf("wrapped: %w", kerr.CoordinatorLoadInProgress), kerr.NotCoordinator, nil}, calls: 4},
		{name: "other error at once", errs: []error{other}, want: other, calls: 1},
		{name: "settling then other", errs: []error{kerr.CoordinatorNotAvailable, other}, want: other, calls: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			err := kafka.WhileSettling(context.Background(), func() error {
				calls++
				return tc.errs[calls-1]
			})
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) || calls != tc.calls {
				t.Fatalf("err = %v after %d calls, want %v after %d", err, calls, tc.want, tc.calls)
			}
		})
	}
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		err := kafka.WhileSettling(ctx, func() error { cancel(); return kerr.CoordinatorNotAvailable })
		if !errors.Is(err, context.Canceled) || !errors.Is(err, kerr.CoordinatorNotAvailable) {
			t.Fatalf("err = %v, want the last error and the cancellation", err)
		}
	})
}
