package replay

import (
	"bufio"
	"bytes"
	gocontext "context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/kafka"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/topofile"
)

// This file is replay record (context is imported as gocontext: the
// package has a constant named context): it reads a slice of live topics and writes
// it as a fixture's input steps, in the order the engine would dispatch
// the records, so that a production slice becomes a regression test.

// BoundKind is how a Bound places a partition's start or end.
type BoundKind uint8

const (
	// BoundDefault is the beginning for a start and the end for an end.
	BoundDefault BoundKind = iota
	BoundBeginning
	BoundEnd
	// BoundOffset is the same offset in every partition.
	BoundOffset
	// BoundTime is, in each partition, the first offset whose record is
	// stamped at or after the time.
	BoundTime
)

// Bound is a start (--from) or end (--to) of a recorded range.
type Bound struct {
	Kind BoundKind
	// Offset for BoundOffset; Millis (epoch milliseconds) for BoundTime.
	Offset, Millis int64
}

// ParseBound reads a start or end: "beginning", "end", "offset:N", epoch
// milliseconds, or an RFC 3339 time. The empty string is BoundDefault.
func ParseBound(s string) (Bound, error) {
	switch {
	case s == "":
		return Bound{}, nil
	case s == "beginning":
		return Bound{Kind: BoundBeginning}, nil
	case s == "end":
		return Bound{Kind: BoundEnd}, nil
	case strings.HasPrefix(s, "offset:"):
		n, err := strconv.ParseInt(strings.TrimPrefix(s, "offset:"), 10, 64)
		if err != nil || n < 0 {
			return Bound{}, fmt.Errorf("want offset:N with N an offset of at least 0, got %q", s)
		}
		return Bound{Kind: BoundOffset, Offset: n}, nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 0 {
			return Bound{}, fmt.Errorf("want epoch milliseconds of at least 0, got %q", s)
		}
		return Bound{Kind: BoundTime, Millis: n}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return Bound{}, fmt.Errorf("want beginning, end, offset:N, epoch milliseconds or an RFC 3339 time, got %q", s)
	}
	return Bound{Kind: BoundTime, Millis: t.UnixMilli()}, nil
}

// RecordOptions say what replay record reads.
type RecordOptions struct {
	// Brokers are the seed brokers, host:port.
	Brokers []string
	// Topics are read whole (every partition) and merged.
	Topics []string
	// From is each partition's first offset (default: its log start); To
	// the offset it stops before (default: its end when Capture starts,
	// the last stable offset, so the read terminates). A time as To stops
	// before the first record stamped at or after it.
	From, To Bound
	// Limit, when above 0, keeps only the first Limit records of the
	// merged order.
	Limit int
	// Opts are extra client options for connecting (TLS, SASL, client id).
	Opts []kgo.Opt
}

// Recorded is one record read by Capture, with where it came from.
type Recorded struct {
	Topic     string
	Partition int32
	Offset    int64
	// Key and Value are nil for a null key or value.
	Key, Value []byte
	// Timestamp is in epoch milliseconds.
	Timestamp int64
	Headers   []kgo.RecordHeader
}

// Source names the record's position: topic[partition]@offset.
func (r *Recorded) Source() string {
	return fmt.Sprintf("%s[%d]@%d", r.Topic, r.Partition, r.Offset)
}

// Range is the offsets read from one partition: From up to, not
// including, To.
type Range struct {
	Topic     string
	Partition int32
	From, To  int64
	// Records is how many records of the range the recording kept.
	Records int
}

// Recording is a captured slice: the ranges read, by topic and partition,
// and the records in merged order.
type Recording struct {
	Ranges  []Range
	Records []Recorded
}

// Capture reads the slice opts describes, read committed and without a
// consumer group, and merges the partitions (see Merge).
func Capture(ctx gocontext.Context, opts RecordOptions) (*Recording, error) {
	if len(opts.Brokers) == 0 {
		return nil, errors.New("record: no brokers")
	}
	if len(opts.Topics) == 0 {
		return nil, errors.New("record: no topics")
	}
	topics := slices.Compact(slices.Sorted(slices.Values(opts.Topics)))
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(opts.Brokers...)}, opts.Opts...)...)
	if err != nil {
		return nil, fmt.Errorf("record: new client: %w", err)
	}
	defer cl.Close()
	ranges, err := plan(ctx, kadm.NewClient(cl), topics, opts.From, opts.To)
	if err != nil {
		return nil, err
	}

	rec := &Recording{}
	var parts [][]Recorded
	for _, topic := range topics {
		var rs []*Range
		for i := range ranges {
			if ranges[i].Topic == topic {
				rs = append(rs, &ranges[i])
			}
		}
		got, err := readTopic(ctx, opts, topic, rs)
		if err != nil {
			return nil, err
		}
		parts = append(parts, got...)
	}
	rec.Records = Merge(parts, opts.Limit)
	for _, r := range rec.Records {
		i := slices.IndexFunc(ranges, func(rg Range) bool { return rg.Topic == r.Topic && rg.Partition == r.Partition })
		ranges[i].Records++
	}
	rec.Ranges = ranges
	return rec, nil
}

// plan resolves from and to into a range per partition of every topic,
// sorted by topic and partition. Ends are the last stable offsets as the
// call finds them (records of open transactions are not read), so a To
// past them, or a From, is cut back to them.
func plan(ctx gocontext.Context, adm *kadm.Client, topics []string, from, to Bound) ([]Range, error) {
	ends, err := adm.ListCommittedOffsets(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("record: list end offsets: %w", err)
	}
	starts, err := adm.ListStartOffsets(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("record: list start offsets: %w", err)
	}
	var ranges []Range
	for _, topic := range topics {
		ps, ok := ends[topic]
		if _, unknown := ps[-1]; !ok || unknown {
			return nil, fmt.Errorf("record: topic %s: %w", topic, kafka.ErrUnknownTopic)
		}
		for _, p := range slices.Sorted(maps.Keys(ps)) {
			end := ps[p]
			if end.Err != nil {
				return nil, fmt.Errorf("record: %s[%d]: list end offset: %w", topic, p, end.Err)
			}
			start, ok := starts.Lookup(topic, p)
			switch {
			case !ok:
				return nil, fmt.Errorf("record: %s[%d]: list start offset: no answer for the partition", topic, p)
			case start.Err != nil:
				return nil, fmt.Errorf("record: %s[%d]: list start offset: %w", topic, p, start.Err)
			}
			ranges = append(ranges, Range{Topic: topic, Partition: p, From: start.Offset, To: end.Offset})
		}
	}
	resolve := func(b Bound, set func(*Range, int64)) error {
		var byTime kadm.ListedOffsets
		if b.Kind == BoundTime {
			if byTime, err = adm.ListOffsetsAfterMilli(ctx, b.Millis, topics...); err != nil {
				return fmt.Errorf("record: list offsets at %d: %w", b.Millis, err)
			}
		}
		for i := range ranges {
			r := &ranges[i]
			switch b.Kind {
			case BoundBeginning:
				set(r, r.From)
			case BoundEnd:
				set(r, r.To)
			case BoundOffset:
				set(r, b.Offset)
			case BoundTime:
				o, ok := byTime.Lookup(r.Topic, r.Partition)
				switch {
				case !ok:
					return fmt.Errorf("record: %s[%d]: list offset at %d: no answer for the partition", r.Topic, r.Partition, b.Millis)
				case o.Err != nil:
					return fmt.Errorf("record: %s[%d]: list offset at %d: %w", r.Topic, r.Partition, b.Millis, o.Err)
				}
				// A partition with nothing stamped at or after the time
				// answers with its end.
				set(r, o.Offset)
			}
		}
		return nil
	}
	// The end first: From below is clamped to it.
	if err := resolve(to, func(r *Range, o int64) { r.To = min(max(o, 0), r.To) }); err != nil {
		return nil, err
	}
	if err := resolve(from, func(r *Range, o int64) { r.From = o }); err != nil {
		return nil, err
	}
	for i := range ranges {
		r := &ranges[i]
		if r.From > r.To {
			r.From = r.To
		}
	}
	return ranges, nil
}

// errEnough stops a ReadToEnd once every partition has what it needs.
var errEnough = errors.New("enough records")

// readTopic reads one topic's ranges, each partition's records in offset
// order. A partition stops at its range's end or, with a limit, after as
// many records: no more of it can be among the first limit merged.
func readTopic(ctx gocontext.Context, opts RecordOptions, topic string, ranges []*Range) ([][]Recorded, error) {
	from := kafka.Positions{}
	byPart := map[int32]*Range{}
	got := map[int32][]Recorded{}
	for _, r := range ranges {
		if r.From < r.To {
			from[r.Partition] = r.From
			byPart[r.Partition] = r
		}
	}
	open := len(from)
	done := map[int32]bool{}
	fn := func(kr *kgo.Record) error {
		r := byPart[kr.Partition]
		if r == nil || done[kr.Partition] {
			return nil
		}
		if kr.Offset < r.To {
			got[kr.Partition] = append(got[kr.Partition], recorded(kr))
		}
		if kr.Offset >= r.To-1 || opts.Limit > 0 && len(got[kr.Partition]) >= opts.Limit {
			done[kr.Partition] = true
			if open--; open == 0 {
				return errEnough
			}
		}
		return nil
	}
	if _, err := kafka.ReadToEnd(ctx, opts.Brokers, topic, from, fn, opts.Opts...); err != nil && !errors.Is(err, errEnough) {
		return nil, fmt.Errorf("record: %w", err)
	}
	out := make([][]Recorded, 0, len(got))
	for _, p := range slices.Sorted(maps.Keys(got)) {
		out = append(out, got[p])
	}
	return out, nil
}

func recorded(kr *kgo.Record) Recorded {
	return Recorded{Topic: kr.Topic, Partition: kr.Partition, Offset: kr.Offset, Key: kr.Key, Value: kr.Value,
		Timestamp: kr.Timestamp.UnixMilli(), Headers: slices.Clone(kr.Headers)}
}

// Merge merges partitions the way the engine dispatches them: each
// partition in offset order, never reordered, and across partitions the
// record with the oldest timestamp at the head first; ties go to the
// lesser topic, then the lesser partition. Every element of parts is one
// partition's records in offset order. With limit above 0 only the first
// limit records are returned.
func Merge(parts [][]Recorded, limit int) []Recorded {
	heads := make([][]Recorded, 0, len(parts))
	total := 0
	for _, p := range parts {
		if len(p) > 0 {
			heads = append(heads, p)
			total += len(p)
		}
	}
	if limit > 0 {
		total = min(total, limit)
	}
	out := make([]Recorded, 0, total)
	for len(heads) > 0 && len(out) < total {
		best := 0
		for i := 1; i < len(heads); i++ {
			a, b := &heads[i][0], &heads[best][0]
			if a.Timestamp < b.Timestamp || a.Timestamp == b.Timestamp && (a.Topic < b.Topic || a.Topic == b.Topic && a.Partition < b.Partition) {
				best = i
			}
		}
		out = append(out, heads[best][0])
		if heads[best] = heads[best][1:]; len(heads[best]) == 0 {
			heads = slices.Delete(heads, best, best+1)
		}
	}
	return out
}

// mergeRule is the comment a recorded fixture opens with.
const mergeRule = `# Records are in the order the engine dispatches them: each partition in
# offset order, never reordered, and across partitions the record with the
# oldest timestamp at the head first (ties: topic, then partition).
`

// FixtureOptions say how WriteFixture writes a recording.
type FixtureOptions struct {
	// Topology is the fixture's topology reference; empty leaves the
	// field out, with a comment asking for it.
	Topology string
	// RecordsFile, when set, is the records-file step's file (relative
	// to the fixture) in place of inline record steps; WriteRecords
	// writes its contents.
	RecordsFile string
	// Serdes, when set, gives the serdes the topology reads a topic with
	// (see SourceSerdes). Keys and values are then written decoded, a JSON
	// document as a mapping and a long as a number, so that the fixture
	// reads as what the topology sees and replays through the same
	// serdes; bytes a serde cannot decode are written as they are.
	Serdes func(topic string) (key, value serde.Any, ok bool)
}

// SourceSerdes returns the serdes f's topology reads each topic with, for
// FixtureOptions.Serdes.
func SourceSerdes(f *topofile.File) (func(topic string) (key, value serde.Any, ok bool), error) {
	conf := maps.Clone(f.Config)
	if conf == nil {
		conf = map[string]string{}
	}
	if conf[config.ApplicationID] == "" {
		conf[config.ApplicationID] = "replay-record"
	}
	built, err := f.Topology.Build(config.New(conf))
	if err != nil {
		return nil, err
	}
	return func(topic string) (serde.Any, serde.Any, bool) {
		n, ok := built.SourceNodeFor(topic)
		if !ok || n.Source == nil {
			return nil, nil, false
		}
		return n.Source.KeySerde, n.Source.ValueSerde, true
	}, nil
}

// SourceTopics returns the topics f's topology reads from Kafka, sorted:
// its sources' topics, not its in-memory boundaries.
func SourceTopics(f *topofile.File) ([]string, error) {
	conf := maps.Clone(f.Config)
	if conf == nil {
		conf = map[string]string{}
	}
	if conf[config.ApplicationID] == "" {
		conf[config.ApplicationID] = "replay-record"
	}
	built, err := f.Topology.Build(config.New(conf))
	if err != nil {
		return nil, err
	}
	var out []string
	for topic := range built.SourceTopics {
		if _, boundary := built.Boundaries[topic]; !boundary {
			out = append(out, topic)
		}
	}
	slices.Sort(out)
	return out, nil
}

// decoded renders b, read by s, as JSON text (which is also YAML): false
// when there is no serde, it is a raw one, or it cannot read b.
func decoded(s serde.Any, topic string, b []byte) (string, bool) {
	if s == nil || b == nil || s.Name() == "bytes" || strings.Contains(s.Name(), "windowed(") {
		return "", false
	}
	v, err := Decode(s, topic, b)
	if err != nil {
		return "", false
	}
	j, err := json.Marshal(v)
	if err != nil {
		return "", false
	}
	return string(j), true
}

// keyValueText renders a record's key and value: decoded through opts'
// serdes when it has them for the topic, else as yamlBytes (raw) does.
func keyValueText(r *Recorded, opts FixtureOptions, raw func([]byte) (string, error)) (key, value string, err error) {
	var ks, vs serde.Any
	if opts.Serdes != nil {
		ks, vs, _ = opts.Serdes(r.Topic)
	}
	text := func(s serde.Any, b []byte, what string) (string, error) {
		if t, ok := decoded(s, r.Topic, b); ok {
			return t, nil
		}
		t, err := raw(b)
		if err != nil {
			return "", fmt.Errorf("record %s: %s %w", r.Source(), what, err)
		}
		return t, nil
	}
	if key, err = text(ks, r.Key, "key"); err != nil {
		return "", "", err
	}
	value, err = text(vs, r.Value, "value")
	return key, value, err
}

// WriteFixture writes the recording as a fixture: a comment with the merge
// rule and the ranges read, the topology reference, and the steps, each
// inline record preceded by a comment naming its source,
// topic[partition]@offset. It writes no expect section: `stoatctl replay
// --update` fills it in. Keys, values and header values that are not
// UTF-8 are written as !!binary (base64). The output holds nothing but
// the recording and opts, so the same slice gives the same file.
func (rec *Recording) WriteFixture(w io.Writer, opts FixtureOptions) error {
	bw := bufio.NewWriter(w)
	var topics []string
	for _, r := range rec.Ranges {
		if !slices.Contains(topics, r.Topic) {
			topics = append(topics, r.Topic)
		}
	}
	fmt.Fprintf(bw, "# Recorded by stoatctl replay record from %s: %d records.\n", strings.Join(topics, ", "), len(rec.Records))
	bw.WriteString(mergeRule)
	if opts.RecordsFile == "" {
		bw.WriteString("# The comment above each record is its source: topic[partition]@offset.\n")
	} else {
		fmt.Fprintf(bw, "# %s holds the records in that order.\n", opts.RecordsFile)
	}
	bw.WriteString("# Offsets read, per partition (from, up to but not including to):\n")
	for _, r := range rec.Ranges {
		fmt.Fprintf(bw, "#   %s[%d]: %d to %d, %d records\n", r.Topic, r.Partition, r.From, r.To, r.Records)
	}
	if opts.Topology == "" {
		bw.WriteString("# topology: set to a topology file or a registered topology name\n")
	} else {
		fmt.Fprintf(bw, "topology: %s\n", yamlString(opts.Topology))
	}
	switch {
	case opts.RecordsFile != "":
		fmt.Fprintf(bw, "steps:\n  - records-file: %s\n", yamlString(opts.RecordsFile))
	case len(rec.Records) == 0:
		bw.WriteString("steps: []\n")
	default:
		bw.WriteString("steps:\n")
		var line bytes.Buffer
		for i := range rec.Records {
			r := &rec.Records[i]
			line.Reset()
			if err := yamlRecord(&line, r, opts); err != nil {
				return err
			}
			fmt.Fprintf(bw, "  # %s\n  - %s\n", r.Source(), line.Bytes())
		}
	}
	bw.WriteString(fillInComment)
	return bw.Flush()
}

// yamlRecord writes a record step as a one-line flow mapping.
func yamlRecord(b *bytes.Buffer, r *Recorded, opts FixtureOptions) error {
	key, value, err := keyValueText(r, opts, func(b []byte) (string, error) { return yamlBytes(b), nil })
	if err != nil {
		return err
	}
	fmt.Fprintf(b, "{topic: %s, key: %s, value: %s, timestamp: %d", yamlString(r.Topic), key, value, r.Timestamp)
	if len(r.Headers) > 0 {
		if err := checkHeaders(r); err != nil {
			return err
		}
		b.WriteString(", headers: {")
		for i, h := range r.Headers {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(b, "%s: %s", yamlString(h.Key), yamlBytes(h.Value))
		}
		b.WriteByte('}')
	}
	b.WriteByte('}')
	return nil
}

// checkHeaders refuses headers a fixture cannot hold: a repeated name (a
// fixture's headers are a mapping) or a name that is not UTF-8.
func checkHeaders(r *Recorded) error {
	for i, h := range r.Headers {
		if !utf8.ValidString(h.Key) {
			return fmt.Errorf("record %s: header name %q is not UTF-8, which a fixture cannot hold", r.Source(), h.Key)
		}
		if slices.ContainsFunc(r.Headers[:i], func(o kgo.RecordHeader) bool { return o.Key == h.Key }) {
			return fmt.Errorf("record %s: header %q is repeated, which a fixture cannot hold (its headers are a mapping)", r.Source(), h.Key)
		}
	}
	return nil
}

// yamlBytes writes a key, value or header value: null, a string when the
// bytes are UTF-8, else !!binary base64.
func yamlBytes(b []byte) string {
	switch {
	case b == nil:
		return "null"
	case utf8.Valid(b):
		return yamlString(string(b))
	}
	return `!!binary "` + base64.StdEncoding.EncodeToString(b) + `"`
}

// yamlString writes s as a YAML double-quoted scalar on one line, with
// every character YAML does not allow raw, or that would break the line,
// escaped. s must be UTF-8.
func yamlString(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for _, c := range s {
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteRune(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\t':
			b.WriteString(`\t`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == 0x2028 || c == 0x2029:
			// YAML reads the line and paragraph separators as line
			// breaks, even inside a quoted scalar.
			fmt.Fprintf(&b, `\u%04x`, c)
		case c >= 0x20 && c <= 0x7e, c >= 0xa0 && c <= 0xd7ff, c >= 0xe000 && c <= 0xfffd && c != 0xfeff, c >= 0x10000 && c <= 0x10ffff:
			b.WriteRune(c)
		case c <= 0xff:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			fmt.Fprintf(&b, `\u%04x`, c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// WriteRecords writes the recording's records as a JSON Lines records
// file, in merged order. JSON Lines has no comments, so the records'
// sources are not kept, and no form for bytes that are not UTF-8: such a
// key, value or header fails, naming the record's topic, partition and
// offset.
func (rec *Recording) WriteRecords(w io.Writer) error {
	return rec.WriteRecordsWith(w, FixtureOptions{})
}

// WriteRecordsWith is WriteRecords with keys and values decoded through
// opts.Serdes, as WriteFixture does.
func (rec *Recording) WriteRecordsWith(w io.Writer, opts FixtureOptions) error {
	bw := bufio.NewWriter(w)
	for i := range rec.Records {
		r := &rec.Records[i]
		if err := recordLine(bw, r, opts); err != nil {
			return err
		}
	}
	return bw.Flush()
}

func recordLine(w *bufio.Writer, r *Recorded, opts FixtureOptions) error {
	str := func(what string, b []byte) ([]byte, error) {
		if b == nil {
			return []byte("null"), nil
		}
		if !utf8.Valid(b) {
			return nil, fmt.Errorf("record %s: %s is not UTF-8, which a records file cannot hold (record without --records-file to write it as !!binary)", r.Source(), what)
		}
		return marshal(string(b))
	}
	topic, _ := marshal(r.Topic)
	key, value, err := keyValueText(r, opts, func(b []byte) (string, error) {
		if b != nil && !utf8.Valid(b) {
			return "", errors.New("is not UTF-8, which a records file cannot hold (record without --records-file to write it as !!binary)")
		}
		t, err := str("", b)
		return string(t), err
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, `{"topic":%s,"key":%s,"value":%s,"timestamp":%d`, topic, key, value, r.Timestamp)
	if len(r.Headers) > 0 {
		if err := checkHeaders(r); err != nil {
			return err
		}
		w.WriteString(`,"headers":{`)
		for i, h := range r.Headers {
			name, _ := marshal(h.Key)
			v, err := str(fmt.Sprintf("header %q", h.Key), h.Value)
			if err != nil {
				return err
			}
			if i > 0 {
				w.WriteByte(',')
			}
			fmt.Fprintf(w, "%s:%s", name, v)
		}
		w.WriteByte('}')
	}
	w.WriteString("}\n")
	return nil
}
