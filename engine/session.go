package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/internal/kgotxn"
)

// session owns the Kafka client of a runner and, under exactly-once, its
// group transact session. franz-go forbids polling while a transaction is
// begun or ended on a GroupTransactSession ("it is invalid to call
// PollFetches concurrently with Begin or End"); the dispatcher polls, the
// committer begins and ends, on goroutines of their own. Every one of
// those calls goes through session, under one mutex, so none can overlap
// by construction. A poll waits for the mutex no longer than its
// context: a Begin or End that hangs (a broker that accepts connections
// and never answers) must not keep the dispatcher from seeing a stop.
//
// Producing, flushing and committing offsets need no such guard and go to
// the client directly.
type session struct {
	cl  *kgo.Client
	txn *kgo.GroupTransactSession // nil under at_least_once
	// cancel cancels the client's own context: what close does when
	// leaving the group takes longer than leaveWait.
	cancel context.CancelFunc

	// mu is a one-slot semaphore: full while a guarded call runs.
	mu chan struct{}
	// stored holds the topics the client is known to have stored for
	// producing (a map[string]bool never written once published), fresh
	// those written in the open transaction that are not among them yet,
	// under freshMu: end waits for fresh ones, see
	// kgotxn.AwaitProduceMetadata. A topic is fresh only once per run,
	// so the lookup is all a record pays.
	stored atomic.Pointer[map[string]bool]
	// lastStored is the last topic noteTopic found stored (stored only
	// grows): outputs come in runs to one topic, so most records need
	// no lookup. Only the committer produces, so only it reads and
	// writes this.
	lastStored string
	freshMu    sync.Mutex
	fresh      map[string]int32

	// guarded counts the guarded calls. It is a plain int on purpose,
	// touched only while holding mu: should a call ever bypass the mutex, the race
	// detector reports the unsynchronized write (TestSessionGuard).
	guarded int
}

// newSession makes a client, transactional when exactlyOnce is set.
func newSession(exactlyOnce bool, opts ...kgo.Opt) (*session, error) {
	ctx, cancel := context.WithCancel(context.Background())
	opts = append(opts, kgo.WithContext(ctx))
	if exactlyOnce {
		txn, err := kgo.NewGroupTransactSession(opts...)
		if err != nil {
			cancel()
			return nil, err
		}
		return &session{cl: txn.Client(), txn: txn, cancel: cancel, mu: make(chan struct{}, 1)}, nil
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		cancel()
		return nil, err
	}
	return &session{cl: cl, cancel: cancel, mu: make(chan struct{}, 1)}, nil
}

// client is the underlying client, for calls that need no guard.
func (s *session) client() *kgo.Client { return s.cl }

// transactional says the session runs transactions (exactly-once).
func (s *session) transactional() bool { return s.txn != nil }

func (s *session) lock()   { s.mu <- struct{}{} }
func (s *session) unlock() { <-s.mu }

// poll polls for fetches; it waits while a transaction begins or ends,
// and returns a fetch holding ctx's error if ctx ends first.
func (s *session) poll(ctx context.Context) kgo.Fetches {
	select {
	case s.mu <- struct{}{}:
	default:
		select {
		case s.mu <- struct{}{}:
		case <-ctx.Done():
			return kgo.NewErrFetch(ctx.Err())
		}
	}
	defer s.unlock()
	s.guarded++
	return s.cl.PollFetches(ctx)
}

// begin begins a transaction; it waits while a poll runs.
func (s *session) begin() error {
	s.lock()
	defer s.unlock()
	s.guarded++
	return s.txn.Begin()
}

// end ends the open transaction, committing or aborting as try says, and
// reports whether it committed; it waits while a poll runs.
func (s *session) end(ctx context.Context, try kgo.TransactionEndTry) (bool, error) {
	s.freshMu.Lock()
	fresh := s.fresh
	s.fresh = nil
	s.freshMu.Unlock()
	var awaitErr error
	if try == kgo.TryCommit {
		awaitErr = s.awaitStored(ctx, fresh)
	}
	s.lock()
	defer s.unlock()
	s.guarded++
	if awaitErr != nil {
		// Abort: committing could abort silently and report success.
		if _, err := s.txn.End(ctx, kgo.TryAbort); err != nil {
			return false, errors.Join(awaitErr, err)
		}
		return false, fmt.Errorf("%w: %w", errAbortedUnstored, awaitErr)
	}
	return s.txn.End(ctx, try)
}

// awaitStored waits for the client to store fresh, the topics first
// written in the transaction, and marks them as stored. The committer has
// flushed already; a record still waiting for its topic's metadata would
// only make the wait longer, not shorter than the store.
func (s *session) awaitStored(ctx context.Context, fresh map[string]int32) error {
	if len(fresh) == 0 {
		return nil
	}
	if err := kgotxn.AwaitProduceMetadata(ctx, s.cl, fresh); err != nil {
		return err
	}
	next := map[string]bool{}
	if m := s.stored.Load(); m != nil {
		maps.Copy(next, *m)
	}
	for t := range fresh {
		next[t] = true
	}
	s.stored.Store(&next)
	return nil
}

// errAbortedUnstored is an end that aborted instead of committing
// because the client did not store a written topic in time (see
// kgotxn.AwaitProduceMetadata): the abort went through, and the epoch
// can be replayed.
var errAbortedUnstored = errors.New("transaction aborted: a written topic's partitions were not stored by the client")

// noteTopic remembers a topic written in the open transaction that the
// client may not have stored yet.
func (s *session) noteTopic(rec *kgo.Record) {
	topic := rec.Topic
	if topic == "" { // the client fills in its default produce topic
		topic, _ = s.cl.OptValue(kgo.DefaultProduceTopic).(string)
	}
	if topic != "" && topic == s.lastStored {
		return
	}
	if m := s.stored.Load(); m != nil && (*m)[topic] {
		s.lastStored = topic
		return
	}
	s.freshMu.Lock()
	if s.fresh == nil {
		s.fresh = map[string]int32{}
	}
	// The client stores a topic's partitions all at once; the record's
	// own partition is the one known to have a leader (0 when the client
	// is still to choose it).
	s.fresh[topic] = max(rec.Partition, 0)
	s.freshMu.Unlock()
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
		s.noteTopic(rec)
		s.txn.Produce(ctx, rec, promise)
		return
	}
	s.cl.Produce(ctx, rec, promise)
}

// leaveWait bounds how long close waits for the group to acknowledge
// the leave. Leaving is a courtesy that saves the others a session
// timeout; a broker that accepts connections and never answers would
// otherwise hold close until franz-go's request timeout, past the
// shutdown deadline.
const leaveWait = 2 * time.Second

// close leaves the group and closes the client, cancelling the client's
// requests if the leave takes longer than leaveWait.
func (s *session) close() {
	done := make(chan struct{})
	go func() {
		defer close(done)
		if s.txn != nil {
			s.txn.Close()
			return
		}
		s.cl.Close()
	}()
	select {
	case <-done:
	case <-time.After(leaveWait):
		s.cancel()
		<-done
	}
	s.cancel()
}
