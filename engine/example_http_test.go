package engine_test

import (
	"context"
	"log"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/serde"
)

func ExampleWithHTTP() {
	str := serde.String()
	b := dsl.NewBuilder()
	dsl.Stream(b, dsl.ConsumedWith(str, str), "sentences").To("copied", dsl.ProducedWith(str, str))

	// Serve the REST API (GET /watermarks, /info, /metrics, ...; POST
	// /pause and /resume) on loopback while the engine runs. Beyond
	// loopback, set HTTP.Token: POST requests must then carry it.
	e := engine.New(b.Topology(), map[string]string{
		"application.id":                    "copy",
		"bootstrap.servers":                 "localhost:9092",
		"stoatflow.metrics.recording.level": "debug",
	}, engine.WithHTTP(engine.HTTP{Addr: "127.0.0.1:8080"}))
	if err := e.Run(context.Background()); err != nil {
		log.Fatal(err)
	}
}
