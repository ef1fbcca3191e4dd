package benchcompare

import "strings"

// CommandLine is args as a shell would need them typed again: an empty
// argument as "", one with anything but letters, digits and _./:=,@%+-
// in double quotes (with ", \, $ and ` escaped). The report's command
// line is meant to be copied and run.
func CommandLine(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = shellWord(a)
	}
	return strings.Join(out, " ")
}

func shellWord(a string) string {
	if a == "" {
		return `""`
	}
	plain := strings.IndexFunc(a, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_./:=,@%+-", r))
	}) < 0
	if plain {
		return a
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range a {
		if strings.ContainsRune("\"\\$`", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteByte('"')
	return b.String()
}
