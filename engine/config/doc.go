// Package config holds an application's configuration: Kafka Streams-style
// keys (application.id, default.key.serde, num.stream.threads, ...) and the
// engine's own stoatflow.* keys, as strings, with typed accessors that name
// the key at fault when a value does not parse.
//
// The catalogue (catalog.go) lists every key stoatctl reads: its type,
// default, description and the components that read it (processing core,
// live engine, Kafka client, test driver). Defaults derive from it, Check
// holds a configuration against it (an unknown key, with the closest known
// one; a value that does not parse for its type), and docs/configuration.md
// is generated from it.
//
// Precedence (flag, -X, environment, file, default) is applied by the
// command layer; this package stores the merged result.
package config
