// Package topofile reads declarative topology files (YAML) and compiles
// them into the Go DSL, so a topology written without Go runs on the same
// processors as one written in Go. docs/topology-files.md documents the
// format for users; this comment defines the terms the code uses.
//
//   - A file has sources, tables and global tables (named inputs) and
//     pipelines. A pipeline reads one name (or merges several streams) and
//     applies a list of steps; each step is one DSL operation with its
//     options.
//   - A flow is what a name or a step stands for: a stream, a table, a
//     grouped stream, a windowed grouping, a grouped table (flows.go), a
//     global table, which only the global joins read (global.go). The
//     DSL is generic; a file's values are dynamically typed, so every flow
//     has values of type any, and keys of type any or, after a windowed
//     aggregation, window.Windowed[any].
//   - A scope is the set of names an expression may use, with the static
//     types the checker knows (expr.go): a serde with a Go type gives its
//     values that type, JSON and Avro give unknown types. Expressions are
//     compiled and type-checked when the file loads.
//   - An evaluation failure is an expression that compiled but failed on a
//     record. Steps built on the Processor API (filter, map, ...) return
//     it as the record's error; DSL callbacks without an error result
//     (aggregators, joiners) carry it in place of the value until a step
//     or a serde of this package turns it back into the error.
//   - A dynamic serde (serdes.go) adapts a named serde to the any-typed
//     DSL and converts numbers to the serde's type when nothing is lost.
//   - An evaluator (expr.go) is what one processor keeps to run its
//     programs record after record: a VM, and an environment refilled in
//     place with only the names its programs read. Programs are compiled
//     once, at load, and shared by every task; evaluators are not.
//   - A fast path (fastpath.go) is a program of a small typed subset
//     (string keys and values, upper, lower, trim, +, comparisons, and,
//     or, not) compiled at load into Go functions that read the record
//     without a VM or an environment, and decline, for the VM to run the
//     program, a value whose run-time type is not the one the checker was
//     told.
//   - A stream step's processor writes to a plain sink after it itself
//     (a sink hop, flows.go) when its serdes are fixed-layout ones, and a
//     map-values whose fast path gives a string between a String source
//     and a String sink takes its records from the source through an
//     entry (entry.go): the typed edges of docs/decisions/0023, for
//     files (docs/decisions/0031).
//
// The compiler walks the YAML nodes and calls the DSL as it goes, so every
// error carries the line and column of the node at fault, and generated
// node names follow the order of the file.
package topofile
