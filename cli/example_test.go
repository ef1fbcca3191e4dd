package cli_test

import (
	"context"
	"fmt"

	"github.com/stoatflow/stoatctl/cli"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/topology"
)

// A program's main registers its topologies and hands the command line to
// cli.Main; here Run stands in for Main so that the example can print its
// output. examples/custom-binary is the whole program, with a Processor
// API topology and a store.
func Example() {
	str := serde.String()
	err := cli.Register(cli.Topology{
		Name:        "passthrough",
		Description: "copies in to out",
		Build: func() *topology.Topology {
			return topology.New().
				AddSource("in-source", topology.ConsumedWith(str, str).Spec(), "in").
				AddSink("out-sink", topology.ProducedWith(str, str).Spec("out"), "out", "in-source")
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	// In main: cli.Main()
	code := cli.Run(context.Background(), []string{"topology", "describe", "passthrough"})
	fmt.Println("exit", code)
	// Output:
	// Topologies:
	//    Sub-topology: 0
	//     Source: in-source (topics: [in])
	//       --> out-sink
	//     Sink: out-sink (topic: out)
	//       <-- in-source
	//
	// exit 0
}
