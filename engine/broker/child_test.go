package broker_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine/broker"
	"github.com/stoatflow/stoatctl/internal/kafkatest"
)

// TestStartChild starts the test binary again as the embedded broker
// (TestMain serves it), writes a record to it and reads it back over TCP,
// and checks that stop ends the child: its port refuses connections
// afterwards, and a second stop is harmless.
func TestStartChild(t *testing.T) {
	kafkatest.EmbeddedOnly(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	addr, stop, err := broker.StartChild(ctx, exec.Command(os.Args[0], "-test.run=^$"))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("t"), kgo.DefaultProduceTopic("t"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, -1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte("k"), Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	fs := cl.PollFetches(ctx)
	if err := fs.Err(); err != nil {
		t.Fatal(err)
	}
	if recs := fs.Records(); len(recs) != 1 || string(recs[0].Value) != "v" {
		t.Fatalf("read %d records, want the one written", len(recs))
	}
	cl.Close()
	stop()
	stop()
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatalf("%s still accepts connections after stop", addr)
	}
}

// TestStartChildThatPrintsNothing: a child that exits without an address
// is an error naming it, not a hang or an empty address.
func TestStartChildThatPrintsNothing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	addr, _, err := broker.StartChild(ctx, exec.Command("true"))
	if err == nil || !strings.Contains(err.Error(), "printed no address") {
		t.Fatalf("StartChild(true) = %q, %v; want the error that no address was printed", addr, err)
	}
}
