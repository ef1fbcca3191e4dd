package kafka

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/stoatflow/stoatctl/internal/backoff"
)

// SettlingFor bounds how long WhileSettling retries: long enough for a new
// cluster to create its offsets topic and elect the coordinator.
const SettlingFor = 60 * time.Second

// WhileSettling runs op until it succeeds, fails with an error that is not
// a coordinator settling (COORDINATOR_NOT_AVAILABLE while a new cluster
// creates __consumer_offsets, COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR),
// or SettlingFor has passed. franz-go retries these itself, but only for a
// few seconds; Apache Kafka can take longer on its first group request.
func WhileSettling(ctx context.Context, op func() error) error {
	deadline := time.Now().Add(SettlingFor)
	for attempt := 1; ; attempt++ {
		err := op()
		if err == nil || !settling(err) || time.Now().After(deadline) {
			return err
		}
		if werr := settlingBackoff.Wait(ctx, attempt); werr != nil {
			return errors.Join(err, werr)
		}
	}
}

// settlingBackoff paces the retries of WhileSettling.
var settlingBackoff = backoff.Policy{First: 100 * time.Millisecond, Max: 2 * time.Second}

func settling(err error) bool {
	return errors.Is(err, kerr.CoordinatorNotAvailable) || errors.Is(err, kerr.CoordinatorLoadInProgress) || errors.Is(err, kerr.NotCoordinator)
}
