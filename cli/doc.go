// Package cli is stoatctl's command line as a library: a program registers
// its own Go topologies and calls Main, and becomes a stoatctl binary that
// knows them by name, with every command (run, migrate, replay, watch,
// topology, broker, ...) the stock binary has. This is how a Kafka Streams
// application written with the Processor API, once ported to this
// module's engine/processor and engine/topology packages, gets migrated
// and run without a program of its own around the migrate and engine
// packages; it is the way xcaddy and xk6 build custom binaries, without a
// build tool: a main package of a few lines.
//
// Terms:
//   - A registered topology is a Topology (a name, a description, the
//     configuration it runs with and a function that builds it) that a
//     program passed to Register before calling Main. Commands accept its
//     name wherever they accept a topology file or a bundled example name
//     (-t NAME, `topology describe NAME`).
//   - A bundled example is one of the topologies stoatctl carries itself
//     (`stoatctl topology list`). They go through the same registry as
//     registered topologies; a registered topology may not take a bundled
//     example's name (Register returns an error wrapping ErrNameTaken, and
//     Main refuses to run at all after a refused registration, so that a
//     mistake cannot go unnoticed).
//
// stoatctl's own main package is Main and nothing else.
package cli
