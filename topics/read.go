package topics

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/topofile"
	"github.com/stoatflow/stoatctl/engine/topology"
	"github.com/stoatflow/stoatctl/replay"
)

// This file is topic read: a topic's records, decoded with serdes named or
// taken from a topology, in the order the engine would dispatch them.

// Serdes are the serdes a read decodes keys and values with. A nil (or
// bytes) serde shows the bytes as they are: a string when they are UTF-8
// text, else {"base64": ...}.
type Serdes struct {
	Key, Value serde.Any
}

// ErrTopicNotInTopology is returned, wrapped, by TopologySerdes for a topic
// the topology neither reads nor writes.
var ErrTopicNotInTopology = errors.New("the topology neither reads nor writes the topic")

// TopologySerdes returns the serdes f's topology uses for topic: those of
// the sink that writes it (a windowed key as the sink writes it), else
// those of the source that reads it, else those of a sink that picks its
// topic per record. Internal topics (repartition boundaries) are not
// among them.
func TopologySerdes(f *topofile.File, topic string) (Serdes, error) {
	conf := maps.Clone(f.Config)
	if conf == nil {
		conf = map[string]string{}
	}
	if conf[config.ApplicationID] == "" {
		conf[config.ApplicationID] = "topic-read"
	}
	built, err := f.Topology.Build(config.New(conf))
	if err != nil {
		return Serdes{}, fmt.Errorf("topology %s: %w", topologyName(f), err)
	}
	var chooser *Serdes
	var named []string
	for _, name := range slices.Sorted(maps.Keys(built.Nodes)) {
		n := built.Nodes[name]
		if n.Kind != topology.SinkNode || n.Boundary != nil {
			continue
		}
		sd := Serdes{n.Sink.KeySerde, n.Sink.ValueSerde}
		switch n.Sink.Topic {
		case topic:
			return sd, nil
		case "":
			if chooser == nil {
				chooser = &sd
			}
		default:
			named = append(named, n.Sink.Topic)
		}
	}
	if n, ok := built.SourceNodeFor(topic); ok && n.Source != nil && n.Boundary == nil {
		return Serdes{n.Source.KeySerde, n.Source.ValueSerde}, nil
	}
	if chooser != nil {
		return *chooser, nil
	}
	for t, name := range built.SourceTopics {
		if n := built.Nodes[name]; n != nil && n.Boundary == nil {
			named = append(named, t)
		}
	}
	slices.Sort(named)
	return Serdes{}, fmt.Errorf("topology %s: topic %s: %w (it has %s)", topologyName(f), topic, ErrTopicNotInTopology, strings.Join(slices.Compact(named), ", "))
}

// topologyName names f in errors: its file, or the example's name.
func topologyName(f *topofile.File) string {
	if f.Path != "" {
		return f.Path
	}
	return f.ApplicationID
}

// ReadOptions say what Read reads.
type ReadOptions struct {
	Topic string
	// From is each partition's first offset (default its log start); To
	// the offset it stops before (default its end, the last stable offset,
	// when the read starts). See replay.ParseBound.
	From, To replay.Bound
	// Limit, when above 0, stops after Limit records.
	Limit int
	// Follow, after the records up to the end, waits for new ones until
	// ctx is done or Limit is reached. It cannot go with a To.
	Follow bool
	Serdes Serdes
}

// Header is one record header, its value decoded as bytes are.
type Header struct {
	Key   string `json:"key" yaml:"key"`
	Value any    `json:"value" yaml:"value"`
}

// Message is one record as Read hands it over: its position, its
// timestamp in epoch milliseconds, and its key and value decoded to plain
// data (nil, string, bool, int64, float64, map[string]any or []any; a
// windowed key is {key, start, end}).
type Message struct {
	Topic     string   `json:"topic" yaml:"topic"`
	Partition int32    `json:"partition" yaml:"partition"`
	Offset    int64    `json:"offset" yaml:"offset"`
	Timestamp int64    `json:"timestamp" yaml:"timestamp"`
	Key       any      `json:"key" yaml:"key"`
	Value     any      `json:"value" yaml:"value"`
	Headers   []Header `json:"headers,omitempty" yaml:"headers,omitempty"`
}

// DecodeError is a record a serde could not read.
type DecodeError struct {
	Topic     string
	Partition int32
	Offset    int64
	// Part is "key" or "value".
	Part  string
	Serde string
	Err   error
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("%s[%d]@%d: %s: %v (--%s-serde bytes shows it undecoded)", e.Topic, e.Partition, e.Offset, e.Part, e.Err, e.Part)
}

func (e *DecodeError) Unwrap() error { return e.Err }

// Read hands fn topic's records, read committed and without a consumer
// group: every partition in offset order, and across partitions the
// record with the oldest timestamp at the head first, as the engine
// dispatches them (see replay.Merge). The records up to the end are read
// before the first is handed over, so a bounded read holds them in
// memory; followed records are handed over as they arrive, in the order
// they are fetched. A record the serdes cannot read stops the read with a
// *DecodeError; an error of fn stops it with that error.
func (a *Admin) Read(ctx context.Context, opts ReadOptions, fn func(Message) error) error {
	if opts.Follow && opts.To.Kind != replay.BoundDefault {
		return errors.New("read: follow cannot go with an end")
	}
	rec, err := replay.Capture(ctx, replay.RecordOptions{Brokers: a.seeds, Topics: []string{opts.Topic},
		From: opts.From, To: opts.To, Limit: opts.Limit, Opts: a.opts})
	if err != nil {
		return fmt.Errorf("read topic %s on %s: %w", opts.Topic, a.Addr(), unprefixed{err, "record: "})
	}
	n := 0
	for i := range rec.Records {
		r := &rec.Records[i]
		m, err := opts.Serdes.message(r.Topic, r.Partition, r.Offset, r.Timestamp, r.Key, r.Value, r.Headers)
		if err != nil {
			return err
		}
		if err := fn(m); err != nil {
			return err
		}
		n++
	}
	if !opts.Follow || opts.Limit > 0 && n >= opts.Limit {
		return nil
	}
	return a.follow(ctx, opts, rec.Ranges, n, fn)
}

// unprefixed is err without the prefix its message starts with (the
// "record: " of replay.Capture, which read is not), still unwrapping to it.
type unprefixed struct {
	err    error
	prefix string
}

func (e unprefixed) Error() string { return strings.TrimPrefix(e.err.Error(), e.prefix) }
func (e unprefixed) Unwrap() error { return e.err }

// follow reads on from the end of each range until ctx is done.
func (a *Admin) follow(ctx context.Context, opts ReadOptions, ranges []replay.Range, n int, fn func(Message) error) error {
	offsets := map[int32]kgo.Offset{}
	for _, r := range ranges {
		offsets[r.Partition] = kgo.NewOffset().At(r.To)
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(a.seeds...),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{opts.Topic: offsets})}, a.opts...)...)
	if err != nil {
		return fmt.Errorf("follow topic %s on %s: %w", opts.Topic, a.Addr(), err)
	}
	defer cl.Close()
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if ferr == nil {
				ferr = fmt.Errorf("follow topic %s on %s: partition %d: %w", t, a.Addr(), p, err)
			}
		})
		if ferr != nil {
			return ferr
		}
		for it := fs.RecordIter(); !it.Done(); {
			r := it.Next()
			m, err := opts.Serdes.message(r.Topic, r.Partition, r.Offset, r.Timestamp.UnixMilli(), r.Key, r.Value, r.Headers)
			if err != nil {
				return err
			}
			if err := fn(m); err != nil {
				return err
			}
			if n++; opts.Limit > 0 && n >= opts.Limit {
				return nil
			}
		}
	}
}

func (s Serdes) message(topic string, p int32, off, ts int64, key, value []byte, headers []kgo.RecordHeader) (Message, error) {
	m := Message{Topic: topic, Partition: p, Offset: off, Timestamp: ts}
	var err error
	if m.Key, err = decode(s.Key, topic, key); err != nil {
		return Message{}, &DecodeError{Topic: topic, Partition: p, Offset: off, Part: "key", Serde: s.Key.Name(), Err: err}
	}
	if m.Value, err = decode(s.Value, topic, value); err != nil {
		return Message{}, &DecodeError{Topic: topic, Partition: p, Offset: off, Part: "value", Serde: s.Value.Name(), Err: err}
	}
	for _, h := range headers {
		v, _ := decode(nil, topic, h.Value)
		m.Headers = append(m.Headers, Header{Key: h.Key, Value: v})
	}
	return m, nil
}

// decode reads b with s, or shows it as it is when s is nil or bytes:
// text (UTF-8 without control characters other than tab, newline and
// carriage return) as a string, anything else as {"base64": ...}.
func decode(s serde.Any, topic string, b []byte) (any, error) {
	if s != nil && s.Name() != "bytes" {
		return replay.Decode(s, topic, b)
	}
	if b == nil {
		return nil, nil
	}
	if text(b) {
		return string(b), nil
	}
	return map[string]any{"base64": base64.StdEncoding.EncodeToString(b)}, nil
}

func text(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, r := range string(b) {
		if unicode.IsControl(r) && r != '\t' && r != '\n' && r != '\r' {
			return false
		}
	}
	return true
}
