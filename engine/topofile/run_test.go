package topofile

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/fixtures/examples"
	"github.com/stoatflow/stoatctl/testdriver"
)

// input is a record to pipe: key and value as the bytes of their text
// (the string serde's and the json serde's layouts alike).
type input struct {
	topic, key, value string
	ts                int64
}

// out is an output record rendered as text: keys as written, windowed
// keys as "key@start" (time windows) or "key@start-end" (sessions),
// values decoded with the named codec.
type out struct {
	key, value string
	ts         int64
}

type codec struct {
	// key: "string" or "windowed" or "session"; value: "string", "long",
	// "json".
	key, value string
}

func runFile(t *testing.T, f *File, inputs []input, advance int64, topic string, cd codec) []out {
	t.Helper()
	d, err := testdriver.New(f.Topology, f.Config)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	}()
	topics := map[string]*testdriver.InputTopic[[]byte, []byte]{}
	for i, in := range inputs {
		tp, ok := topics[in.topic]
		if !ok {
			tp = testdriver.CreateInputTopic(d, in.topic, serde.Bytes(), serde.Bytes())
			topics[in.topic] = tp
		}
		if err := tp.PipeInputAt([]byte(in.key), []byte(in.value), in.ts); err != nil {
			t.Fatalf("input %d (%s %s=%s): %v", i+1, in.topic, in.key, in.value, err)
		}
	}
	if advance > 0 {
		if err := d.AdvanceWatermark(advance); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := testdriver.CreateOutputTopic(d, topic, serde.Bytes(), serde.Bytes()).ReadRecordsToList()
	if err != nil {
		t.Fatal(err)
	}
	var got []out
	for _, r := range recs {
		o := out{ts: r.Timestamp}
		switch cd.key {
		case "windowed":
			n := len(r.Key) - 8
			o.key = fmt.Sprintf("%s@%d", r.Key[:n], int64(binary.BigEndian.Uint64(r.Key[n:])))
		case "session":
			n := len(r.Key) - 16
			o.key = fmt.Sprintf("%s@%d-%d", r.Key[:n], int64(binary.BigEndian.Uint64(r.Key[n+8:])), int64(binary.BigEndian.Uint64(r.Key[n:n+8])))
		default:
			o.key = string(r.Key)
		}
		switch {
		case r.ValueNull:
			o.value = "null"
		case cd.value == "long":
			o.value = fmt.Sprint(int64(binary.BigEndian.Uint64(r.Value)))
		default:
			o.value = string(r.Value)
		}
		got = append(got, o)
	}
	return got
}

func loadFixture(t *testing.T, name string) *File {
	t.Helper()
	f, err := Load(fixturePath(name))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func checkOutputs(t *testing.T, got, want []out) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		var b strings.Builder
		for _, o := range got {
			fmt.Fprintf(&b, "\t{%q, %q, %d},\n", o.key, o.value, o.ts)
		}
		t.Fatalf("got:\n%swant:\n%v", b.String(), want)
	}
}

// The word-count file and the Go example of the same name must agree
// record for record: they are one topology written two ways.
func TestWordCountMatchesGoExample(t *testing.T) {
	ex, ok := examples.Lookup("word-count")
	if !ok {
		t.Fatal("no word-count example")
	}
	res, err := examples.Run(ex)
	if err != nil {
		t.Fatal(err)
	}
	var want []out
	for _, r := range res[0].Records {
		want = append(want, out{key: fmt.Sprint(r.Key), value: fmt.Sprint(r.Value), ts: r.Timestamp})
	}
	var inputs []input
	for _, in := range ex.Inputs {
		inputs = append(inputs, input{in.Topic, in.Key, in.Value, in.Timestamp})
	}
	got := runFile(t, loadFixture(t, "word-count"), inputs, 0, "word-counts", codec{"string", "long"})
	checkOutputs(t, got, want)
}

func TestClicksPerMinute(t *testing.T) {
	click := func(page string, ts int64) input {
		return input{"clicks", "u1", fmt.Sprintf(`{"page":%q,"ts":%d}`, page, ts), 0}
	}
	got := runFile(t, loadFixture(t, "clicks-per-minute"), []input{
		click("/home", 1_000),
		click("/home", 30_000),
		click("/cart", 59_999),
		click("/home", 65_000),  // next window
		click("/home", 55_000),  // late, but within grace: counted
		click("/home", 135_000), // closes the first two windows (end + 10s grace)
	}, 0, "clicks-per-minute", codec{"windowed", "long"})
	checkOutputs(t, got, []out{
		{"/cart@0", "1", 59_999},
		{"/home@0", "3", 55_000},
		{"/home@60000", "1", 65_000},
	})
}

func TestSessionization(t *testing.T) {
	view := func(user, page string, ts int64) input {
		return input{"page-views", user, fmt.Sprintf(`{"page":%q}`, page), ts}
	}
	got := runFile(t, loadFixture(t, "sessionization"), []input{
		view("ann", "/", 0),
		view("ann", "/shoes", 60_000),
		view("bob", "/", 90_000),
		view("ann", "/cart", 700_000), // 640s after the last view: a new session
	}, 2_000_000, "sessions", codec{"string", "json"})
	checkOutputs(t, got, []out{
		{"ann", `{"end":60000,"pages":["/","/shoes"],"start":0,"user":"ann","views":2}`, 60_000},
		{"bob", `{"end":90000,"pages":["/"],"start":90000,"user":"bob","views":1}`, 90_000},
		{"ann", `{"end":700000,"pages":["/cart"],"start":700000,"user":"ann","views":1}`, 700_000},
	})
}

func TestOrdersPayments(t *testing.T) {
	got := runFile(t, loadFixture(t, "orders-payments"), []input{
		{"orders", "o1", `{"customer":"c1","amount":10}`, 1_000},
		{"payments", "o1", `{"amount":10,"method":"card"}`, 120_000},
		{"orders", "o2", `{"customer":"c2","amount":5}`, 130_000},
		{"payments", "o3", `{"amount":7,"method":"cash"}`, 140_000}, // no order: an inner side drops it
	}, 3_600_000, "order-status", codec{"string", "json"})
	checkOutputs(t, got, []out{
		{"o1", `{"amount":10,"customer":"c1","method":"card","paid":true}`, 120_000},
		{"o2", `{"amount":5,"customer":"c2","method":null,"paid":false}`, 130_000},
	})
}

func TestAlertSuppress(t *testing.T) {
	fail := func(user string, ts int64) input { return input{"logins", user, `{"ok":false}`, ts} }
	got := runFile(t, loadFixture(t, "alert-suppress"), []input{
		fail("ann", 1_000),
		fail("ann", 2_000),
		{"logins", "ann", `{"ok":true}`, 3_000},
		fail("bob", 4_000),
		fail("ann", 5_000),
		fail("ann", 6_000),
		fail("bob", 400_000), // closes the first window (300s + 30s grace)
	}, 0, "login-alerts", codec{"string", "json"})
	checkOutputs(t, got, []out{
		{"ann", `{"failures":4,"user":"ann","window_start":0}`, 6_000},
	})
}

func TestEnrichOrders(t *testing.T) {
	got := runFile(t, loadFixture(t, "enrich-orders"), []input{
		{"customers", "c1", `{"name":"Alice","tier":"gold"}`, 1_000},
		{"orders", "c1", `{"item":"coffee","qty":2}`, 2_000},
		{"orders", "c3", `{"item":"tea","qty":1}`, 2_500},
		{"customers", "c1", `{"name":"Alice Smith"}`, 3_000},
		{"orders", "c1", `{"item":"water","qty":1}`, 4_000},
	}, 0, "orders-enriched", codec{"string", "json"})
	checkOutputs(t, got, []out{
		{"c1", `{"customer":"Alice","item":"coffee","qty":2,"tier":"gold"}`, 2_000},
		{"c3", `{"customer":null,"item":"tea","qty":1,"tier":"unknown"}`, 2_500},
		{"c1", `{"customer":"Alice Smith","item":"water","qty":1,"tier":"unknown"}`, 4_000},
	})
}

// driver is a test driver with byte-valued input topics.
type driver struct {
	d *testdriver.Driver
}

func newDriver(f *File) (*driver, error) {
	d, err := testdriver.New(f.Topology, f.Config)
	if err != nil {
		return nil, err
	}
	return &driver{d: d}, nil
}

func (d *driver) pipe(topic, key, value string, ts int64) error {
	return testdriver.CreateInputTopic(d.d, topic, serde.Bytes(), serde.Bytes()).PipeInputAt([]byte(key), []byte(value), ts)
}

func (d *driver) close() { _ = d.d.Close() }
