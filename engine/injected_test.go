package engine_test

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stoatflow/stoatctl/engine/broker"
	"github.com/stoatflow/stoatctl/internal/kafkatest"
)

// TestInjectedTransactionErrors fails, through the embedded broker's
// control hooks, every third of the requests (up to six; the seed picks each error) a transaction is made of
// (produce, committing offsets in the transaction, ending it; franz-go
// adds partitions and the offsets topic to a transaction implicitly,
// KIP-890, so AddPartitionsToTxn and AddOffsetsToTxn are never sent) with the errors a broker really answers: retriable ones
// (NOT_LEADER_OR_FOLLOWER, COORDINATOR_LOAD_IN_PROGRESS,
// CONCURRENT_TRANSACTIONS, REQUEST_TIMED_OUT) and the fencing ones
// (INVALID_PRODUCER_EPOCH, PRODUCER_FENCED) a broker answers once it has
// aborted a transaction itself. The engine must retry or recover each,
// and every count come out exactly once.
func TestInjectedTransactionErrors(t *testing.T) {
	kafkatest.Parallel(t)
	kafkatest.EmbeddedOnly(t)
	type fault struct {
		key   kmsg.Key
		codes []int16
	}
	faults := []fault{
		{kmsg.Produce, []int16{kerr.NotLeaderForPartition.Code, kerr.RequestTimedOut.Code, kerr.InvalidProducerEpoch.Code}},
		{kmsg.TxnOffsetCommit, []int16{kerr.CoordinatorLoadInProgress.Code, kerr.RequestTimedOut.Code}},
		{kmsg.EndTxn, []int16{kerr.ConcurrentTransactions.Code, kerr.ProducerFenced.Code}},
	}
	for _, f := range faults {
		t.Run(f.key.Name(), func(t *testing.T) {
			b, err := broker.Start(context.Background(), broker.Options{Port: broker.RandomPort, SeedTopics: map[string]int32{"in": 4, "out": 4}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close() })
			rng := rand.New(rand.NewPCG(crashSeed(t), uint64(f.key)))
			// The hook runs on the broker's one loop, so rng needs no lock.
			var seen, failed atomic.Int32
			var healthy atomic.Bool
			fences := 0
			b.Cluster().ControlKey(int16(f.key), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
				b.Cluster().KeepControl()
				if p, ok := kreq.(*kmsg.ProduceRequest); ok && p.TransactionID == nil {
					return nil, nil, false // the test's own input
				}
				// Every third request fails, up to six; the seed picks
				// the error.
				if n := seen.Add(1); healthy.Load() || n%3 != 2 || failed.Load() >= 6 {
					return nil, nil, false
				}
				code := f.codes[rng.IntN(len(f.codes))]
				if code == kerr.InvalidProducerEpoch.Code || code == kerr.ProducerFenced.Code {
					// Three fences within a minute mean another
					// instance holds the transactional id, and the
					// engine stops by design (TestFencedAgainAndAgainStops).
					if fences++; fences > 2 {
						return nil, nil, false
					}
				}
				failed.Add(1)
				return failedResponse(kreq, code), nil, true
			})
			const keys, per = 50, 30
			var in []kv
			for i := range keys * per {
				in = append(in, kv{Key: "k" + strconv.Itoa(i%keys), Value: "x"})
			}
			e, stop := runEngine(t, counts(), cfg(b.Addr(), "injected-"+f.key.Name()))
			// Chunk by chunk, each processed before the next, so that
			// there are epochs to fail.
			const chunks = 15
			for i := range chunks {
				chunk := in[i*len(in)/chunks : (i+1)*len(in)/chunks]
				at := e.Stats().Records + int64(len(chunk))
				produce(t, b.Addr(), "in", chunk)
				waitUntil(5*time.Second, func() bool { return e.Stats().Records >= at })
			}
			got := readCommitted(t, b.Addr(), "out", len(in), 2*time.Minute)
			// The stop is not under test: a final commit that fails is
			// reprocessed on the next start, and Run says so.
			healthy.Store(true)
			if err := stop(); err != nil {
				t.Fatalf("engine: %v", err)
			}
			checkCounts(t, got, keys, per)
			if failed.Load() == 0 {
				t.Fatalf("no %s failed (of %d seen): nothing was injected", f.key.Name(), seen.Load())
			}
			t.Logf("%d of %d %s requests failed", failed.Load(), seen.Load(), f.key.Name())
		})
	}
}

// failedResponse answers req with code for everything it asks: each
// partition of a produce or an offset commit, the whole of an EndTxn.
func failedResponse(kreq kmsg.Request, code int16) kmsg.Response {
	switch req := kreq.(type) {
	case *kmsg.ProduceRequest:
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewProduceResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewProduceResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	case *kmsg.TxnOffsetCommitRequest:
		resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewTxnOffsetCommitResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	case *kmsg.EndTxnRequest:
		resp := req.ResponseKind().(*kmsg.EndTxnResponse)
		resp.ErrorCode = code
		return resp
	}
	panic("no failed response for " + kmsg.NameForKey(kreq.Key()))
}
