package topofile

import (
	"reflect"
	"strings"

	"github.com/expr-lang/expr/ast"
)

// A fast path computes a program's result from the record directly, in
// Go, without the VM and without an environment: decided at load for the
// programs of a small typed subset of expr, whose every name has a type
// the checker knew (a string serde's key or value). The subset is what
// the common stateless steps write over strings:
//
//   - key and value, of static type string; string and bool literals (and
//     the constants the optimizer folded);
//   - upper, lower and trim (one argument) of a string;
//   - + of two strings; ==, !=, startsWith, endsWith and contains of two
//     strings; and, or, not (&&, ||, !) of bools.
//
// Each operation is the function expr's own runs, so the result is the
// VM's. A static type is a promise the serde makes only at the source: a
// step that wrote a number under a string serde hands the next step a
// number, and a null is nil. So a fast path checks each name's value as
// it reads it and, when one is not a string, declines (ok false): the VM
// then runs the program and converts or fails exactly as it would have.
type fastPath func(in *fastIn) (out any, ok bool)

type (
	fastString func(in *fastIn) (string, bool)
	fastBool   func(in *fastIn) (bool, bool)
)

// fastIn is the record a fast path reads: the key and value as the erased
// path has them, or, set typed, as strings an entry decoded (neither
// null), which need no interface.
type fastIn struct {
	key, value           any
	typed                bool
	keyString, valString string
}

func (in *fastIn) keyStr() (string, bool) {
	if in.typed {
		return in.keyString, true
	}
	s, ok := in.key.(string)
	return s, ok
}

func (in *fastIn) valueStr() (string, bool) {
	if in.typed {
		return in.valString, true
	}
	s, ok := in.value.(string)
	return s, ok
}

// fastPathOf returns p's fast path, nil when p is outside the subset.
// windowed flows have none: their key is read from inside the window.
func fastPathOf(p *program, windowed bool) fastPath {
	if windowed {
		return nil
	}
	node := p.prog.Node()
	if s := fastStr(node); s != nil {
		return func(in *fastIn) (any, bool) { return s(in) }
	}
	if b := fastBoolOf(node); b != nil {
		return func(in *fastIn) (any, bool) { return b(in) }
	}
	return nil
}

func isString(n ast.Node) bool {
	return n.Type() == reflect.TypeFor[string]()
}

// fastStr compiles a string-valued node, nil when it is outside the
// subset.
func fastStr(n ast.Node) fastString {
	if !isString(n) {
		return nil
	}
	switch n := n.(type) {
	case *ast.IdentifierNode:
		switch n.Value {
		case "key":
			return (*fastIn).keyStr
		case "value":
			return (*fastIn).valueStr
		}
	case *ast.StringNode:
		c := n.Value
		return func(*fastIn) (string, bool) { return c, true }
	case *ast.ConstantNode:
		if c, ok := n.Value.(string); ok {
			return func(*fastIn) (string, bool) { return c, true }
		}
	case *ast.BuiltinNode:
		if len(n.Arguments) != 1 {
			return nil
		}
		var f func(string) string
		switch n.Name {
		case "upper":
			f = strings.ToUpper
		case "lower":
			f = strings.ToLower
		case "trim":
			f = strings.TrimSpace
		default:
			return nil
		}
		arg := fastStr(n.Arguments[0])
		if arg == nil {
			return nil
		}
		return func(in *fastIn) (string, bool) {
			s, ok := arg(in)
			if !ok {
				return "", false
			}
			return f(s), true
		}
	case *ast.BinaryNode:
		if n.Operator != "+" {
			return nil
		}
		l, r := fastStr(n.Left), fastStr(n.Right)
		if l == nil || r == nil {
			return nil
		}
		return func(in *fastIn) (string, bool) {
			a, ok := l(in)
			if !ok {
				return "", false
			}
			b, ok := r(in)
			if !ok {
				return "", false
			}
			return a + b, true
		}
	}
	return nil
}

// fastBoolOf compiles a bool-valued node, nil when it is outside the
// subset.
func fastBoolOf(n ast.Node) fastBool {
	if n.Type() != reflect.TypeFor[bool]() {
		return nil
	}
	switch n := n.(type) {
	case *ast.BoolNode:
		c := n.Value
		return func(*fastIn) (bool, bool) { return c, true }
	case *ast.ConstantNode:
		if c, ok := n.Value.(bool); ok {
			return func(*fastIn) (bool, bool) { return c, true }
		}
	case *ast.UnaryNode:
		if n.Operator != "not" && n.Operator != "!" {
			return nil
		}
		x := fastBoolOf(n.Node)
		if x == nil {
			return nil
		}
		return func(in *fastIn) (bool, bool) {
			b, ok := x(in)
			return !b, ok
		}
	case *ast.BinaryNode:
		switch n.Operator {
		case "and", "&&", "or", "||":
			l, r := fastBoolOf(n.Left), fastBoolOf(n.Right)
			if l == nil || r == nil {
				return nil
			}
			// Both sides are read before deciding: a side that declines
			// sends the whole program to the VM, which would have reached
			// it or not; either way it answers as it would have.
			and := n.Operator == "and" || n.Operator == "&&"
			return func(in *fastIn) (bool, bool) {
				a, ok := l(in)
				if !ok {
					return false, false
				}
				b, ok := r(in)
				if !ok {
					return false, false
				}
				if and {
					return a && b, true
				}
				return a || b, true
			}
		}
		var f func(a, b string) bool
		switch n.Operator {
		case "==":
			f = func(a, b string) bool { return a == b }
		case "!=":
			f = func(a, b string) bool { return a != b }
		case "startsWith":
			f = strings.HasPrefix
		case "endsWith":
			f = strings.HasSuffix
		case "contains":
			f = strings.Contains
		default:
			return nil
		}
		l, r := fastStr(n.Left), fastStr(n.Right)
		if l == nil || r == nil {
			return nil
		}
		return func(in *fastIn) (bool, bool) {
			a, ok := l(in)
			if !ok {
				return false, false
			}
			b, ok := r(in)
			if !ok {
				return false, false
			}
			return f(a, b), true
		}
	}
	return nil
}
