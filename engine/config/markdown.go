package config

import (
	"fmt"
	"strings"
)

// Markdown is docs/configuration.md, generated from the catalogue; the
// test TestConfigurationDoc fails when the file is stale, and
// go test ./engine/config -run TestConfigurationDoc -update rewrites it.
func Markdown() string {
	var b strings.Builder
	b.WriteString(`# Configuration keys

<!-- Generated from engine/config/catalog.go; do not edit. Regenerate with
     go test ./engine/config -run TestConfigurationDoc -update -->

Every key stoatctl reads, from the topology file's ` + "`config:`" + ` block, a ` + "`-c`" + `
file, ` + "`-X KEY=VALUE`" + `, a fixture's ` + "`driver: config:`" + ` block, or the map given to
` + "`engine.New`" + ` and ` + "`testdriver.New`" + `. ` + "`stoatctl config list`" + ` prints the same
table and ` + "`stoatctl config describe KEY`" + ` one key in full.

` + "`stoatctl run`" + `, ` + "`stoatctl replay`" + ` and ` + "`stoatctl topology validate`" + ` check the
configuration before they start anything:

- a key not listed here is a **warning** naming the closest known key
  ("did you mean num.stream.threads?"); under ` + "`--strict`" + ` it is an error
  and the command exits 2. Kafka Streams' internal keys (such as
  ` + "`__emit.interval.ms.kstreams.windowed.aggregation__`" + `) are unknown here too.
- a value that does not parse for its key's type, or is out of range, is an
  **error** (exit 2 when it came from ` + "`-X`" + `, else 1).
- a key marked *no effect* is accepted, for Kafka Streams compatibility or
  ahead of the feature, and reported as a **note**.

Warnings, errors and notes go to stderr, one line each, naming the key and
where it was set: ` + "`flag -X`" + `, ` + "`FILE:LINE`" + ` of a ` + "`-c`" + ` file, the topology
file's or the fixture's line. A Go program gets the same warning for an
unknown key in the engine's log when ` + "`Engine.Run`" + ` starts (` + "`engine.WithConfigChecked`" + `
turns it off for a caller that reported the keys itself, as ` + "`stoatctl run`" + ` does).

Types: ` + "`duration-ms`" + ` is an integer number of milliseconds; ` + "`list`" + ` is
comma-separated; an ` + "`enum`" + ` takes one of the values listed (some also
take Kafka Streams' class names, listed under the key's notes). An empty
value counts as unset.

| Key | Type | Default | Read by | Description |
|---|---|---|---|---|
`)
	for _, k := range catalogue {
		def := "—"
		if k.Default != "" {
			def = "`" + k.Default + "`"
		}
		desc := k.Description
		if k.NoOp {
			desc += " *(no effect)*"
		}
		if k.AliasOf != "" {
			desc += " *(alias of `" + k.AliasOf + "`)*"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", k.Name, k.TypeText(), def, k.ReadByText(), desc)
	}
	b.WriteString("\n## Notes\n\n")
	for _, k := range catalogue {
		if k.Note == "" && len(k.Aliases) == 0 && !k.HasMin {
			continue
		}
		fmt.Fprintf(&b, "- `%s`:", k.Name)
		var parts []string
		if k.Note != "" {
			parts = append(parts, " "+k.Note+".")
		}
		if k.HasMin {
			parts = append(parts, fmt.Sprintf(" At least %s.", formatMin(k.Min)))
		}
		if len(k.Aliases) > 0 {
			parts = append(parts, " Also accepted: "+aliasText(k)+".")
		}
		b.WriteString(strings.Join(parts, "") + "\n")
	}
	return b.String()
}

// aliasText lists an enum's aliases as "`alias` (value)", sorted.
func aliasText(k Key) string {
	var parts []string
	for _, a := range k.AliasNames() {
		parts = append(parts, fmt.Sprintf("`%s` (%s)", a, k.Aliases[a]))
	}
	return strings.Join(parts, ", ")
}
