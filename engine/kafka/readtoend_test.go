package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stoatflow/stoatctl/engine/kafka"
)

// writer produces to chosen partitions of a topic on a broker.
type writer struct {
	t     *testing.T
	cl    *kgo.Client
	topic string
}

// newWriter returns a writer; with a transactional id its records go in
// transactions, through transact.
func newWriter(t *testing.T, addr, topic, txnID string) *writer {
	t.Helper()
	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner())}
	if txnID != "" {
		opts = append(opts, kgo.TransactionalID(txnID))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &writer{t, cl, topic}
}

// produce writes values to partition p and waits for them.
func (w *writer) produce(p int32, values ...string) {
	w.t.Helper()
	rs := make([]*kgo.Record, len(values))
	for i, v := range values {
		rs[i] = &kgo.Record{Partition: p, Value: []byte(v)}
	}
	if err := w.cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
		w.t.Fatalf("produce to %s[%d]: %v", w.topic, p, err)
	}
}

// transact writes values to partition p in one transaction and commits or
// aborts it.
func (w *writer) transact(commit bool, p int32, values ...string) {
	w.t.Helper()
	w.begin()
	w.produce(p, values...)
	w.end(commit)
}

func (w *writer) begin() {
	w.t.Helper()
	if err := w.cl.BeginTransaction(); err != nil {
		w.t.Fatal(err)
	}
}

func (w *writer) end(commit bool) {
	w.t.Helper()
	if err := w.cl.EndTransaction(context.Background(), kgo.TransactionEndTry(commit)); err != nil {
		w.t.Fatal(err)
	}
}

// collect returns fn for ReadToEnd that records the values read, by
// partition, checking that offsets only grow.
func collect(t *testing.T) (map[int32][]string, func(*kgo.Record) error) {
	got := map[int32][]string{}
	last := map[int32]int64{}
	return got, func(r *kgo.Record) error {
		if l, ok := last[r.Partition]; ok && r.Offset <= l {
			t.Errorf("%s[%d]: offset %d after %d", r.Topic, r.Partition, r.Offset, l)
		}
		last[r.Partition] = r.Offset
		got[r.Partition] = append(got[r.Partition], string(r.Value))
		return nil
	}
}

func readCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestReadToEndTransactions reads a changelog whose partitions end in each
// way a transactional log can end.
func TestReadToEndTransactions(t *testing.T) {
	b := startBroker(t, map[string]int32{"log": 5})
	plain := newWriter(t, b.Addr(), "log", "")
	txn := newWriter(t, b.Addr(), "log", "txn")

	// 0: plain records, then a committed transaction: ends in a commit
	// marker (offset 4).
	plain.produce(0, "a", "b")
	txn.transact(true, 0, "c", "d")
	// 1: committed, then aborted: ends in an abort marker after records
	// that must not be read.
	txn.transact(true, 1, "e")
	txn.transact(false, 1, "x1", "x2")
	// 2: empty.
	// 3: aborted, committed, then a transaction left open: the end is
	// the open transaction's first offset, 4.
	txn.transact(false, 3, "x3")
	txn.transact(true, 3, "f")
	open := newWriter(t, b.Addr(), "log", "open")
	open.begin()
	open.produce(3, "pending")
	// 4: plain records only.
	plain.produce(4, "g", "h", "i")

	got, fn := collect(t)
	pos, err := kafka.ReadToEnd(readCtx(t), []string{b.Addr()}, "log", kafka.FromLogStart(0, 1, 2, 3, 4), fn)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32][]string{0: {"a", "b", "c", "d"}, 1: {"e"}, 3: {"f"}, 4: {"g", "h", "i"}}
	if !maps.EqualFunc(got, want, slices.Equal) {
		t.Errorf("read %q, want %q", got, want)
	}
	wantPos := kafka.Positions{0: 5, 1: 5, 2: 0, 3: 4, 4: 3}
	if !maps.Equal(pos, wantPos) {
		t.Errorf("positions %v, want %v", pos, wantPos)
	}

	// Once the open transaction commits, a read from where the last one
	// stopped finds its record.
	open.end(true)
	got, fn = collect(t)
	pos, err = kafka.ReadToEnd(readCtx(t), []string{b.Addr()}, "log", kafka.Positions{3: 4}, fn)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[int32][]string{3: {"pending"}}; !maps.EqualFunc(got, want, slices.Equal) {
		t.Errorf("read after commit %q, want %q", got, want)
	}
	if want := (kafka.Positions{3: 6}); !maps.Equal(pos, want) {
		t.Errorf("positions after commit %v, want %v", pos, want)
	}
}

// TestReadToEndSettled: a settled read ends at the high watermark, so it
// waits for the transactions open when it begins and reads what they
// commit, where ReadToEnd stops before them.
func TestReadToEndSettled(t *testing.T) {
	b := startBroker(t, map[string]int32{"log": 3})
	txn := newWriter(t, b.Addr(), "log", "txn")
	txn.transact(true, 0, "a")
	committing := newWriter(t, b.Addr(), "log", "committing")
	committing.begin()
	committing.produce(1, "b")
	aborting := newWriter(t, b.Addr(), "log", "aborting")
	aborting.begin()
	aborting.produce(2, "x")

	got, fn := collect(t)
	type result struct {
		pos kafka.Positions
		err error
	}
	done := make(chan result, 1)
	go func() {
		pos, err := kafka.ReadToEndSettled(readCtx(t), []string{b.Addr()}, "log", kafka.FromLogStart(0, 1, 2), fn)
		done <- result{pos, err}
	}()
	select {
	case r := <-done:
		t.Fatalf("the read returned %v, %v while two transactions were open", r.pos, r.err)
	case <-time.After(time.Second):
	}
	committing.end(true)
	aborting.end(false)
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if want := map[int32][]string{0: {"a"}, 1: {"b"}}; !maps.EqualFunc(got, want, slices.Equal) {
		t.Errorf("read %q, want %q", got, want)
	}
	// The ends are the high watermarks when the read began: the markers
	// written since are past them.
	if want := (kafka.Positions{0: 2, 1: 1, 2: 1}); !maps.Equal(r.pos, want) {
		t.Errorf("positions %v, want %v", r.pos, want)
	}
}

// TestReadToEndStartOffsets reads from given offsets, including one on a
// marker and one at the end.
func TestReadToEndStartOffsets(t *testing.T) {
	b := startBroker(t, map[string]int32{"log": 3})
	txn := newWriter(t, b.Addr(), "log", "txn")
	txn.transact(true, 0, "a", "b", "c") // offsets 0-2, marker 3
	txn.transact(true, 0, "d")           // 4, marker 5
	txn.transact(true, 1, "e")           // 0, marker 1
	txn.transact(true, 2, "f")           // 0, marker 1

	got, fn := collect(t)
	pos, err := kafka.ReadToEnd(readCtx(t), []string{b.Addr()}, "log", kafka.Positions{0: 2, 1: 1, 2: 2}, fn)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[int32][]string{0: {"c", "d"}}; !maps.EqualFunc(got, want, slices.Equal) {
		t.Errorf("read %q, want %q", got, want)
	}
	if want := (kafka.Positions{0: 6, 1: 2, 2: 2}); !maps.Equal(pos, want) {
		t.Errorf("positions %v, want %v", pos, want)
	}
}

// TestReadToEndStopsAtStartEnd produces, while the read goes on, records a
// read must not see: they come after the end it started with.
func TestReadToEndStopsAtStartEnd(t *testing.T) {
	b := startBroker(t, map[string]int32{"log": 2})
	plain := newWriter(t, b.Addr(), "log", "")
	txn := newWriter(t, b.Addr(), "log", "txn")
	plain.produce(0, "a", "b")
	txn.transact(true, 1, "c")

	var once atomic.Bool
	got, collectFn := collect(t)
	fn := func(r *kgo.Record) error {
		if once.CompareAndSwap(false, true) {
			plain.produce(0, "late-0")
			txn.transact(true, 1, "late-1")
		}
		return collectFn(r)
	}
	pos, err := kafka.ReadToEnd(readCtx(t), []string{b.Addr()}, "log", kafka.FromLogStart(0, 1), fn)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[int32][]string{0: {"a", "b"}, 1: {"c"}}; !maps.EqualFunc(got, want, slices.Equal) {
		t.Errorf("read %q, want %q", got, want)
	}
	if want := (kafka.Positions{0: 2, 1: 2}); !maps.Equal(pos, want) {
		t.Errorf("positions %v, want %v", pos, want)
	}
}

// TestReadToEndHoleAtEnd has the broker answer with no batches below a
// last stable offset past the end, as it does when compaction removed the
// last records: the read must end rather than wait for them.
func TestReadToEndHoleAtEnd(t *testing.T) {
	b := startBroker(t, map[string]int32{"log": 1})
	newWriter(t, b.Addr(), "log", "").produce(0, "a", "b", "c")

	b.Cluster().ControlKey(int16(kmsg.Fetch), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		b.Cluster().KeepControl()
		req := kreq.(*kmsg.FetchRequest)
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewFetchResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewFetchResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = 3, 3, 0
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	got, fn := collect(t)
	pos, err := kafka.ReadToEnd(readCtx(t), []string{b.Addr()}, "log", kafka.FromLogStart(0), fn)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 || !maps.Equal(pos, kafka.Positions{0: 3}) {
		t.Errorf("read %q to %v, want nothing to {0: 3}", got, pos)
	}
}

// TestReadToEndRetriesLeaderErrors fails the first fetches as a broker
// does while leadership moves; the read must go on.
func TestReadToEndRetriesLeaderErrors(t *testing.T) {
	b := startBroker(t, map[string]int32{"log": 1})
	newWriter(t, b.Addr(), "log", "").produce(0, "a", "b")

	var failed atomic.Int32
	b.Cluster().ControlKey(int16(kmsg.Fetch), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		if failed.Add(1) >= 3 {
			return nil, nil, false
		}
		b.Cluster().KeepControl()
		req := kreq.(*kmsg.FetchRequest)
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		st := kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = req.Topics[0].Topic, req.Topics[0].TopicID
		sp := kmsg.NewFetchResponseTopicPartition()
		sp.ErrorCode = kerr.NotLeaderForPartition.Code
		st.Partitions = append(st.Partitions, sp)
		resp.Topics = append(resp.Topics, st)
		return resp, nil, true
	})
	got, fn := collect(t)
	if _, err := kafka.ReadToEnd(readCtx(t), []string{b.Addr()}, "log", kafka.FromLogStart(0), fn); err != nil {
		t.Fatal(err)
	}
	if want := map[int32][]string{0: {"a", "b"}}; !maps.EqualFunc(got, want, slices.Equal) {
		t.Errorf("read %q, want %q", got, want)
	}
	if n := failed.Load(); n < 3 {
		t.Errorf("%d fetches, want the two failed ones and more", n)
	}
}

func TestReadToEndErrors(t *testing.T) {
	b := startBroker(t, map[string]int32{"log": 2})
	newWriter(t, b.Addr(), "log", "").produce(0, "a", "b", "c", "d")
	adm := kadm.NewClient(newWriter(t, b.Addr(), "log", "").cl)
	var del kadm.Offsets
	del.Add(kadm.Offset{Topic: "log", Partition: 0, At: 2})
	if _, err := adm.DeleteRecords(t.Context(), del); err != nil {
		t.Fatal(err)
	}

	errFn := errors.New("store full")
	tests := []struct {
		name  string
		topic string
		from  kafka.Positions
		fn    func(*kgo.Record) error
		is    error
		want  string
	}{
		{"missing topic", "nope", kafka.FromLogStart(0), nil, kafka.ErrUnknownTopic, "read nope to end: topic does not exist"},
		{"missing partition", "log", kafka.FromLogStart(0, 7), nil, kafka.ErrUnknownPartition, "read log[7] to end: the topic has 2 partitions"},
		{"start past end", "log", kafka.Positions{0: 5}, nil, kerr.OffsetOutOfRange, "read log[0] to end: start offset 5 is past the end, 4"},
		{"start before log start", "log", kafka.Positions{0: 1}, nil, kerr.OffsetOutOfRange, "read log[0] to end: fetch offset 1 is out of range, the log starting at 2"},
		{"bad start", "log", kafka.Positions{0: -1}, nil, nil, "read log[0] to end: start offset -1 is neither an offset nor LogStart"},
		{"fn fails", "log", kafka.Positions{0: 3}, func(*kgo.Record) error { return errFn }, errFn, "read log[0] to end: record at offset 3: store full"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fn := tc.fn
			if fn == nil {
				fn = func(r *kgo.Record) error { return fmt.Errorf("unexpected record at offset %d", r.Offset) }
			}
			_, err := kafka.ReadToEnd(readCtx(t), []string{b.Addr()}, tc.topic, tc.from, fn)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("err = %v, want it to wrap %v", err, tc.is)
			}
		})
	}
}

func TestReadToEndContext(t *testing.T) {
	b := startBroker(t, map[string]int32{"log": 1})
	newWriter(t, b.Addr(), "log", "").produce(0, "a", "b")

	t.Run("done before", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := kafka.ReadToEnd(ctx, []string{b.Addr()}, "log", kafka.FromLogStart(0), func(*kgo.Record) error { return nil })
		if err != context.Canceled {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	})
	t.Run("done while reading", func(t *testing.T) {
		// A broker that never answers: only ctx ends the read.
		b.Cluster().ControlKey(int16(kmsg.Fetch), func(kmsg.Request) (kmsg.Response, error, bool) {
			b.Cluster().KeepControl()
			return nil, nil, true
		})
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		defer cancel()
		_, err := kafka.ReadToEnd(ctx, []string{b.Addr()}, "log", kafka.FromLogStart(0), func(*kgo.Record) error { return nil })
		if err != context.DeadlineExceeded {
			t.Errorf("err = %v, want context.DeadlineExceeded", err)
		}
	})
	t.Run("nothing to read", func(t *testing.T) {
		pos, err := kafka.ReadToEnd(t.Context(), []string{"127.0.0.1:1"}, "log", nil, nil)
		if err != nil || len(pos) != 0 {
			t.Errorf("ReadToEnd(nothing) = %v, %v; want no positions and no error", pos, err)
		}
	})
}

// TestReadToEndSettledNamesWhatHoldsIt holds a settled read on an open
// transaction past the stall delay: the read must say, through the
// client's logger, which partition waits and which producer and
// transactional id hold it, then finish once the transaction ends.
func TestReadToEndSettledNamesWhatHoldsIt(t *testing.T) {
	defer kafka.SetStallAfter(300 * time.Millisecond)()
	b := startBroker(t, map[string]int32{"log": 2})
	hanging := newWriter(t, b.Addr(), "log", "hanging-txn")
	hanging.begin()
	hanging.produce(1, "x")

	var logged strings.Builder
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(&lockedWriter{mu: &mu, w: &logged}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	_, fn := collect(t)
	done := make(chan error, 1)
	go func() {
		_, err := kafka.ReadToEndSettled(readCtx(t), []string{b.Addr()}, "log", kafka.FromLogStart(0, 1), fn, kgo.WithLogger(kafka.Logger(logger)))
		done <- err
	}()
	text := func() string { mu.Lock(); defer mu.Unlock(); return logged.String() }
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(text(), "restoration waits for open transactions") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	got := text()
	for _, want := range []string{"restoration waits for open transactions", "topic=log", "1 at 0, stable to 0, end 1", "producer ", "hanging-txn"} {
		if !strings.Contains(got, want) {
			t.Errorf("the stall warning lacks %q:\n%s", want, got)
		}
	}
	hanging.end(false)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
