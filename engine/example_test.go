package engine_test

import (
	"context"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/serde"
)

func ExampleNew() {
	// The same topology as the test driver's example.
	str := serde.String()
	b := dsl.NewBuilder()
	sentences := dsl.Stream(b, dsl.ConsumedWith(str, str), "sentences")
	dsl.MapValues(sentences, func(_, v string) string { return strings.ToUpper(v) }).
		To("shouted", dsl.ProducedWith(str, str))

	// Run it on Kafka until SIGINT or SIGTERM, which commit a final
	// barrier first. Exactly-once unless processing.guarantee says
	// at_least_once.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := engine.New(b.Topology(), map[string]string{
		"application.id":     "shout",
		"bootstrap.servers":  "localhost:9092",
		"num.stream.threads": "4",
	}).Run(ctx)
	if err != nil {
		log.Fatal(err)
	}
}
