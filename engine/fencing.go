package engine

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// A fence now and then is a broker aborting the transaction itself; more
// than maxFenced within fencedWindow, with the brokers answering all along,
// is another instance with the same transactional id.
const (
	maxFenced    = 3
	fencedWindow = time.Minute
)

// fenceRule tells a fencing that means "another producer has this
// transactional id" from one that follows the brokers' own trouble. A
// broker or transaction coordinator that restarts or moves aborts the
// open transaction and bumps the producer epoch: the next request of ours
// is fenced, exactly as a twin would fence us. What differs is the
// connection: a restart breaks it (a read or write fails, a dial is
// refused), a twin does not. So a fencing counts towards the twin rule
// only when no broker connection failed within fencedWindow before it.
//
// The session client's hooks (brokerTroubleHook) note the failures, from
// franz-go's goroutines; the runner's loop judges the fencings.
type fenceRule struct {
	// trouble is when a broker connection last failed, in Unix
	// nanoseconds (0: never).
	trouble atomic.Int64
	// fenced are the fencings that counted, within fencedWindow.
	fenced []time.Time
}

// noteTrouble records a broker connection failure at now.
func (f *fenceRule) noteTrouble(now time.Time) { f.trouble.Store(now.UnixNano()) }

// judge records a fencing at now. afterTrouble says it followed a broker
// connection failure and was not counted; twin says that, counted, it
// makes maxFenced within fencedWindow: another producer.
func (f *fenceRule) judge(now time.Time) (twin, afterTrouble bool, times int) {
	f.fenced = slices.DeleteFunc(f.fenced, func(t time.Time) bool { return now.Sub(t) > fencedWindow })
	if at := f.trouble.Load(); at != 0 && now.Sub(time.Unix(0, at)) <= fencedWindow {
		return false, true, len(f.fenced)
	}
	f.fenced = append(f.fenced, now)
	return len(f.fenced) >= maxFenced, false, len(f.fenced)
}

// brokerTroubleHook tells a fenceRule of every failed dial, read or write
// of the client it hooks. Failures of the client's own making (its close,
// a request's context ending) are not trouble.
type brokerTroubleHook struct{ rule *fenceRule }

var (
	_ kgo.HookBrokerConnect = brokerTroubleHook{}
	_ kgo.HookBrokerRead    = brokerTroubleHook{}
	_ kgo.HookBrokerWrite   = brokerTroubleHook{}
)

func (h brokerTroubleHook) note(err error) {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, kgo.ErrClientClosed) || errors.Is(err, net.ErrClosed) {
		return
	}
	h.rule.noteTrouble(time.Now())
}

func (h brokerTroubleHook) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	h.note(err)
}

func (h brokerTroubleHook) OnBrokerRead(_ kgo.BrokerMetadata, _ int16, _ int, _, _ time.Duration, err error) {
	h.note(err)
}

func (h brokerTroubleHook) OnBrokerWrite(_ kgo.BrokerMetadata, _ int16, _ int, _, _ time.Duration, err error) {
	h.note(err)
}
