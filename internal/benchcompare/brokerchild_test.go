package benchcompare

import (
	"context"
	"net"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/internal/kafkatest"
)

func TestMain(m *testing.M) {
	ServeBrokerChild()
	os.Exit(m.Run())
}

// TestBrokerChild starts the test binary again as the embedded broker,
// writes a record to it and reads it back over TCP, and checks that stop
// ends the child: its port refuses connections afterwards.
func TestBrokerChild(t *testing.T) {
	kafkatest.EmbeddedOnly(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	addr, stop, err := startBrokerChild(ctx)
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
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatalf("%s still accepts connections after stop", addr)
	}
}
