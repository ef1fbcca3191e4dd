package engine

import (
	"context"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// session owns the Kafka client of a runner and, under exactly-once, its
// group transact session. franz-go forbids polling while a transaction is
// begun or ended on a GroupTransactSession ("it is invalid to call
// PollFetches concurrently with Begin or End"); the dispatcher polls, the
// committer begins and ends, on goroutines of their own. Every one of
// those calls goes through session, under one mutex, so none can overlap
// by construction.
//
// Producing, flushing and committing offsets need no such guard and go to
// the client directly.
type session struct {
	cl  *kgo.Client
	txn *kgo.GroupTransactSession // nil under at_least_once

	mu sync.Mutex
	// guarded counts the guarded calls. It is a plain int on purpose,
	// touched only under mu: should a call ever bypass the mutex, the race
	// detector reports the unsynchronized write (TestSessionGuard).
	guarded int
}

// newSession makes a client, transactional when exactlyOnce is set.
func newSession(exactlyOnce bool, opts ...kgo.Opt) (*session, error) {
	if exactlyOnce {
		txn, err := kgo.NewGroupTransactSession(opts...)
		if err != nil {
			return nil, err
		}
		return &session{cl: txn.Client(), txn: txn}, nil
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	return &session{cl: cl}, nil
}

// client is the underlying client, for calls that need no guard.
func (s *session) client() *kgo.Client { return s.cl }

// transactional says the session runs transactions (exactly-once).
func (s *session) transactional() bool { return s.txn != nil }

// poll polls for fetches; it waits while a transaction begins or ends.
func (s *session) poll(ctx context.Context) kgo.Fetches {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.guarded++
	return s.cl.PollFetches(ctx)
}

// begin begins a transaction; it waits while a poll runs.
func (s *session) begin() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.guarded++
	return s.txn.Begin()
}

// end ends the open transaction, committing or aborting as try says, and
// reports whether it committed; it waits while a poll runs.
func (s *session) end(ctx context.Context, try kgo.TransactionEndTry) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.guarded++
	return s.txn.End(ctx, try)
}

// settle makes franz-go forget a revocation it holds against the next
// transaction, by ending the (absent) transaction. A GroupTransactSession
// notes a revocation in a flag that only End clears, and while it is set
// it aborts every commit and hides further revocations from the engine's
// callback altogether. A revocation while no transaction is open (an
// idle instance) would leave the flag set across the reset that the
// revocation causes: the next generation's first commit would abort for
// nothing, and a second revocation before it would go unseen. The runner
// settles once the old generation's transaction is ended, before it reads
// its assignment.
func (s *session) settle(ctx context.Context) error {
	if s.txn == nil {
		return nil
	}
	_, err := s.end(ctx, kgo.TryAbort)
	return err
}

// produce produces rec: within the open transaction under exactly-once.
func (s *session) produce(ctx context.Context, rec *kgo.Record, promise func(*kgo.Record, error)) {
	if s.txn != nil {
		s.txn.Produce(ctx, rec, promise)
		return
	}
	s.cl.Produce(ctx, rec, promise)
}

// close leaves the group and closes the client.
func (s *session) close() {
	if s.txn != nil {
		s.txn.Close()
		return
	}
	s.cl.Close()
}
