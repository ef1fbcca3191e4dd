package topofile

import "strings"

// This file finds the bad line of a syntax error inside a flow collection
// ([a, b] or {k: v}). go-yaml reports such an error at the line where the
// collection's context starts (the key before it, or the line before
// that), not at the token it could not take: a missing comma on line 14
// of a list opened on line 10 is reported at line 9 or 10.

// LocateFlowError finds the token a flow collection could not take, for a
// go-yaml error message about one ("did not find expected ',' or ']'", or
// '}') reported at line (1-based): the first flow collection opened at or
// after that line is scanned, collections inside it included, and the position returned is that of the
// first token after a complete item that is neither a separator nor the
// collection's end, or of the opening bracket when the collection is
// never closed. ok is false for other messages or when nothing is found.
func LocateFlowError(data []byte, line int, msg string) (badLine, col int, ok bool) {
	if !strings.Contains(msg, "did not find expected ',' or ']'") && !strings.Contains(msg, "did not find expected ',' or '}'") {
		return 0, 0, false
	}
	s := &flowScanner{data: data, line: 1, col: 1}
	// Find the first opening bracket at or after the reported line,
	// outside quotes and comments.
	for !s.done() {
		c := s.peek()
		if s.line >= line && (c == '[' || c == '{') {
			break
		}
		s.skipToken()
	}
	if s.done() {
		return 0, 0, false
	}
	openLine, openCol := s.line, s.col
	var stack []byte
	afterItem := false
	for !s.done() {
		c := s.peek()
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			s.next()
		case c == '#' && s.atWordStart():
			s.skipComment()
		case c == '[' || c == '{':
			if afterItem {
				return s.line, s.col, true
			}
			stack = append(stack, c)
			s.next()
		case c == ']' || c == '}':
			if len(stack) == 0 || stack[len(stack)-1] != map[byte]byte{']': '[', '}': '{'}[c] {
				return s.line, s.col, true
			}
			stack = stack[:len(stack)-1]
			s.next()
			if len(stack) == 0 {
				return 0, 0, false // closed: the error is elsewhere
			}
			afterItem = true
		case c == ',' || c == ':':
			afterItem = false
			s.next()
		case c == '"' || c == '\'':
			if afterItem {
				return s.line, s.col, true
			}
			s.skipQuoted()
			afterItem = true
		default:
			if afterItem {
				return s.line, s.col, true
			}
			// A plain scalar may run over lines; it ends at a flow
			// indicator or ": ".
			s.skipPlain()
		}
	}
	return openLine, openCol, true
}

type flowScanner struct {
	data      []byte
	i         int
	line, col int
}

func (s *flowScanner) done() bool { return s.i >= len(s.data) }
func (s *flowScanner) peek() byte { return s.data[s.i] }

func (s *flowScanner) next() {
	if s.data[s.i] == '\n' {
		s.line, s.col = s.line+1, 1
	} else {
		s.col++
	}
	s.i++
}

// atWordStart says whether the current character follows a blank or
// starts the input, as a comment's # must.
func (s *flowScanner) atWordStart() bool {
	return s.i == 0 || strings.ContainsRune(" \t\r\n", rune(s.data[s.i-1]))
}

func (s *flowScanner) skipComment() {
	for !s.done() && s.peek() != '\n' {
		s.next()
	}
}

func (s *flowScanner) skipQuoted() {
	q := s.peek()
	s.next()
	for !s.done() {
		c := s.peek()
		s.next()
		switch {
		case q == '"' && c == '\\' && !s.done():
			s.next()
		case c == q && q == '\'' && !s.done() && s.peek() == '\'':
			s.next()
		case c == q:
			return
		}
	}
}

func (s *flowScanner) skipPlain() {
	for !s.done() {
		c := s.peek()
		if strings.IndexByte(",[]{}", c) >= 0 {
			return
		}
		if c == ':' && (s.i+1 >= len(s.data) || strings.IndexByte(" \t\r\n", s.data[s.i+1]) >= 0) {
			return
		}
		if c == '#' && s.atWordStart() {
			return
		}
		s.next()
	}
}

// skipToken moves past one character, or a whole quoted string or comment,
// so that brackets inside them are not taken for a collection.
func (s *flowScanner) skipToken() {
	switch c := s.peek(); {
	case c == '#' && s.atWordStart():
		s.skipComment()
	case c == '"' || c == '\'':
		s.skipQuoted()
	default:
		s.next()
	}
}
