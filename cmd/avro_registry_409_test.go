package cmd

import (
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/hamba/avro/v2/registry"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine/broker"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/internal/schemaregistry"
)

// TestSinkMeetsAnIncompatibleSchema: the sink's subject already holds a
// schema ours cannot read (BACKWARD, the registry's default), so the
// registry answers the sink's registration 409. stoatctl run stops with
// an error naming the topic and the subject; nothing reached the output
// and the input's offset was not committed past the record. Once the
// subject's compatibility allows the schema, a second run writes the
// record exactly once: it was neither lost nor passed.
func TestSinkMeetsAnIncompatibleSchema(t *testing.T) {
	b, err := broker.Start(t.Context(), broker.Options{Port: broker.RandomPort, SeedTopics: map[string]int32{"orders": 1, "big-orders": 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	reg := schemaregistry.New(schemaregistry.WithBasicAuth("u", "p"))
	srv := httptest.NewServer(reg)
	defer srv.Close()
	// An earlier Order without item: ours adds item with no default, which
	// cannot read what this one wrote.
	if _, err := reg.Register("big-orders-value", `{"type": "record", "name": "Order", "namespace": "shop", "fields": [{"name": "id", "type": "long"}]}`); err != nil {
		t.Fatal(err)
	}
	topo, _ := avroRegistryTopology(t, srv.URL)
	client, err := registry.NewClient(srv.URL, registry.WithBasicAuth("u", "p"))
	if err != nil {
		t.Fatal(err)
	}
	value, err := serde.AvroRegistry(client, serde.RegistryOptions{Schema: avro.MustParse(orderSchema), AutoRegister: true, URL: srv.URL}).
		Serialize("orders", map[string]any{"id": int64(9), "item": "nib"})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(t.Context(), &kgo.Record{Topic: "orders", Key: []byte("k"), Value: value}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	stateDir := t.TempDir()
	start := func(ctx context.Context) (*syncBuffer, chan int) {
		stderr := &syncBuffer{}
		done := make(chan int, 1)
		go func() {
			done <- RunContext(ctx, []string{"run", "-t", topo, "-b", b.Addr(), "--state-dir", stateDir, "--http", "off",
				"-X", "stoatflow.commit-barrier.interval-ms=100"}, &syncBuffer{}, stderr)
		}()
		return stderr, done
	}
	exited := func(done chan int, stderr *syncBuffer) int {
		t.Helper()
		select {
		case code := <-done:
			return code
		case <-time.After(90 * time.Second):
			t.Fatalf("stoatctl run still running after 90 s; stderr:\n%s", stderr)
		}
		return 0
	}

	stderr, done := start(t.Context())
	if code := exited(done, stderr); code != ExitFailure {
		t.Fatalf("exit %d, want 1; stderr:\n%s", code, stderr)
	}
	last := lastLine(stderr.String())
	t.Logf("the refusal: %s", last)
	for _, want := range []string{"topic big-orders", "subject big-orders-value", "incompatible", "409", srv.URL} {
		if !strings.Contains(last, want) {
			t.Errorf("the error does not name %q:\n%s", want, last)
		}
	}
	if got := committedRecords(t, cl, "big-orders"); len(got) != 0 {
		t.Fatalf("big-orders holds %d committed records after the refusal", len(got))
	}
	adm := kadm.NewClient(cl)
	offsets, err := adm.FetchOffsets(t.Context(), "avro-orders")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := offsets.Lookup("orders", 0); ok && o.At > 0 {
		t.Fatalf("the group committed orders/0 at %d, past the record the sink could not write", o.At)
	}

	// The subject takes the schema now: the record is written, once.
	req, err := http.NewRequest(http.MethodPut, srv.URL+"/config/big-orders-value", strings.NewReader(`{"compatibility": "NONE"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth("u", "p")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	stderr, done = start(ctx)
	consumer, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumeTopics("big-orders"), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	pctx, pcancel := context.WithTimeout(ctx, 60*time.Second)
	defer pcancel()
	for got := 0; got == 0; {
		fs := consumer.PollFetches(pctx)
		if pctx.Err() != nil {
			t.Fatalf("no record on big-orders within 60 s; stderr:\n%s", stderr)
		}
		got = fs.NumRecords()
	}
	cancel()
	if code := exited(done, stderr); code != ExitOK {
		t.Fatalf("second run exited %d; stderr:\n%s", code, stderr)
	}
	out := committedRecords(t, cl, "big-orders")
	if len(out) != 1 {
		t.Fatalf("big-orders holds %d records, want the one order exactly once", len(out))
	}
	v, err := serde.AvroRegistry(client, serde.RegistryOptions{URL: srv.URL}).Deserialize("big-orders", out[0].Value)
	if err != nil || !reflect.DeepEqual(v, map[string]any{"id": int64(9), "item": "nib"}) {
		t.Fatalf("big-orders got %#v (%v)", v, err)
	}
}

// committedRecords reads partition 0 of topic from its start to its last
// stable offset, as a read_committed consumer sees it, and returns the
// data records. Control records are kept so that the read knows it reached
// the end: the last offset below the stable offset is a transaction's
// marker, or a record, and either is returned.
func committedRecords(t *testing.T, cl *kgo.Client, topic string) []*kgo.Record {
	t.Helper()
	ends, err := kadm.NewClient(cl).ListCommittedOffsets(t.Context(), topic)
	if err != nil {
		t.Fatal(err)
	}
	end, ok := ends.Lookup(topic, 0)
	if !ok || end.Err != nil {
		t.Fatalf("stable offset of %s/0: %v", topic, end.Err)
	}
	if end.Offset == 0 {
		return nil
	}
	rd, err := kgo.NewClient(kgo.SeedBrokers(cl.OptValue(kgo.SeedBrokers).([]string)...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var data []*kgo.Record
	for last := int64(-1); last < end.Offset-1; {
		fs := rd.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%s/0: read to %d of %d within 30 s", topic, last, end.Offset)
		}
		fs.EachRecord(func(r *kgo.Record) {
			last = r.Offset
			if !r.Attrs.IsControl() {
				data = append(data, r)
			}
		})
	}
	return data
}
