// Package config holds an application's configuration: Kafka Streams-style
// keys (application.id, default.key.serde, num.stream.threads, ...) and the
// engine's own stoatflow.* keys, as strings, with typed accessors that name
// the key at fault when a value does not parse.
//
// Precedence (flag, -X, environment, file, default) is applied by the
// command layer; this package only stores the merged result and the
// defaults.
package config
