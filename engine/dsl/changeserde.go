package dsl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync/atomic"

	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/serde"
)

// Errors of the change serde.
var (
	errChangeBothNull = errors.New("both the old and the new value of a change are null")
	errChangeEncoding = errors.New("malformed change")
)

// Encoding flags of a serialized change, the last byte of the record, as
// Kafka Streams' ChangedSerializer writes them. 3 to 5 carry an extra
// "is latest" byte before the flag (versioned tables); they are read, and
// the byte ignored, but never written.
const (
	changeOldOnly     byte = 0
	changeNewOnly     byte = 1
	changeBoth        byte = 2
	changeOldOnlyTail byte = 3
	changeNewOnlyTail byte = 4
	changeBothTail    byte = 5
)

// changeSerde serializes the changes a table grouping sends across its
// boundary, in the layout of Kafka Streams' ChangedSerializer, so that the
// bytes are those of a real "<name>-repartition" topic:
//
//	{old}{0x00}                           old value only (a subtraction)
//	{new}{0x01}                           new value only (an addition)
//	{varint len(new)}{new}{old}{0x02}     both (the key did not move)
//
// The varint is Kafka's ByteUtils.writeVarint: zig-zag, then 7 bits a byte.
// inner serializes the values; nulls are what the inner serde turns into nil
// bytes.
type changeSerde struct {
	inner serde.Any
}

func newChangeSerde(inner serde.Any) changeSerde { return changeSerde{inner: inner} }

func (s changeSerde) Name() string {
	name := s.inner.Name()
	if name == "" {
		name = "default"
	}
	return "change(" + name + ")"
}

func (s changeSerde) SerializeAny(topic string, v any) ([]byte, error) {
	c, ok := v.(change)
	if !ok {
		return nil, fmt.Errorf("%w %s: got %T", serde.ErrWrongType, s.Name(), v)
	}
	newData, err := s.inner.SerializeAny(topic, c.New)
	if err != nil {
		return nil, fmt.Errorf("serialize new value of change: %w", err)
	}
	oldData, err := s.inner.SerializeAny(topic, c.Old)
	if err != nil {
		return nil, fmt.Errorf("serialize old value of change: %w", err)
	}
	switch {
	case newData != nil && oldData != nil:
		out := binary.AppendVarint(make([]byte, 0, binary.MaxVarintLen32+len(newData)+len(oldData)+1), int64(len(newData)))
		out = append(append(append(out, newData...), oldData...), changeBoth)
		return out, nil
	case newData != nil:
		return append(append(make([]byte, 0, len(newData)+1), newData...), changeNewOnly), nil
	case oldData != nil:
		return append(append(make([]byte, 0, len(oldData)+1), oldData...), changeOldOnly), nil
	}
	return nil, errChangeBothNull
}

func (s changeSerde) DeserializeAny(topic string, data []byte) (any, error) {
	if data == nil {
		return nil, nil
	}
	newData, oldData, err := splitChange(data)
	if err != nil {
		return nil, fmt.Errorf("deserialize with serde %s: %w", s.Name(), err)
	}
	var c change
	if newData != nil {
		if c.New, err = s.inner.DeserializeAny(topic, newData); err != nil {
			return nil, fmt.Errorf("deserialize new value of change: %w", err)
		}
	}
	if oldData != nil {
		if c.Old, err = s.inner.DeserializeAny(topic, oldData); err != nil {
			return nil, fmt.Errorf("deserialize old value of change: %w", err)
		}
	}
	return c, nil
}

// splitChange returns the serialized new and old values of a change, nil
// for a null. The slices alias data; present values are non-nil even when
// empty, because an empty string is not a null.
func splitChange(data []byte) (newData, oldData []byte, err error) {
	if len(data) == 0 {
		return nil, nil, fmt.Errorf("%w: no encoding flag", errChangeEncoding)
	}
	flag := data[len(data)-1]
	body := data[:len(data)-1]
	if flag >= changeOldOnlyTail {
		if len(body) == 0 {
			return nil, nil, fmt.Errorf("%w: flag %d without an is-latest byte", errChangeEncoding, flag)
		}
		if latest := body[len(body)-1]; latest > 1 {
			return nil, nil, fmt.Errorf("%w: is-latest byte is %d, expected 0 or 1", errChangeEncoding, latest)
		}
		body = body[:len(body)-1]
	}
	switch flag {
	case changeOldOnly, changeOldOnlyTail:
		return nil, body, nil
	case changeNewOnly, changeNewOnlyTail:
		return body, nil, nil
	case changeBoth, changeBothTail:
		n, size := binary.Varint(body)
		if size <= 0 || n < 0 || n > math.MaxInt32 || int64(len(body)-size) < n {
			return nil, nil, fmt.Errorf("%w: bad new-value length", errChangeEncoding)
		}
		rest := body[size:]
		return rest[:n:n], rest[n:], nil
	}
	return nil, nil, fmt.Errorf("%w: unknown encoding flag %d", errChangeEncoding, flag)
}

// configSerde stands for a serde left to the configuration
// (default.key.serde or default.value.serde) where a typed serde is needed
// at build time: a store's key or value serde. Kafka Streams resolves such
// serdes when the store is initialised; stores here cannot see the
// configuration, so the processors using the serde resolve it from their
// context's AppConfig in Init, before any record (and so any store access)
// reaches them. The topology's probe runs the same Init, so a missing or
// unknown default is reported by Build.
//
// One configSerde is shared by every task, all of which run with the same
// configuration: resolution is idempotent and atomic.
type configSerde[T any] struct {
	key      bool
	resolved atomic.Pointer[serde.Any]
}

func newConfigSerde[T any](key bool) *configSerde[T] { return &configSerde[T]{key: key} }

// Name is "" until the serde is resolved, so that descriptions built before
// that print "default".
func (c *configSerde[T]) Name() string {
	if s := c.resolved.Load(); s != nil {
		return (*s).Name()
	}
	return ""
}

func (c *configSerde[T]) configKey() string {
	if c.key {
		return config.DefaultKeySerde
	}
	return config.DefaultValueSerde
}

// configure resolves the serde from the application configuration.
func (c *configSerde[T]) configure(cfg map[string]string) error {
	key := c.configKey()
	name := cfg[key]
	if name == "" {
		return fmt.Errorf("no serde given and config %s is not set", key)
	}
	s, err := serde.ByName(name)
	if err != nil {
		return fmt.Errorf("config %s: %w", key, err)
	}
	// A serde for another type fails on every record; catch the common
	// case (a string serde for an int64 count) at build time instead.
	var zero T
	if _, err := s.SerializeAny("", zero); errors.Is(err, serde.ErrWrongType) {
		return fmt.Errorf("config %s: serde %s cannot hold %T values: %w", key, s.Name(), zero, err)
	}
	c.resolved.Store(&s)
	return nil
}

func (c *configSerde[T]) get() (serde.Any, error) {
	if s := c.resolved.Load(); s != nil {
		return *s, nil
	}
	return nil, fmt.Errorf("serde from config %s used before a processor resolved it", c.configKey())
}

func (c *configSerde[T]) Serialize(topic string, v T) ([]byte, error) {
	s, err := c.get()
	if err != nil {
		return nil, err
	}
	return s.SerializeAny(topic, v)
}

func (c *configSerde[T]) Deserialize(topic string, data []byte) (T, error) {
	s, err := c.get()
	if err != nil {
		var zero T
		return zero, err
	}
	v, err := s.DeserializeAny(topic, data)
	if err != nil {
		var zero T
		return zero, err
	}
	return processor.As[T](v)
}

// configurable is a serde resolved from the configuration at Init.
type configurable interface {
	configure(cfg map[string]string) error
}

// serdeOrConfig returns s, or a serde resolved from the configuration when
// s is nil.
func serdeOrConfig[T any](s serde.Serde[T], key bool) serde.Serde[T] {
	if s != nil {
		return s
	}
	return newConfigSerde[T](key)
}

// configureSerdes resolves those of serdes that are left to the
// configuration; the others need nothing.
func configureSerdes(ctx processor.Context[any, any], serdes []any) error {
	var cfg map[string]string
	for _, s := range serdes {
		c, ok := s.(configurable)
		if !ok {
			continue
		}
		if cfg == nil {
			cfg = ctx.AppConfig()
		}
		if err := c.configure(cfg); err != nil {
			return err
		}
	}
	return nil
}
