package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/topology"
)

// threeMB makes the input value "big" a 3 MB output.
func threeMB() *topology.Topology {
	str := serde.String()
	b := dsl.NewBuilder()
	dsl.MapValues(dsl.Stream(b, dsl.ConsumedWith(str, str), "in"), func(_, v string) string {
		if v == "big" {
			return strings.Repeat("y", 3<<20)
		}
		return v
	}).To("out", dsl.ProducedWith(str, str))
	return b.Topology()
}

// TestLargeOutputRecord: a 3 MB output record reaches a sink topic whose
// max.message.bytes takes it once producer.max.request.size allows it, as a
// Kafka Streams team raises it; without, the record is over the producer's
// limit and default.production.exception.handler has it.
func TestLargeOutputRecord(t *testing.T) {
	in := []kv{{Key: "k", Value: "a0"}, {Key: "k", Value: "big"}, {Key: "k", Value: "a1"}}
	setup := func(t *testing.T) string {
		addr := startKafka(t, map[string]int32{"in": 1, "out": 1})
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		v := "8388608"
		rs, err := kadm.NewClient(cl).AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "max.message.bytes", Value: &v}}, "out")
		if err == nil {
			_, err = rs.On("out", nil)
		}
		if err != nil {
			t.Fatalf("alter max.message.bytes of out: %v", err)
		}
		produce(t, addr, "in", in)
		return addr
	}
	t.Run("max.request.size raised", func(t *testing.T) {
		addr := setup(t)
		_, stop := runEngine(t, threeMB(), cfg(addr, "large-output", "producer.max.request.size", "8388608", "producer.compression.type", "lz4"))
		got := readCommitted(t, addr, "out", len(in), 60*time.Second)
		if err := stop(); err != nil {
			t.Fatalf("engine: %v", err)
		}
		if len(got) != 3 || len(got[1].Value) != 3<<20 || got[0].Value != "a0" || got[2].Value != "a1" {
			t.Fatalf("got %d records (sizes %v)", len(got), sizes(got))
		}
	})
	t.Run("default max.request.size", func(t *testing.T) {
		addr := setup(t)
		e := engine.New(threeMB(), cfg(addr, "large-output-default"), engine.WithLogger(testLogger(t)))
		done := make(chan error, 1)
		go func() { done <- e.Run(t.Context()) }()
		select {
		case err := <-done:
			var tooLarge *engine.RecordTooLargeError
			if !errors.As(err, &tooLarge) || tooLarge.Limit != 1<<20 {
				t.Fatalf("Run returned %v, want a RecordTooLargeError at 1048576 bytes", err)
			}
		case <-time.After(60 * time.Second):
			t.Fatal("Run still running 60s after an oversized output")
		}
	})
}

func sizes(rs []kv) []int {
	var out []int
	for _, r := range rs {
		out = append(out, len(r.Value))
	}
	return out
}
