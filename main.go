// Command stoatctl is a stream-processing engine for Apache Kafka with Kafka
// Streams' programming model. See README.md and `stoatctl --help`.
//
// It is package cli's Main and nothing else: a program that registers its
// own topologies and calls cli.Main is the same binary with those
// topologies added (examples/custom-binary).
package main

import "github.com/stoatflow/stoatctl/cli"

// Set at link time by scripts/build.sh:
//
//	go build -ldflags "-X main.version=v0.1.0 -X main.commit=abc1234"
var (
	version string
	commit  string
)

func main() {
	cli.Main(cli.WithStamp(version, commit))
}
