package testdriver_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/testdriver"
)

// shouting is a string serde that writes upper case: a sink with it must
// encode even a key that passed through unchanged.
type shouting struct{}

func (shouting) Name() string { return "shouting" }
func (shouting) Serialize(_ string, v string) ([]byte, error) {
	return []byte(strings.ToUpper(v)), nil
}
func (shouting) Deserialize(_ string, b []byte) (string, error) { return string(b), nil }

// TestSinkKeyBytes: a sink writes a String key the source decoded, and
// left unchanged, as the bytes it arrived with; any other key, or any
// other serde at either end, is encoded. Each case's output bytes are
// what encoding would have written.
func TestSinkKeyBytes(t *testing.T) {
	invalid := string([]byte{0xff, 'k', 0xfe})
	cases := []struct {
		name     string
		in       serde.Serde[string] // the source's key serde
		out      serde.Serde[string] // the sink's
		rekey    func(string) string
		keys     []string
		wantKeys []string
	}{
		{"unchanged", str, str, nil, []string{"a", "", invalid}, []string{"a", "", invalid}},
		{"rekeyed", str, str, func(k string) string { return k + "!" }, []string{"a", ""}, []string{"a!", "!"}},
		{"rebuilt equal", str, str, func(k string) string { return string([]byte(k)) }, []string{"a"}, []string{"a"}},
		{"other sink serde", str, shouting{}, nil, []string{"a"}, []string{"A"}},
		{"other source serde", shouting{}, str, nil, []string{"a"}, []string{"a"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bld := dsl.NewBuilder()
			s := dsl.Stream(bld, dsl.ConsumedWith(c.in, serde.Bytes()), "in")
			if c.rekey != nil {
				s = dsl.SelectKey(s, func(k string, _ []byte) string { return c.rekey(k) })
			}
			s.To("out", dsl.ProducedWith(c.out, serde.Bytes()))
			d, err := testdriver.New(bld.Topology(), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			for _, k := range c.keys {
				if err := d.PipeRaw("in", testdriver.RawRecord{Key: []byte(k), Value: []byte("v")}); err != nil {
					t.Fatal(err)
				}
			}
			var got []string
			for _, r := range d.ReadRaw("out") {
				got = append(got, string(r.Key))
				if r.Key == nil {
					t.Errorf("key %q came out null", r.Key)
				}
			}
			if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", c.wantKeys) {
				t.Errorf("keys %q, want %q", got, c.wantKeys)
			}
		})
	}
}

// TestBorrowedValueIsCapped: a bytes value handed to a processor shares
// the input's bytes but has no room past them, so a processor that
// appends to it cannot write into the next record's.
func TestBorrowedValueIsCapped(t *testing.T) {
	bld := dsl.NewBuilder()
	dsl.MapValues(dsl.Stream(bld, dsl.ConsumedWith(str, serde.Bytes()), "in"), func(_ string, v []byte) []byte {
		return append(v, '+')
	}).To("out", dsl.ProducedWith(str, serde.Bytes()))
	d, err := testdriver.New(bld.Topology(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	// Two values in one array, the first capped short of the second, as
	// a fetch's records lie.
	buf := []byte("onetwo")
	for _, v := range [][]byte{buf[:3], buf[3:]} {
		if err := d.PipeRaw("in", testdriver.RawRecord{Key: []byte("k"), Value: v}); err != nil {
			t.Fatal(err)
		}
	}
	var got [][]byte
	for _, r := range d.ReadRaw("out") {
		got = append(got, r.Value)
	}
	if want := [][]byte{[]byte("one+"), []byte("two+")}; len(got) != 2 || !bytes.Equal(got[0], want[0]) || !bytes.Equal(got[1], want[1]) {
		t.Errorf("values %q, want %q", got, want)
	}
	if string(buf) != "onetwo" {
		t.Errorf("the input's bytes were written to: %q", buf)
	}
}
