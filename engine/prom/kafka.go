package prom

import (
	"context"
	"errors"
	"net"
	"strings"
	"unicode"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// clientMeters are the Kafka client's families, fed by franz-go's hooks
// (ClientHooks) rather than polled: the client keeps no metrics of its own
// to read, as Java's does.
type clientMeters struct {
	requests      *prometheus.HistogramVec
	requestErrors *prometheus.CounterVec
	recordErrors  *prometheus.CounterVec
	produceBytes  *prometheus.CounterVec
	fetchBytes    *prometheus.CounterVec
}

func newClientMeters(help map[string]string) *clientMeters {
	return &clientMeters{
		requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: KafkaRequestDuration, Help: help[KafkaRequestDuration],
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}}, []string{"request"}),
		requestErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: KafkaRequestErrors, Help: help[KafkaRequestErrors]}, []string{"request"}),
		recordErrors:  prometheus.NewCounterVec(prometheus.CounterOpts{Name: KafkaRecordErrors, Help: help[KafkaRecordErrors]}, []string{"topic"}),
		produceBytes:  prometheus.NewCounterVec(prometheus.CounterOpts{Name: KafkaProduceBytes, Help: help[KafkaProduceBytes]}, []string{"topic"}),
		fetchBytes:    prometheus.NewCounterVec(prometheus.CounterOpts{Name: KafkaFetchBytes, Help: help[KafkaFetchBytes]}, []string{"topic"}),
	}
}

func (c *clientMeters) collectors() []prometheus.Collector {
	return []prometheus.Collector{c.requests, c.requestErrors, c.recordErrors, c.produceBytes, c.fetchBytes}
}

// ClientHooks are the hooks that feed the Kafka client's families: give
// them to the engine's main client (kgo.WithHooks), the one that
// consumes the sources and produces the sinks and changelogs.
func (m *Meters) ClientHooks() kgo.Hook { return clientHooks{m.client} }

// clientHooks is ClientHooks. Every hook but the per-record one runs once
// per request or batch; the per-record one (a produced record's outcome)
// costs a call and a nil check unless the record failed.
type clientHooks struct{ c *clientMeters }

var (
	_ kgo.HookBrokerE2E               = clientHooks{}
	_ kgo.HookProduceBatchWritten     = clientHooks{}
	_ kgo.HookFetchBatchRead          = clientHooks{}
	_ kgo.HookProduceRecordUnbuffered = clientHooks{}
)

// OnBrokerE2E times a request from its write to the end of its response:
// Kafka's request latency (for a fetch, the broker's wait for data
// included, as in Kafka's fetch-latency).
func (h clientHooks) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	name := requestName(key)
	if err := e2e.Err(); err != nil {
		if !ownDoing(err) {
			h.c.requestErrors.WithLabelValues(name).Inc()
		}
		return
	}
	h.c.requests.WithLabelValues(name).Observe(e2e.DurationE2E().Seconds())
}

// ownDoing says a request failed by the client's own doing, not the
// connection's: the client closed, or the request's context ended (a
// fetch cancelled by a rebalance or a pause). Those are no errors to
// count (engine/fencing.go's brokerTroubleHook judges them the same).
func ownDoing(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, kgo.ErrClientClosed) || errors.Is(err, net.ErrClosed)
}

func (h clientHooks) OnProduceBatchWritten(_ kgo.BrokerMetadata, topic string, _ int32, m kgo.ProduceBatchMetrics) {
	h.c.produceBytes.WithLabelValues(topic).Add(float64(m.CompressedBytes))
}

func (h clientHooks) OnFetchBatchRead(_ kgo.BrokerMetadata, topic string, _ int32, m kgo.FetchBatchMetrics) {
	h.c.fetchBytes.WithLabelValues(topic).Add(float64(m.CompressedBytes))
}

// OnProduceRecordUnbuffered counts the records whose produce failed:
// refused by the broker or timed out. The records of a transaction the
// engine aborts itself (a rebalance, a reset: kgo.ErrAborting), or that
// a closing client drops, are not failures; the epoch is replayed.
func (h clientHooks) OnProduceRecordUnbuffered(r *kgo.Record, err error) {
	if err != nil && !errors.Is(err, kgo.ErrAborting) && !ownDoing(err) {
		h.c.recordErrors.WithLabelValues(r.Topic).Inc()
	}
}

// requestName is a request key's name in snake case, "Produce" as
// produce, "EndTxn" as end_txn, "SASLHandshake" as sasl_handshake,
// "DescribeACLs" as describe_acls: a label value in Prometheus' style.
func requestName(key int16) string {
	name := []rune(kmsg.NameForKey(key))
	upper := func(i int) bool { return i >= 0 && i < len(name) && unicode.IsUpper(name[i]) }
	lower := func(i int) bool { return i >= 0 && i < len(name) && unicode.IsLower(name[i]) }
	var b strings.Builder
	for i, r := range name {
		if unicode.IsUpper(r) {
			// A word starts at a capital after a lower-case letter, or at
			// the last capital of an acronym that a word follows (not a
			// plural s: ACLs).
			plural := name[min(i+1, len(name)-1)] == 's' && !lower(i+2)
			if lower(i-1) || upper(i-1) && lower(i+1) && !plural {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}
