package schemaregistry_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/hamba/avro/v2"
	"github.com/hamba/avro/v2/registry"

	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/internal/schemaregistry"
)

const order = `{"type": "record", "name": "Order", "namespace": "shop",
 "fields": [{"name": "id", "type": "long"}, {"name": "item", "type": "string"}]}`

// TestHambaClient drives the server with hamba's registry client, which
// stoatctl's serdes use.
func TestHambaClient(t *testing.T) {
	srv := httptest.NewServer(schemaregistry.New(schemaregistry.WithBasicAuth("u", "p")))
	defer srv.Close()
	ctx := context.Background()
	c, err := registry.NewClient(srv.URL, registry.WithBasicAuth("u", "p"))
	if err != nil {
		t.Fatal(err)
	}
	id, _, err := c.CreateSchema(ctx, "orders-value", order)
	if err != nil {
		t.Fatal(err)
	}
	// The same schema, spelt differently, under another subject: one id.
	id2, _, err := c.CreateSchema(ctx, "other-value", strings.ReplaceAll(order, " ", ""))
	if err != nil || id2 != id {
		t.Fatalf("same schema under another subject: id %d, %v; want %d", id2, err, id)
	}
	if got, _, err := c.IsRegistered(ctx, "orders-value", order); err != nil || got != id {
		t.Fatalf("IsRegistered: %d, %v", got, err)
	}
	s, err := c.GetSchema(ctx, id)
	if err != nil || s.(*avro.RecordSchema).FullName() != "shop.Order" {
		t.Fatalf("GetSchema: %v, %v", s, err)
	}
	info, err := c.GetLatestSchemaInfo(ctx, "orders-value")
	if err != nil || info.ID != id || info.Version != 1 {
		t.Fatalf("GetLatestSchemaInfo: %+v, %v", info, err)
	}
	subjects, err := c.GetSubjects(ctx)
	if err != nil || !reflect.DeepEqual(subjects, []string{"orders-value", "other-value"}) {
		t.Fatalf("GetSubjects: %v, %v", subjects, err)
	}
	var re registry.Error
	if _, err := c.GetSchema(ctx, 99); !errors.As(err, &re) || re.Code != schemaregistry.CodeSchemaNotFound || re.StatusCode != 404 {
		t.Fatalf("unknown id: %v", err)
	}
	if _, _, err := c.IsRegistered(ctx, "nope-value", order); !errors.As(err, &re) || re.Code != schemaregistry.CodeSubjectNotFound {
		t.Fatalf("unknown subject: %v", err)
	}
	if _, _, err := c.CreateSchema(ctx, "bad-value", `{"type": "nope"}`); !errors.As(err, &re) || re.Code != schemaregistry.CodeInvalidSchema {
		t.Fatalf("invalid schema: %v", err)
	}
	noAuth, _ := registry.NewClient(srv.URL)
	if _, err := noAuth.GetSubjects(ctx); !errors.As(err, &re) || re.StatusCode != 401 {
		t.Fatalf("without credentials: %v", err)
	}
}

// confluentPython is a python3 that has python3-confluent-kafka's Avro
// support (it needs fastavro): $STOATCTL_PYTHON, which scripts/test.sh
// sets up, else /usr/bin/python3 or python3 on PATH. Under CI its absence
// fails the test.
func confluentPython(t *testing.T) string {
	t.Helper()
	candidates := []string{os.Getenv("STOATCTL_PYTHON"), "/usr/bin/python3", "python3"}
	for _, c := range candidates {
		if c == "" {
			continue
		}
		if err := exec.Command(c, "-c", "import confluent_kafka.schema_registry.avro").Run(); err == nil {
			return c
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no python3 with confluent_kafka's Avro support; scripts/test.sh sets $STOATCTL_PYTHON up (Debian's python3-confluent-kafka and fastavro)")
	}
	t.Skip("no python3 with confluent_kafka's Avro support (scripts/test.sh sets $STOATCTL_PYTHON up)")
	return ""
}

// TestConfluentPythonClient holds the server to an independent client,
// Confluent's Python one: every call it makes is answered as it expects,
// records its AvroSerializer writes are read by stoatctl's registry serde,
// and what that serde writes its AvroDeserializer reads.
func TestConfluentPythonClient(t *testing.T) {
	py := confluentPython(t)
	srv := httptest.NewServer(schemaregistry.New(schemaregistry.WithBasicAuth("u", "p")))
	defer srv.Close()
	client, err := registry.NewClient(srv.URL, registry.WithBasicAuth("u", "p"))
	if err != nil {
		t.Fatal(err)
	}
	schema := avro.MustParse(order)
	ours := serde.AvroRegistry(client, serde.RegistryOptions{Schema: schema, AutoRegister: true, URL: srv.URL})
	b, err := ours.Serialize("orders", map[string]any{"id": int64(42), "item": "ink"})
	if err != nil {
		t.Fatal(err)
	}
	unknown := []byte{0, 0, 0, 0x27, 0x0f, 2, 2, 'x'} // schema id 9999
	out, err := exec.Command(py, "testdata/confluent_client.py", srv.URL, "u:p", hex.EncodeToString(b), hex.EncodeToString(unknown)).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("confluent_client.py: %v\n%s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("confluent_client.py printed %q: %v", out, err)
	}
	t.Logf("python: %s", out)
	// Ours registered orders-value first: id 1. Then python's
	// payments-value gets the same schema (id 1) and v2 (id 2).
	want := map[string]any{
		"unauthorized":        401.0,
		"register_id":         1.0,
		"register_again_id":   1.0,
		"register_v2_id":      2.0,
		"get_schema_fields":   []any{"id", "item", "qty"},
		"lookup":              map[string]any{"id": 1.0, "subject": "payments-value", "version": 1.0},
		"subjects":            []any{"orders-value", "payments-value"},
		"versions":            []any{1.0, 2.0},
		"latest":              map[string]any{"id": 2.0, "version": 2.0},
		"version_1_id":        1.0,
		"compatibility":       "FULL",
		"unknown_id":          40403.0,
		"unknown_subject":     40401.0,
		"unknown_version":     40402.0,
		"lookup_unregistered": 40403.0,
		"invalid_schema":      42201.0,
		"decoded_ours":        map[string]any{"id": 42.0, "item": "ink"},
	}
	for k, w := range want {
		if !reflect.DeepEqual(got[k], w) {
			t.Errorf("%s: python got %#v, want %#v", k, got[k], w)
		}
	}
	if s, _ := got["decoded_unknown"].(string); !strings.Contains(s, "40403") && !strings.Contains(s, "not found") {
		t.Errorf("python's deserializer on an unknown id: %q, want the registry's not-found", s)
	}
	pb, err := hex.DecodeString(got["python_bytes"].(string))
	if err != nil {
		t.Fatal(err)
	}
	v, err := ours.Deserialize("orders", pb)
	if err != nil {
		t.Fatalf("our serde on python's record %x: %v", pb, err)
	}
	if !reflect.DeepEqual(v, map[string]any{"id": int64(7), "item": "pen"}) {
		t.Fatalf("our serde read python's record as %#v", v)
	}
	// A reader without a schema of its own reads with the writer's.
	generic := serde.AvroRegistry(client, serde.RegistryOptions{URL: srv.URL})
	if v, err := generic.Deserialize("orders", pb); err != nil || !reflect.DeepEqual(v, map[string]any{"id": int64(7), "item": "pen"}) {
		t.Fatalf("writer-schema read: %#v, %v", v, err)
	}
	_, err = ours.Deserialize("orders", unknown)
	if !errors.Is(err, serde.ErrUnknownSchemaID) || !strings.Contains(err.Error(), "9999") {
		t.Fatalf("unknown id: %v, want ErrUnknownSchemaID naming 9999", err)
	}
}

// TestSubjectsAndRegistration: each subject name strategy registers under
// its subject, and without auto-registration a schema is looked up, and
// refused when it is not registered.
func TestSubjectsAndRegistration(t *testing.T) {
	srv := httptest.NewServer(schemaregistry.New())
	defer srv.Close()
	client, err := registry.NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	schema := avro.MustParse(order)
	v := map[string]any{"id": int64(1), "item": "x"}
	for _, tc := range []struct {
		strategy string
		key      bool
		subject  string
	}{
		{serde.TopicNameStrategy, false, "orders-value"},
		{serde.TopicNameStrategy, true, "orders-key"},
		{serde.RecordNameStrategy, false, "shop.Order"},
		{serde.TopicRecordNameStrategy, false, "orders-shop.Order"},
	} {
		s := serde.AvroRegistry(client, serde.RegistryOptions{Schema: schema, Strategy: tc.strategy, IsKey: tc.key, AutoRegister: true, URL: srv.URL})
		if _, err := s.Serialize("orders", v); err != nil {
			t.Fatalf("%s: %v", tc.strategy, err)
		}
		if _, _, err := client.IsRegistered(context.Background(), tc.subject, order); err != nil {
			t.Errorf("%s (key %v): not registered under %s: %v", tc.strategy, tc.key, tc.subject, err)
		}
	}
	lookup := func(topic string) error {
		_, err := serde.AvroRegistry(client, serde.RegistryOptions{Schema: schema, URL: srv.URL}).Serialize(topic, v)
		return err
	}
	if err := lookup("orders"); err != nil {
		t.Fatalf("lookup of a registered schema: %v", err)
	}
	if err := lookup("fresh"); err == nil || !strings.Contains(err.Error(), "not registered under subject fresh-value") {
		t.Fatalf("lookup of an unregistered schema: %v", err)
	}
}

// TestReadRegistryConfig: the keys as Confluent's serdes read them.
func TestReadRegistryConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  map[string]string
		want serde.RegistryConfig
		err  string
	}{
		{"unset", map[string]string{}, serde.RegistryConfig{}, ""},
		{"defaults", map[string]string{"schema.registry.url": "http://h:8081"},
			serde.RegistryConfig{URL: "http://h:8081", AutoRegister: true, KeyStrategy: "TopicNameStrategy", ValueStrategy: "TopicNameStrategy"}, ""},
		{"url credentials", map[string]string{"schema.registry.url": "https://u:p@h:8081/base"},
			serde.RegistryConfig{URL: "https://h:8081/base", User: "u", Password: "p", AutoRegister: true, KeyStrategy: "TopicNameStrategy", ValueStrategy: "TopicNameStrategy"}, ""},
		{"user info", map[string]string{"schema.registry.url": "http://h", "basic.auth.credentials.source": "USER_INFO", "basic.auth.user.info": "a:b:c",
			"auto.register.schemas": "false", "value.subject.name.strategy": "io.confluent.kafka.serializers.subject.RecordNameStrategy"},
			serde.RegistryConfig{URL: "http://h", User: "a", Password: "b:c", KeyStrategy: "TopicNameStrategy", ValueStrategy: "RecordNameStrategy"}, ""},
		{"bad url", map[string]string{"schema.registry.url": "h:8081"}, serde.RegistryConfig{}, "want http://host:port"},
		{"two urls", map[string]string{"schema.registry.url": "http://a,http://b"}, serde.RegistryConfig{}, "one URL"},
		{"no user info", map[string]string{"schema.registry.url": "http://h", "basic.auth.credentials.source": "USER_INFO"}, serde.RegistryConfig{}, "want user:password"},
		{"bad strategy", map[string]string{"schema.registry.url": "http://h", "key.subject.name.strategy": "Nope"}, serde.RegistryConfig{}, "key.subject.name.strategy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok, err := serde.ReadRegistryConfig(config.New(tc.cfg))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil || ok != (tc.want.URL != "") || !reflect.DeepEqual(got, tc.want) && ok {
				t.Fatalf("got %+v, %v, %v; want %+v", got, ok, err, tc.want)
			}
		})
	}
}
