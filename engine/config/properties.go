package config

import (
	"fmt"
	"strconv"
	"strings"
)

// A Java properties file is how a Kafka Streams team keeps its
// configuration (java.util.Properties.load): one key and value per logical
// line, separated by '=', ':' or whitespace; '#' and '!' open a comment
// line; a line ending in an odd number of backslashes continues on the
// next, whose leading whitespace is dropped; \t \n \r \f and \uXXXX are
// escapes, and a backslash before any other character stands for that
// character. Java reads the bytes as ISO-8859-1; stoatctl reads them as
// UTF-8, which is the same for the ASCII such files hold.

// property is one key of a properties file with the line its logical line
// starts on.
type property struct {
	key, value string
	line       int
}

// ParseProperties reads a Java properties file; name is used in errors.
// A key set twice keeps its last value, as Java does.
func ParseProperties(name string, data []byte) (map[string]string, error) {
	props, err := parseProperties(name, data)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(props))
	for _, p := range props {
		out[p.key] = p.value
	}
	return out, nil
}

// PropertyLines is the line each key of a properties file is set on (its
// last setting), for pointing at a key in a message; a file that does not
// parse has none.
func PropertyLines(data []byte) map[string]int {
	out := map[string]int{}
	props, err := parseProperties("", data)
	if err != nil {
		return out
	}
	for _, p := range props {
		out[p.key] = p.line
	}
	return out
}

func parseProperties(name string, data []byte) ([]property, error) {
	lines := naturalLines(string(data))
	var out []property
	for i := 0; i < len(lines); i++ {
		start := i
		line := strings.TrimLeft(lines[i], " \t\f")
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		// Join continuation lines: the backslash ending one is dropped,
		// and so is the leading whitespace of the next.
		var logical strings.Builder
		for {
			body, cont := continues(line)
			logical.WriteString(body)
			if !cont || i+1 >= len(lines) {
				break
			}
			i++
			line = strings.TrimLeft(lines[i], " \t\f")
		}
		key, value, err := splitProperty(logical.String())
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, start+1, err)
		}
		out = append(out, property{key: key, value: value, line: start + 1})
	}
	return out, nil
}

// naturalLines splits s at \n, \r and \r\n.
func naturalLines(s string) []string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	return strings.Split(s, "\n")
}

// continues reports whether line ends in an odd number of backslashes, and
// line without the continuing one.
func continues(line string) (string, bool) {
	n := 0
	for n < len(line) && line[len(line)-1-n] == '\\' {
		n++
	}
	if n%2 == 1 {
		return line[:len(line)-1], true
	}
	return line, false
}

// splitProperty splits a logical line into its unescaped key and value.
func splitProperty(line string) (string, string, error) {
	end := len(line)
	for i := 0; i < len(line); i++ {
		c := line[i]
		if c == '\\' {
			i++
			continue
		}
		if c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\f' {
			end = i
			break
		}
	}
	rawKey, rest := line[:end], line[end:]
	rest = strings.TrimLeft(rest, " \t\f")
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = strings.TrimLeft(rest[1:], " \t\f")
	}
	key, err := unescapeProperty(rawKey)
	if err != nil {
		return "", "", fmt.Errorf("key: %w", err)
	}
	value, err := unescapeProperty(rest)
	if err != nil {
		// The value may be a secret: name the key, not the value.
		return "", "", fmt.Errorf("key %s: value: %w", key, err)
	}
	return key, value, nil
}

func unescapeProperty(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(s) {
			break
		}
		switch s[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+5 > len(s) {
				return "", fmt.Errorf(`malformed \uXXXX escape: want four hex digits`)
			}
			n, err := strconv.ParseUint(s[i+1:i+5], 16, 16)
			if err != nil {
				return "", fmt.Errorf(`malformed \uXXXX escape: want four hex digits`)
			}
			b.WriteRune(rune(n))
			i += 4
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), nil
}
