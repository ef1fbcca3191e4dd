package conn

import (
	"errors"
	"fmt"
	"strings"
)

// JAAS is one login module of a sasl.jaas.config value.
type JAAS struct {
	// Module is the login module's class, such as
	// org.apache.kafka.common.security.scram.ScramLoginModule.
	Module string
	// Flag is the control flag: required, requisite, sufficient or
	// optional.
	Flag string
	// Options are the module's options, such as username and password.
	Options map[string]string
}

// The login modules whose options stoatctl reads.
const (
	plainModule = "org.apache.kafka.common.security.plain.PlainLoginModule"
	scramModule = "org.apache.kafka.common.security.scram.ScramLoginModule"
	oauthModule = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
	iamModule   = "software.amazon.msk.auth.iam.IAMLoginModule"
)

// ErrJAAS is the class of every ParseJAAS error.
var ErrJAAS = errors.New("config sasl.jaas.config")

// ParseJAAS reads a sasl.jaas.config value in Kafka's syntax:
//
//	ModuleClass ControlFlag (optionName=optionValue)* ;
//
// where a value is a word or a double-quoted string (with backslash
// escapes), and // and /* */ comments are skipped, as Kafka's JaasConfig
// reads it. A client's configuration has exactly one module. Errors give
// the position at fault and never the text there, which may be a secret.
func ParseJAAS(s string) (JAAS, error) {
	t := &jaasLexer{s: s}
	var j JAAS
	kind, module, err := t.next()
	if err != nil {
		return j, err
	}
	if kind != tokWord {
		return j, t.errf("want the login module's class name")
	}
	j.Module = module
	kind, flag, err := t.next()
	if err != nil {
		return j, err
	}
	switch strings.ToLower(flag) {
	case "required", "requisite", "sufficient", "optional":
	default:
		if kind == tokWord {
			return j, t.errf("want a control flag after the login module: required, requisite, sufficient or optional")
		}
		return j, t.errf("want a control flag after the login module")
	}
	j.Flag = strings.ToLower(flag)
	j.Options = map[string]string{}
	for {
		kind, name, err := t.next()
		if err != nil {
			return j, err
		}
		if kind == tokSemicolon {
			break
		}
		if kind != tokWord {
			return j, t.errf("want an option name or ';'")
		}
		if k, _, err := t.next(); err != nil {
			return j, err
		} else if k != tokEquals {
			return j, t.errf("want '=' after option %s", name)
		}
		k, value, err := t.next()
		if err != nil {
			return j, err
		}
		if k != tokWord && k != tokQuoted {
			return j, t.errf("want a value for option %s", name)
		}
		if _, dup := j.Options[name]; dup {
			return j, t.errf("option %s is set twice", name)
		}
		j.Options[name] = value
	}
	if kind, _, err := t.next(); err != nil {
		return j, err
	} else if kind != tokEOF {
		return j, t.errf("want one login module; stoatctl's clients log in with one")
	}
	return j, nil
}

type tokKind uint8

const (
	tokEOF tokKind = iota
	tokWord
	tokQuoted
	tokEquals
	tokSemicolon
)

type jaasLexer struct {
	s   string
	pos int
	// at is where the last token started, for errors.
	at int
}

func (t *jaasLexer) errf(format string, args ...any) error {
	return fmt.Errorf("%w: at character %d: %s", ErrJAAS, t.at+1, fmt.Sprintf(format, args...))
}

// next returns the next token and its text (unquoted).
func (t *jaasLexer) next() (tokKind, string, error) {
	if err := t.skip(); err != nil {
		return tokEOF, "", err
	}
	t.at = t.pos
	if t.pos >= len(t.s) {
		return tokEOF, "", nil
	}
	switch c := t.s[t.pos]; c {
	case '=':
		t.pos++
		return tokEquals, "=", nil
	case ';':
		t.pos++
		return tokSemicolon, ";", nil
	case '"':
		return t.quoted()
	}
	start := t.pos
	for t.pos < len(t.s) && !isJAASDelim(t.s[t.pos]) {
		if strings.HasPrefix(t.s[t.pos:], "//") || strings.HasPrefix(t.s[t.pos:], "/*") {
			break
		}
		t.pos++
	}
	if t.pos == start {
		t.pos++
		return tokEOF, "", t.errf("unexpected character")
	}
	return tokWord, t.s[start:t.pos], nil
}

func isJAASDelim(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '=' || c == ';' || c == '"'
}

// skip skips whitespace and comments.
func (t *jaasLexer) skip() error {
	for t.pos < len(t.s) {
		switch {
		case strings.ContainsRune(" \t\n\r\f", rune(t.s[t.pos])):
			t.pos++
		case strings.HasPrefix(t.s[t.pos:], "//"):
			for t.pos < len(t.s) && t.s[t.pos] != '\n' && t.s[t.pos] != '\r' {
				t.pos++
			}
		case strings.HasPrefix(t.s[t.pos:], "/*"):
			t.at = t.pos
			end := strings.Index(t.s[t.pos+2:], "*/")
			if end < 0 {
				return t.errf("comment not closed")
			}
			t.pos += 2 + end + 2
		default:
			return nil
		}
	}
	return nil
}

// quoted reads a double-quoted string, as Java's StreamTokenizer does:
// backslash escapes \b \t \n \f \r, octal \NNN, and any other character
// stands for itself.
func (t *jaasLexer) quoted() (tokKind, string, error) {
	t.pos++ // the opening quote
	var b strings.Builder
	for t.pos < len(t.s) {
		c := t.s[t.pos]
		t.pos++
		switch c {
		case '"':
			return tokQuoted, b.String(), nil
		case '\\':
			if t.pos >= len(t.s) {
				return tokEOF, "", t.errf("quoted value not closed")
			}
			e := t.s[t.pos]
			t.pos++
			switch e {
			case 'b':
				b.WriteByte('\b')
			case 't':
				b.WriteByte('\t')
			case 'n':
				b.WriteByte('\n')
			case 'f':
				b.WriteByte('\f')
			case 'r':
				b.WriteByte('\r')
			default:
				if e >= '0' && e <= '7' {
					n := int(e - '0')
					for i := 0; i < 2 && t.pos < len(t.s) && t.s[t.pos] >= '0' && t.s[t.pos] <= '7' && n*8+int(t.s[t.pos]-'0') <= 0xff; i++ {
						n = n*8 + int(t.s[t.pos]-'0')
						t.pos++
					}
					b.WriteByte(byte(n))
					continue
				}
				b.WriteByte(e)
			}
		case '\n', '\r':
			// StreamTokenizer ends a quoted string at the end of a line.
			return tokEOF, "", t.errf("quoted value not closed on its line")
		default:
			b.WriteByte(c)
		}
	}
	return tokEOF, "", t.errf("quoted value not closed")
}

// quoteJAAS writes v as a quoted JAAS value that ParseJAAS reads back as v.
func quoteJAAS(v string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
