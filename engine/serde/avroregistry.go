package serde

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/hamba/avro/v2/registry"

	"github.com/stoatflow/stoatctl/engine/config"
)

// The Confluent serializer keys the registry-backed Avro serde reads, as
// Confluent's KafkaAvroSerializer and KafkaAvroDeserializer name them.
const (
	// SchemaRegistryURL is the registry's base URL; setting it makes a
	// topology file's Avro serdes use the registry.
	SchemaRegistryURL = "schema.registry.url"
	// BasicAuthCredentialsSource says where the basic-auth credentials
	// are: USER_INFO (basic.auth.user.info) or URL (user:password@ in the
	// URL, the default).
	BasicAuthCredentialsSource = "basic.auth.credentials.source"
	// BasicAuthUserInfo is user:password, under USER_INFO.
	BasicAuthUserInfo = "basic.auth.user.info"
	// AutoRegisterSchemas says whether a sink registers its schema under
	// its subject (default true, as Confluent's); when false the schema
	// must be registered already.
	AutoRegisterSchemas = "auto.register.schemas"
	// KeySubjectNameStrategy and ValueSubjectNameStrategy name the subject
	// a schema is registered under: TopicNameStrategy (default),
	// RecordNameStrategy or TopicRecordNameStrategy.
	KeySubjectNameStrategy   = "key.subject.name.strategy"
	ValueSubjectNameStrategy = "value.subject.name.strategy"
)

// Subject name strategies, by Confluent's class names' short forms.
const (
	TopicNameStrategy       = "TopicNameStrategy"
	RecordNameStrategy      = "RecordNameStrategy"
	TopicRecordNameStrategy = "TopicRecordNameStrategy"
)

// registryTimeout bounds one request to the registry: a serde has no
// context, and a registry that does not answer must not hang a lane.
const registryTimeout = 30 * time.Second

// ErrRegistry marks a registry that could not be asked or did not answer
// as it should (unreachable, 5xx, refused credentials). It is fatal: no
// deserialization handler skips it, since the record is not at fault and
// skipping would drop every record until the registry is back.
var ErrRegistry = errors.New("schema registry")

// ErrSchemaRefused is a sink's schema the registry refused as
// incompatible with the subject's earlier versions (HTTP 409). It is
// fatal, as ErrRegistry is (errors.Is matches both): the engine stops
// before committing the epoch, so the record is neither lost nor passed.
var ErrSchemaRefused = errors.New("schema refused by the registry")

// registryError is a failure of the registry, not of a record.
type registryError struct{ err error }

func (e *registryError) Error() string { return e.err.Error() }
func (e *registryError) Unwrap() error { return e.err }
func (e *registryError) Is(target error) bool {
	return target == ErrRegistry
}

// Fatal makes the task's handlers let the error through (task.Fatal).
func (e *registryError) Fatal() bool { return true }

// RegistryOptions configure AvroRegistry.
type RegistryOptions struct {
	// Schema is the serde's own schema: the reader schema records resolve
	// to, and the writer schema of what it serializes. Nil reads each
	// record with its writer schema and cannot serialize.
	Schema avro.Schema
	// Strategy is the subject name strategy (TopicNameStrategy when "").
	Strategy string
	// AutoRegister registers Schema under the subject on the first
	// Serialize to a topic; otherwise it must be registered already.
	AutoRegister bool
	// IsKey says the serde is a key serde: TopicNameStrategy's subject is
	// <topic>-key, else <topic>-value.
	IsKey bool
	// URL names the registry in errors.
	URL string
}

// AvroRegistry is an Avro serde in the Confluent wire format whose schema
// ids are the registry's: a record's writer schema is fetched by its id
// (and cached), and what it serializes carries the id its schema has
// under the subject the strategy names (registered on first use when
// AutoRegister). Values are map[string]any and friends, as AvroGeneric's.
func AvroRegistry(client registry.Registry, o RegistryOptions) Serde[any] {
	if o.Strategy == "" {
		o.Strategy = TopicNameStrategy
	}
	return &registrySerde{client: client, o: o, compat: avro.NewSchemaCompatibility(),
		readers: sync.Pool{New: func() any { return avro.NewReader(nil, 0, avro.WithReaderConfig(defaultAvroAPI)) }}}
}

type registrySerde struct {
	client registry.Registry
	o      RegistryOptions
	compat *avro.SchemaCompatibility
	// readers maps a writer schema id to its resolution (int32 ->
	// resolution); ids maps a subject to the id of o.Schema under it
	// (string -> int32).
	resolved, ids sync.Map
	readers       sync.Pool
}

func (*registrySerde) Name() string { return "avro" }

// Schema is the serde's own schema, nil when it reads with writer schemas.
func (s *registrySerde) Schema() avro.Schema { return s.o.Schema }

func (s *registrySerde) subject(topic string) (string, error) {
	suffix := "-value"
	if s.o.IsKey {
		suffix = "-key"
	}
	named := func() (string, error) {
		n, ok := s.o.Schema.(avro.NamedSchema)
		if !ok {
			return "", fmt.Errorf("subject name strategy %s needs a named schema (a record), not %s", s.o.Strategy, s.o.Schema.Type())
		}
		return n.FullName(), nil
	}
	switch s.o.Strategy {
	case TopicNameStrategy:
		return topic + suffix, nil
	case RecordNameStrategy:
		return named()
	case TopicRecordNameStrategy:
		n, err := named()
		return topic + "-" + n, err
	}
	return "", fmt.Errorf("unknown subject name strategy %q", s.o.Strategy)
}

func (s *registrySerde) Serialize(topic string, v any) ([]byte, error) {
	if s.o.Schema == nil {
		return nil, fmt.Errorf("serialize with serde avro: topic %s: the serde has no schema to write with (give the avro serde a schema)", topic)
	}
	subject, err := s.subject(topic)
	if err != nil {
		return nil, fmt.Errorf("serialize with serde avro: topic %s: %w", topic, err)
	}
	id, err := s.idFor(subject)
	if err != nil {
		return nil, fmt.Errorf("serialize with serde avro: topic %s: %w", topic, err)
	}
	body, err := defaultAvroAPI.Marshal(s.o.Schema, v)
	if err != nil {
		return nil, fmt.Errorf("serialize with serde avro: topic %s: schema id %d: %w", topic, id, err)
	}
	out := make([]byte, confluentHeaderLen, confluentHeaderLen+len(body))
	out[0] = confluentMagic
	binary.BigEndian.PutUint32(out[1:], uint32(id))
	return append(out, body...), nil
}

// idFor is the id of the serde's schema under subject: registered, or
// looked up, once per subject.
func (s *registrySerde) idFor(subject string) (int32, error) {
	if id, ok := s.ids.Load(subject); ok {
		return id.(int32), nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), registryTimeout)
	defer cancel()
	var id int
	var err error
	if s.o.AutoRegister {
		id, _, err = s.client.CreateSchema(ctx, subject, s.o.Schema.String())
	} else {
		id, _, err = s.client.IsRegistered(ctx, subject, s.o.Schema.String())
	}
	if err != nil {
		var re registry.Error
		if errors.As(err, &re) && re.StatusCode == http.StatusConflict {
			// Not a record's fault, and not one a retry or a handler
			// cures: every record to the subject would meet it.
			return 0, &registryError{fmt.Errorf("%w: %s: subject %s: the schema is incompatible with the subject's earlier versions under its compatibility level (409); register a compatible schema, or change the subject's compatibility level: %s",
				ErrSchemaRefused, s.o.URL, subject, re.Message)}
		}
		if errors.As(err, &re) && re.StatusCode == 404 && !s.o.AutoRegister {
			return 0, fmt.Errorf("schema registry %s: the schema is not registered under subject %s (%s is false): %s", s.o.URL, subject, AutoRegisterSchemas, re.Error())
		}
		return 0, &registryError{fmt.Errorf("%w %s: subject %s: %w", ErrRegistry, s.o.URL, subject, err)}
	}
	s.ids.Store(subject, int32(id))
	return int32(id), nil
}

func (s *registrySerde) Deserialize(topic string, data []byte) (any, error) {
	if len(data) < confluentHeaderLen {
		return nil, decodeError("avro", topic, fmt.Errorf("%w: record is %d bytes, need at least %d", ErrShortHeader, len(data), confluentHeaderLen))
	}
	if data[0] != confluentMagic {
		return nil, decodeError("avro", topic, fmt.Errorf("%w 0x%02x, expected 0x%02x", ErrBadMagic, data[0], confluentMagic))
	}
	id := int32(binary.BigEndian.Uint32(data[1:confluentHeaderLen]))
	schema, err := s.readerFor(id)
	if err != nil {
		var re *registryError
		if errors.As(err, &re) {
			// Not the record's fault: fatal, and positioned by the task
			// all the same.
			return nil, &DecodeError{Serde: "avro", Topic: topic, Err: err}
		}
		return nil, decodeError("avro", topic, err)
	}
	var v any
	r := s.readers.Get().(*avro.Reader)
	defer s.readers.Put(r)
	r.Reset(data[confluentHeaderLen:])
	r.Error = nil
	r.ReadVal(schema, &v)
	if err := r.Error; err != nil {
		return nil, decodeError("avro", topic, fmt.Errorf("%w (writer schema id %d): %w", ErrAvroBody, id, err))
	}
	return v, nil
}

// readerFor fetches the writer schema of id (hamba's client caches it)
// and resolves it to the serde's schema, once per id. An id the registry
// does not have is not cached: it may be registered later.
func (s *registrySerde) readerFor(id int32) (avro.Schema, error) {
	if r, ok := s.resolved.Load(id); ok {
		res := r.(resolution)
		return res.schema, res.err
	}
	ctx, cancel := context.WithTimeout(context.Background(), registryTimeout)
	defer cancel()
	writer, err := s.client.GetSchema(ctx, int(id))
	if err != nil {
		var re registry.Error
		if errors.As(err, &re) && re.StatusCode == 404 {
			return nil, fmt.Errorf("%w %d: the schema registry %s has no schema with that id (%d %s)", ErrUnknownSchemaID, id, s.o.URL, re.Code, re.Message)
		}
		return nil, &registryError{fmt.Errorf("%w %s: fetch schema id %d: %w", ErrRegistry, s.o.URL, id, err)}
	}
	schema := writer
	if s.o.Schema != nil {
		if schema, err = s.compat.Resolve(s.o.Schema, writer); err != nil {
			err = fmt.Errorf("%w: writer schema id %d: %w", ErrIncompatibleSchema, id, err)
		}
	}
	r, _ := s.resolved.LoadOrStore(id, resolution{schema, err})
	res := r.(resolution)
	return res.schema, res.err
}

// Configurable is a serde that reads configuration when a topology is
// built, as Kafka's Serde.configure does: Configure returns the serde to
// use under c, for a key serde when isKey. topology.Build calls it on
// every source and sink serde.
type Configurable interface {
	Configure(c config.Config, isKey bool) (Any, error)
}

// RegistryConfig is what a configuration says of the schema registry.
type RegistryConfig struct {
	URL            string
	User, Password string
	AutoRegister   bool
	// KeyStrategy and ValueStrategy are subject name strategies.
	KeyStrategy, ValueStrategy string
}

// ReadRegistryConfig reads the registry keys of c; ok is false when
// schema.registry.url is not set.
func ReadRegistryConfig(c config.Config) (rc RegistryConfig, ok bool, err error) {
	rc.URL = strings.TrimSpace(c.String(SchemaRegistryURL))
	if rc.URL == "" {
		return rc, false, nil
	}
	if strings.Contains(rc.URL, ",") {
		return rc, false, fmt.Errorf("config %s: %q: one URL, please (several are not supported)", SchemaRegistryURL, rc.URL)
	}
	u, err := url.Parse(rc.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return rc, false, fmt.Errorf("config %s: %q: want http://host:port or https://host:port", SchemaRegistryURL, rc.URL)
	}
	source := "URL"
	if c.IsSet(BasicAuthCredentialsSource) {
		if source, err = c.OneOf(BasicAuthCredentialsSource, "URL", "USER_INFO"); err != nil {
			return rc, false, err
		}
	}
	switch source {
	case "USER_INFO":
		info := c.String(BasicAuthUserInfo)
		user, pass, found := strings.Cut(info, ":")
		if !found {
			return rc, false, fmt.Errorf("config %s: want user:password (%s is USER_INFO)", BasicAuthUserInfo, BasicAuthCredentialsSource)
		}
		rc.User, rc.Password = user, pass
	default:
		if u.User != nil {
			rc.User = u.User.Username()
			rc.Password, _ = u.User.Password()
		}
	}
	// The URL without credentials, for errors and for the client.
	u.User = nil
	rc.URL = u.String()
	if rc.AutoRegister, err = c.Bool(AutoRegisterSchemas, true); err != nil {
		return rc, false, err
	}
	if rc.KeyStrategy, err = strategy(c, KeySubjectNameStrategy); err != nil {
		return rc, false, err
	}
	if rc.ValueStrategy, err = strategy(c, ValueSubjectNameStrategy); err != nil {
		return rc, false, err
	}
	return rc, true, nil
}

func strategy(c config.Config, key string) (string, error) {
	v := strings.TrimSpace(c.String(key))
	if v == "" {
		return TopicNameStrategy, nil
	}
	short := v[strings.LastIndex(v, ".")+1:]
	switch short {
	case TopicNameStrategy, RecordNameStrategy, TopicRecordNameStrategy:
		return short, nil
	}
	return "", fmt.Errorf("config %s: %q: want %s, %s or %s (or io.confluent.kafka.serializers.subject.<name>)", key, v, TopicNameStrategy, RecordNameStrategy, TopicRecordNameStrategy)
}

var clients sync.Map // RegistryConfig minus strategies -> *registry.Client

// NewRegistryClient returns a client of the registry rc names, shared by
// every serde of the process that names the same registry and
// credentials, so that a schema is fetched once.
func NewRegistryClient(rc RegistryConfig) (registry.Registry, error) {
	key := rc.URL + "\x00" + rc.User + "\x00" + rc.Password
	if c, ok := clients.Load(key); ok {
		return c.(registry.Registry), nil
	}
	var opts []registry.ClientFunc
	if rc.User != "" || rc.Password != "" {
		opts = append(opts, registry.WithBasicAuth(rc.User, rc.Password))
	}
	c, err := registry.NewClient(rc.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", SchemaRegistryURL, err)
	}
	actual, _ := clients.LoadOrStore(key, c)
	return actual.(registry.Registry), nil
}
