package config

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// ProblemKind is what Check found wrong with a key.
type ProblemKind uint8

const (
	// Unknown is a key the catalogue does not list: a warning, an
	// error under --strict.
	Unknown ProblemKind = iota
	// Invalid is a known key whose value does not parse for its type or
	// is out of range: an error, as the reader would refuse it too.
	Invalid
	// Ignored is a known key that has no effect yet (Key.NoOp): a note.
	Ignored
)

// Problem is one finding of Check.
type Problem struct {
	Kind       ProblemKind
	Key, Value string
	// Suggestion is the closest known key, for Unknown; "" when none is
	// close.
	Suggestion string
	// Reason says what is wrong with an Invalid value, or why an Ignored
	// key has no effect.
	Reason string
	// Origin says where the key was set ("flag -X", "app.yaml:3"); Check
	// leaves it to the caller, who knows.
	Origin string
}

// Level is how the problem is reported: "warning", "error" or "note".
func (p Problem) Level() string {
	switch p.Kind {
	case Invalid:
		return "error"
	case Ignored:
		return "note"
	}
	return "warning"
}

// Error makes a Problem usable as an error.
func (p Problem) Error() string { return p.String() }

// String is the problem on one line, without its level:
//
//	flag -X: unknown configuration key num.stream.thread; did you mean num.stream.threads?
func (p Problem) String() string {
	var b strings.Builder
	if p.Origin != "" {
		b.WriteString(p.Origin + ": ")
	}
	switch p.Kind {
	case Unknown:
		fmt.Fprintf(&b, "unknown configuration key %s", p.Key)
		if p.Suggestion != "" {
			fmt.Fprintf(&b, "; did you mean %s?", p.Suggestion)
		} else {
			b.WriteString("; stoatctl config list shows the known keys")
		}
	case Invalid:
		fmt.Fprintf(&b, "config %s: %s", p.Key, p.Reason)
	case Ignored:
		fmt.Fprintf(&b, "config %s has no effect: %s", p.Key, p.Reason)
	}
	return b.String()
}

// Check reports every key of values the catalogue does not know, with the
// closest known key, every known key whose value does not parse for its
// type, and every key set that has no effect. Problems are sorted by key.
// An empty value counts as unset, as the typed accessors read it.
func Check(values map[string]string) []Problem {
	var out []Problem
	for _, name := range slices.Sorted(maps.Keys(values)) {
		v := values[name]
		if isProviderKey(name) || (strings.HasPrefix(name, TopicPrefix) && len(name) > len(TopicPrefix)) {
			// Providers are checked when they resolve; topic configs by
			// the broker that creates the topics.
			continue
		}
		if tag, ok := strings.CutPrefix(name, ClientTagPrefix); ok && tag != "" {
			// A client tag: any name, within Kafka Streams' limits.
			if reason := clientTagInvalid(tag, strings.TrimSpace(v)); reason != "" {
				out = append(out, Problem{Kind: Invalid, Key: name, Value: v, Reason: reason})
			}
			continue
		}
		prefix, base := SplitClientKey(name)
		k, ok := byKeyName[base]
		if !ok {
			p := Problem{Kind: Unknown, Key: name, Value: v}
			if s, near := Closest(base); near {
				p.Suggestion = prefix + s
			}
			out = append(out, p)
			continue
		}
		if prefix != "" && !slices.Contains(k.Clients, family(prefix)) {
			out = append(out, Problem{Kind: Ignored, Key: name, Value: v, Reason: k.notForClient(prefix)})
			continue
		}
		if k.NotRestoreOrGlobal && (prefix == "restore.consumer." || prefix == "global.consumer.") {
			out = append(out, Problem{Kind: Ignored, Key: name, Value: v,
				Reason: "the " + strings.TrimSuffix(prefix, ".") + " reads with fetches of its own (stoatflow.restore.fetch-max-bytes), not " + base})
			continue
		}
		if reason := k.invalid(v); reason != "" {
			out = append(out, Problem{Kind: Invalid, Key: name, Value: v, Reason: reason})
			continue
		}
		if k.NoOp {
			reason := k.Note
			if reason == "" {
				reason = k.Description
			}
			out = append(out, Problem{Kind: Ignored, Key: name, Value: v, Reason: reason})
		}
	}
	return out
}

// notForClient says why a key under prefix has no effect.
func (k *Key) notForClient(prefix string) string {
	if len(k.Clients) == 0 {
		return fmt.Sprintf("%s is not a Kafka client key; set it without the prefix %s", k.Name, prefix)
	}
	var names []string
	for _, c := range k.Clients {
		names = append(names, string(c))
	}
	return fmt.Sprintf("the %s does not read %s, a key of the %s", strings.TrimSuffix(prefix, "."), k.Name, strings.Join(names, " and "))
}

// invalid says why v is not a value of k, or "".
func (k *Key) invalid(v string) string {
	t := strings.TrimSpace(v)
	if t == "" {
		return ""
	}
	var n float64
	switch k.Type {
	case TypeInt, TypeDurationMs:
		i, err := strconv.ParseInt(t, 10, 64)
		if err != nil {
			if k.Type == TypeDurationMs {
				return fmt.Sprintf("%q is not an integer number of milliseconds", v)
			}
			return fmt.Sprintf("%q is not an integer", v)
		}
		n = float64(i)
	case TypeFloat:
		f, err := strconv.ParseFloat(t, 64)
		if err != nil {
			return fmt.Sprintf("%q is not a number", v)
		}
		n = f
	case TypeBool:
		if _, err := strconv.ParseBool(t); err != nil {
			return fmt.Sprintf("%q is not true or false", v)
		}
		return ""
	case TypeEnum:
		if k.accepts(t) {
			return ""
		}
		return fmt.Sprintf("%q is not one of %s", v, strings.Join(k.Values, ", "))
	default:
		return ""
	}
	return k.below(n, t)
}

// below says why n, written t, is below k's least value, or "".
func (k *Key) below(n float64, t string) string {
	if k.HasMin && n < k.Min {
		return fmt.Sprintf("%s is below the least value, %s", t, formatMin(k.Min))
	}
	return ""
}

func (k *Key) accepts(v string) bool {
	if k.FoldCase {
		v = strings.ToLower(v)
	}
	if slices.Contains(k.Values, v) {
		return true
	}
	_, ok := k.Aliases[v]
	return ok
}
