package testdriver_test

import (
	"testing"

	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/testdriver"
)

// fkBenchForeignKey names, for a left value "value-NNNNNNN", the right
// key "key-MMMMM" with MMMMM = NNNNNNN mod benchKeys: the key a key join
// of the same record would meet, so both joins look up the same rows and
// the ratio is the price of the foreign-key join's three boundaries and
// three stores.
func fkBenchForeignKey(v string) string {
	n := 0
	for _, c := range v[len("value-"):] {
		n = n*10 + int(c-'0')
	}
	b := []byte("key-00000")
	n %= benchKeys
	for i := len(b) - 1; n > 0; i-- {
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b)
}

// BenchmarkForeignKeyJoin is a foreign-key inner join of two tables
// through the driver, against a key table-table join of the same input
// (the baseline, so ratio-to-baseline is the foreign-key join's speed
// relative to a key join's): 1 M records over 10 k keys alternating
// between the two tables as in BenchmarkStreamStreamJoin.
func BenchmarkForeignKeyJoin(b *testing.B) {
	str := serde.String()
	build := func(fk bool) *testdriver.Driver {
		bld := dsl.NewBuilder()
		left := dsl.Table(bld, "left", dsl.ConsumedWith(str, str))
		right := dsl.Table(bld, "right", dsl.ConsumedWith(str, str))
		joiner := func(l, r string) string { return l + "+" + r }
		var j dsl.KTable[string, string]
		if fk {
			j = dsl.TableJoinForeignKey(left, right, fkBenchForeignKey, joiner)
		} else {
			j = dsl.TableJoin(left, right, joiner)
		}
		j.ToStream().To("out", dsl.ProducedWith(str, str))
		d, err := testdriver.New(bld.Topology(), map[string]string{"default.key.serde": "string", "default.value.serde": "string"})
		if err != nil {
			b.Fatal(err)
		}
		return d
	}
	run := func(fk bool) func() {
		return func() {
			d := build(fk)
			pipeTwo(b, d, benchInput)
			d.Close()
		}
	}
	measure(b, run(true), run(false))
}
