package interop

// Mirror is one topology that exists both as a Kafka Streams application
// in the runner and as ours.
type Mirror struct {
	// Name is the runner's topology name, and the base name of the input
	// file testdata/NAME.jsonl.
	Name string
	// Ours is our topology: a file under topologies/ (relative to this
	// folder) or the name of a Go example (fixtures/examples).
	Ours string
	// Phases lists the input topics in the order they are fed on a broker:
	// every record of one phase is consumed and committed before the next
	// phase is produced. A stream-table join needs its table first, or
	// the order in which the two topics are fetched decides the output.
	Phases [][]string
	// Outputs are the sink topics with the layout of their keys and values.
	Outputs []Output
	// Rekeys is set when the topology groups by a new key. Records of one
	// new key then come from every input partition, in an order that
	// depends on fetching (in both systems), and so do the results'
	// timestamps (an aggregate is stamped with the latest of its records'
	// times, Kafka Streams' rule and ours); the broker tests give such a
	// mirror one input partition, so that the order is the input's.
	Rekeys bool
	// Answers is set for a foreign-key join: an answer to a left value
	// since replaced may reach the resolver before the replacement does,
	// and is then joined, a row the other system may not write: Kafka
	// Streams' answers cross two topics and nearly always come after the
	// replacement, ours cross lanes in memory and come first now and
	// then. The broker tests then require Kafka Streams' rows of a key,
	// in order, among ours, and the same last row.
	Answers bool
}

// Output is a sink topic and how to decode its records.
type Output struct {
	Topic string
	Key   Layout
	Value Layout
	// WindowSize of a time-windowed key, in milliseconds: the layout holds
	// the start only, and the end is start + size.
	WindowSize int64
}

// Layout names a byte layout of keys or values.
type Layout string

// Layouts used by the mirrors; the windowed ones are Kafka Streams'.
const (
	String Layout = "string"
	Long   Layout = "long" // 8 bytes, big-endian
	// TimeWindowed is the key's bytes, then the window start (8 bytes).
	TimeWindowed Layout = "time-windowed"
	// SessionWindowed is the key's bytes, then the end and the start.
	SessionWindowed Layout = "session-windowed"
)

// Mirrors are the mirrored topologies.
var Mirrors = []Mirror{
	{Name: "word-count", Ours: "topologies/word-count.yaml", Phases: [][]string{{"lines"}}, Rekeys: true,
		Outputs: []Output{{Topic: "word-counts", Key: String, Value: Long}}},
	{Name: "window-close", Ours: "topologies/window-close.yaml", Phases: [][]string{{"clicks"}}, Rekeys: true,
		Outputs: []Output{{Topic: "clicks-per-minute", Key: TimeWindowed, Value: Long, WindowSize: 60_000}}},
	{Name: "session-count", Ours: "topologies/session-count.yaml", Phases: [][]string{{"page-views"}},
		Outputs: []Output{{Topic: "session-counts", Key: SessionWindowed, Value: Long}}},
	{Name: "suppress", Ours: "topologies/suppress.yaml", Phases: [][]string{{"logins"}},
		Outputs: []Output{{Topic: "login-counts", Key: TimeWindowed, Value: Long, WindowSize: 300_000}}},
	{Name: "table", Ours: "topologies/table.yaml", Phases: [][]string{{"users"}},
		Outputs: []Output{{Topic: "users-out", Key: String, Value: String}}},
	{Name: "stream-table-join", Ours: "topologies/stream-table-join.yaml", Phases: [][]string{{"customers"}, {"orders"}},
		Outputs: []Output{{Topic: "orders-enriched", Key: String, Value: String}}},
	// The prices of each half come before its orders (phases), and orders
	// read prices as of their own time, some older than the latest
	// version: their output does not depend on the order in which the two
	// topics are fetched, only on the history the table keeps.
	{Name: "versioned-table-join", Ours: "topologies/versioned-table-join.yaml", Phases: [][]string{{"prices"}, {"orders"}},
		Outputs: []Output{{Topic: "orders-priced", Key: String, Value: String}}},
	// The same with a grace period: one input partition and one lane, as
	// the join's buffer keeps a task's stream time in Kafka Streams and a
	// lane's in ours (docs/concepts.md). On a broker the prices come
	// first; the driver test feeds the file's order, late prices between
	// the orders they concern.
	{Name: "versioned-grace-join", Ours: "topologies/versioned-grace-join.yaml", Phases: [][]string{{"prices"}, {"orders"}}, Rekeys: true,
		Outputs: []Output{{Topic: "orders-priced", Key: String, Value: String}}},
	// A foreign-key join: subscriptions cross from the orders' side to the
	// customers', answers back. Customers first: an order whose customer
	// is not there yet joins when it comes, a row Kafka Streams and ours
	// would emit at different moments when both topics are fetched at
	// once.
	{Name: "fk-join", Ours: "topologies/fk-join.yaml", Phases: [][]string{{"customers"}, {"orders"}}, Answers: true,
		Outputs: []Output{{Topic: "order-rows", Key: String, Value: String}}},
	{Name: "fk-left-join", Ours: "topologies/fk-left-join.yaml", Phases: [][]string{{"customers"}, {"orders"}}, Answers: true,
		Outputs: []Output{{Topic: "order-rows", Key: String, Value: String}}},
	{Name: "processor-store", Ours: "running-total", Phases: [][]string{{"amounts"}},
		Outputs: []Output{{Topic: "totals-out", Key: String, Value: Long}}},
}

// Topics returns the mirror's input topics, in phase order.
func (m Mirror) Topics() []string {
	var ts []string
	for _, p := range m.Phases {
		ts = append(ts, p...)
	}
	return ts
}
