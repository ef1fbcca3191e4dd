package cmd

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/hamba/avro/v2/registry"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/internal/kafkatest"
	"github.com/stoatflow/stoatctl/internal/schemaregistry"
)

const orderSchema = `{"type": "record", "name": "Order", "namespace": "shop",
 "fields": [{"name": "id", "type": "long"}, {"name": "item", "type": "string"}]}`

// avroRegistryTopology writes a topology file that reads Avro orders
// through the schema registry at url (basic auth u:p) and writes those
// with an id above 5 to big-orders, registering its schema there, and a
// fixture for it. It returns the topology's and the fixture's paths.
func avroRegistryTopology(t *testing.T, url string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"order.avsc": orderSchema,
		"topology.yaml": `application-id: avro-orders
config:
  schema.registry.url: ` + url + `
  basic.auth.credentials.source: USER_INFO
  basic.auth.user.info: u:p
sources:
  orders:
    topic: orders
    key-serde: string
    value-serde: {type: avro, schema: order.avsc}
pipelines:
  big:
    from: orders
    steps:
      - filter: value.id > 5
      - to: {topic: big-orders, key-serde: string, value-serde: {type: avro, schema: order.avsc}}
`,
		"big.fixture.yaml": `topology: ./topology.yaml
steps:
  - {topic: orders, key: a, value: {id: 3, item: pen}, timestamp: 2024-05-01T10:00:01Z}
  - {topic: orders, key: b, value: {id: 7, item: ink}, timestamp: 2024-05-01T10:00:02Z}
expect:
  outputs:
    big-orders:
      - {key: b, value: {id: 7, item: ink}, timestamp: 2024-05-01T10:00:02Z}
`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "topology.yaml"), filepath.Join(dir, "big.fixture.yaml")
}

// TestAvroThroughTheRegistry is issue 16's acceptance for Avro with a
// schema registry: a topology file reading and writing Avro through the
// registry passes replay, and runs under stoatctl run on the embedded
// broker, where a record naming a schema id the registry does not have is
// a deserialization error naming its topic, partition, offset and the id.
func TestAvroThroughTheRegistry(t *testing.T) {
	kafkatest.EmbeddedOnly(t)
	reg := schemaregistry.New(schemaregistry.WithBasicAuth("u", "p"))
	srv := httptest.NewServer(reg)
	defer srv.Close()
	topo, fixture := avroRegistryTopology(t, srv.URL)

	var out, errOut bytes.Buffer
	if code := Run([]string{"replay", fixture}, &out, &errOut); code != ExitOK {
		t.Fatalf("replay exited %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	client, err := registry.NewClient(srv.URL, registry.WithBasicAuth("u", "p"))
	if err != nil {
		t.Fatal(err)
	}
	subjects, err := client.GetSubjects(context.Background())
	if err != nil || !reflect.DeepEqual(subjects, []string{"big-orders-value", "orders-value"}) {
		t.Fatalf("subjects after replay: %v, %v; want the source's and the sink's, registered", subjects, err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- RunContext(ctx, []string{"run", "-t", topo, "--broker-port", "0", "--partitions", "1", "--http", "off",
			"-X", "stoatflow.commit-barrier.interval-ms=100"}, stdout, stderr)
	}()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for end := time.Now().Add(30 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
			select {
			case code := <-done:
				t.Fatalf("stoatctl run exited %d while waiting for %s; stderr:\n%s", code, what, stderr)
			default:
			}
			if time.Now().After(end) {
				t.Fatalf("no %s within 30 s; stderr:\n%s", what, stderr)
			}
		}
	}
	waitFor("broker address", func() bool { return strings.HasSuffix(stdout.String(), "\n") })
	addr := strings.TrimSpace(stdout.String())
	orders := serde.AvroRegistry(client, serde.RegistryOptions{Schema: avro.MustParse(orderSchema), AutoRegister: true, URL: srv.URL})
	good, err := orders.Serialize("orders", map[string]any{"id": int64(9), "item": "nib"})
	if err != nil {
		t.Fatal(err)
	}
	unknown := append([]byte{0, 0, 0x06, 0x79, 0x32}, good[5:]...) // schema id 424242
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("big-orders"), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Key: []byte("c"), Value: good}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var got *kgo.Record
	waitFor("record on big-orders", func() bool {
		pctx, pcancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer pcancel()
		cl.PollFetches(pctx).EachRecord(func(r *kgo.Record) { got = r })
		return got != nil
	})
	v, err := serde.AvroRegistry(client, serde.RegistryOptions{URL: srv.URL}).Deserialize("big-orders", got.Value)
	if err != nil || !reflect.DeepEqual(v, map[string]any{"id": int64(9), "item": "nib"}) {
		t.Fatalf("big-orders got %#v (%v)", v, err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Key: []byte("d"), Value: unknown}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	waitFor("the engine's failure", func() bool { return strings.Contains(stderr.String(), "stop the broker with Ctrl-C") })
	cancel()
	if code := <-done; code != ExitFailure {
		t.Fatalf("exit %d, want 1", code)
	}
	for _, want := range []string{"topic orders partition 0 offset 1", "unknown schema id 424242", srv.URL, "default.deserialization.exception.handler"} {
		if !strings.Contains(lastLine(stderr.String()), want) {
			t.Errorf("the error does not name %q:\n%s", want, lastLine(stderr.String()))
		}
	}
}
