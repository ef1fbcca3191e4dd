// Package replay runs fixture files through the test driver and compares
// what the topology wrote with what the fixture expects.
//
// Terms:
//   - A fixture is a YAML file (conventionally *.fixture.yaml) naming a
//     topology, the driver settings to run it with, an ordered list of
//     steps and the expected results. docs/fixtures.md is the user's
//     reference; docs/fixture.schema.json its JSON Schema.
//   - A step is one thing done to the driver: pipe a record, advance the
//     watermark, advance the wall clock, commit a barrier, or pipe every
//     record of a JSON Lines records file. A step may have a label.
//   - A fixture value is a key or value as the fixture writes it (a YAML or
//     JSON scalar, object or list). Inputs are serialized with the serde
//     of the source that reads the topic; outputs are decoded with the
//     serde of the sink that writes it; both sides are compared as
//     canonical JSON (object keys sorted, integral numbers without a
//     fraction), so 3 and 3.0 are the same value.
//   - An expectation is a list of records per output topic (or only their
//     count), the entries of a state store, or drop counts by reason.
//     Every topic a sink writes is checked: a topic the fixture does not
//     list must stay empty.
//   - An output's order is how its records are compared: in-order (as
//     written), multiset (in any order) or per-key (each key's records in
//     order, none across keys); see order.go.
//   - An expected record's after is the step during which it must be
//     written, by number or label: each written record carries the step
//     it was collected at.
//   - A settle (engine mode) waits until the engine has dispatched what
//     a step produced and emitted and committed everything it made due;
//     a run of record steps that cannot tell the difference shares one
//     (settle.go).
//   - A result is one fixture's outcome: pass, fail (the run finished but
//     an expectation did not hold) or error (the fixture could not be run).
//
// Output is deterministic: reports carry no durations, timestamps or
// absolute paths, and paths appear as the caller gave them.
package replay
