package engine

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine/broker"
)

// TestSessionGuard polls on one goroutine while another begins, produces
// in and ends transactions, as the dispatcher and the committer do. The
// session serialises poll, begin and end; its call counter is written
// without atomics under that one mutex, so were any of the three to skip
// the mutex, `go test -race` would report the counter's unsynchronized
// writes here and fail the test.
func TestSessionGuard(t *testing.T) {
	b, err := broker.Start(context.Background(), broker.Options{Port: broker.RandomPort, SeedTopics: map[string]int32{"in": 1, "out": 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	s, err := newSession(true, kgo.SeedBrokers(b.Addr()), kgo.TransactionalID("guard"), kgo.ConsumerGroup("guard"),
		kgo.ConsumeTopics("in"), kgo.FetchMaxWait(10*time.Millisecond), kgo.DefaultProduceTopic("out"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()

	const polls, txns = 200, 20
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for range polls {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
			s.poll(ctx)
			cancel()
		}
	}()
	errs := make(chan error, txns)
	go func() {
		defer wg.Done()
		for i := range txns {
			if err := s.begin(); err != nil {
				errs <- err
				return
			}
			s.produce(context.Background(), &kgo.Record{Value: []byte{byte(i)}}, func(_ *kgo.Record, err error) {
				if err != nil {
					errs <- err
				}
			})
			try := kgo.TryAbort
			if i%2 == 0 {
				try = kgo.TryCommit
			}
			if err := s.cl.Flush(context.Background()); err != nil {
				errs <- err
				return
			}
			if _, err := s.end(context.Background(), try); err != nil {
				errs <- err
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	s.lock()
	defer s.unlock()
	// Every begin and end counts; a poll counts when it got the session
	// within its 5 ms (one that waited out its context behind an End
	// never touched the client).
	if s.guarded <= 2*txns || s.guarded > polls+2*txns {
		t.Fatalf("%d guarded calls, want %d begins and ends and up to %d polls", s.guarded, 2*txns, polls)
	}
}
