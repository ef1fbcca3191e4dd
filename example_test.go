package main_test

// README.md shows this file from its import block down; TestReadmeExample
// keeps the two identical.

import (
	"fmt"
	"log"
	"strings"

	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/testdriver"
)

func Example_uppercase() {
	// A topology: read "sentences", drop blank ones, upper-case the rest,
	// write "shouted".
	str := serde.String()
	b := dsl.NewBuilder()
	sentences := dsl.Stream(b, dsl.ConsumedWith(str, str), "sentences")
	nonBlank := sentences.Filter(func(_, v string) bool { return strings.TrimSpace(v) != "" })
	dsl.MapValues(nonBlank, func(_, v string) string { return strings.ToUpper(v) }).
		To("shouted", dsl.ProducedWith(str, str))

	// Run it with the test driver: no Kafka, one goroutine, a manual clock.
	d, err := testdriver.New(b.Topology(), map[string]string{"application.id": "shout"})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	in := testdriver.CreateInputTopic(d, "sentences", str, str)
	out := testdriver.CreateOutputTopic(d, "shouted", str, str)
	for _, kv := range []testdriver.KeyValue[string, string]{{Key: "alice", Value: "hello"}, {Key: "bob", Value: " "}} {
		if err := in.PipeInput(kv.Key, kv.Value); err != nil {
			log.Fatal(err)
		}
	}
	records, err := out.ReadKeyValuesToList()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(records)
	// Output: [{alice HELLO}]
}
