// Command stoatctl is a stream-processing engine for Apache Kafka with Kafka
// Streams' programming model. See README.md and `stoatctl --help`.
package main

import (
	"os"

	"github.com/stoatflow/stoatctl/cmd"
)

// Set at link time by scripts/build.sh:
//
//	go build -ldflags "-X main.version=v0.1.0 -X main.commit=abc1234"
var (
	version string
	commit  string
)

func main() {
	os.Exit(cmd.Run(os.Args[1:], os.Stdout, os.Stderr, cmd.WithStamp(version, commit)))
}
