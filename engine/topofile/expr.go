package topofile

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/types"
	"github.com/expr-lang/expr/vm"
	"go.yaml.in/yaml/v3"

	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/window"
)

// program is a compiled expression and where it was written.
type program struct {
	prog *vm.Program
	src  string
	what string
	// at is "file:line:column", for the errors of a record it fails on.
	at string
}

// EvalError is an expression that failed on a record: the program
// compiled, but the record's values did not fit it (a missing field
// compared with a number, a division by zero).
type EvalError struct {
	// At is the expression's position, "file:line:column".
	At   string
	What string
	Expr string
	Err  error
}

func (e *EvalError) Error() string {
	return fmt.Sprintf("%s: %s %q: %v", e.At, e.What, e.Expr, e.Err)
}

func (e *EvalError) Unwrap() error { return e.Err }

// evalFailure carries an EvalError through a DSL callback that has no
// error result (an aggregator, a joiner). It takes the place of the value;
// the next step the compiler controls, or the serde that writes it to a
// store or a topic, turns it back into the error, so the record fails
// under the configured processing handler instead of the process
// crashing or the error vanishing.
type evalFailure struct{ err error }

// failed returns the error a value carries, if it is a failure.
func failed(v any) error {
	if f, ok := v.(*evalFailure); ok {
		return f.err
	}
	return nil
}

// scope is the set of names an expression may use, with their static
// types.
type scope = types.Map

// compileExpr compiles the expression in n against sc; asBool makes it a
// predicate. Errors name the expression and, when it is written on one
// line, point at the column in the file where the checker stopped.
func (c *compiler) compileExpr(n *yaml.Node, what string, sc scope, asBool bool) (*program, bool) {
	src, ok := c.scalar(n, what)
	if !ok {
		return nil, false
	}
	if strings.TrimSpace(src) == "" {
		c.errf(n, "%s: expected an expression, got an empty string", what)
		return nil, false
	}
	opts := []expr.Option{expr.Env(sc), expr.MaxNodes(10_000)}
	if asBool {
		opts = append(opts, expr.AsBool())
	}
	p, err := compileSafely(src, opts)
	if err != nil {
		line, col := n.Line, n.Column
		msg := err.Error()
		var fe *file.Error
		if errors.As(err, &fe) {
			msg = fe.Message
			if single := !strings.Contains(src, "\n"); single && fe.Line <= 1 && (n.Style == 0 || n.Style == yaml.DoubleQuotedStyle || n.Style == yaml.SingleQuotedStyle) && !strings.ContainsAny(src, "\\'\"") {
				// A plain or simply quoted scalar sits on its line as
				// written, so the error's column maps onto the file.
				col += fe.Column
				if n.Style != 0 {
					col++
				}
			} else if fe.Line > 0 {
				msg += fmt.Sprintf(" (line %d, column %d of the expression)", fe.Line, fe.Column+1)
			}
		}
		c.errAt(line, col, "%s %q: %s", what, src, msg)
		return nil, false
	}
	return &program{prog: p, src: src, what: what, at: fmt.Sprintf("%s:%d:%d", c.file, n.Line, n.Column)}, true
}

// compileSafely keeps a panic in the expression compiler (a bug there, on
// input a fuzzer found) from taking the loader down.
func compileSafely(src string, opts []expr.Option) (p *vm.Program, err error) {
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, fmt.Errorf("expression compiler failed: %v", r)
		}
	}()
	return expr.Compile(src, opts...)
}

// resultType is the static type of a program's result, types.Any when the
// checker could not tell.
func (p *program) resultType() reflect.Type {
	if p == nil {
		return nil
	}
	t := p.prog.Node().Type()
	if t == nil || t.Kind() == reflect.Interface {
		return nil
	}
	return t
}

// uses reports whether the program reads name.
func (p *program) uses(name string) bool {
	v := &identFinder{name: name}
	node := p.prog.Node()
	ast.Walk(&node, v)
	return v.found
}

type identFinder struct {
	name  string
	found bool
}

func (v *identFinder) Visit(n *ast.Node) {
	if id, ok := (*n).(*ast.IdentifierNode); ok && id.Value == v.name {
		v.found = true
	}
}

// run evaluates the program; env maps the scope's names to the record's
// values. ev is the calling processor's evaluator, whose VM it runs on;
// a nil ev (a DSL callback, which every task shares) runs on a fresh VM.
func (p *program) run(ev *evaluator, env map[string]any) (out any, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, p.fail(fmt.Errorf("%v", r))
		}
	}()
	if ev != nil {
		out, err = ev.vm.Run(p.prog, env)
	} else {
		out, err = expr.Run(p.prog, env)
	}
	if err != nil {
		return nil, p.fail(err)
	}
	return out, nil
}

// fail is err, met running p on a record.
func (p *program) fail(err error) *EvalError {
	return &EvalError{At: p.at, What: p.what, Expr: p.src, Err: err}
}

// runBool evaluates a predicate.
func (p *program) runBool(ev *evaluator, env map[string]any) (bool, error) {
	out, err := p.run(ev, env)
	if err != nil {
		return false, err
	}
	b, ok := out.(bool)
	if !ok {
		return false, p.fail(fmt.Errorf("result %s is a %T, not a bool", short(out), out))
	}
	return b, nil
}

// runOrFail is run for a DSL callback without an error result: a failure
// becomes the value (see evalFailure).
func (p *program) runOrFail(env map[string]any) any {
	out, err := p.run(nil, env)
	if err != nil {
		return &evalFailure{err: err}
	}
	return out
}

// windowType is what `window` is in the scope of a flow with windowed
// keys: the window's bounds in epoch milliseconds.
var windowType = types.Map{"start": types.Int64, "end": types.Int64}

// The scopes of the kinds of expression. On a flow with windowed keys,
// `key` is the key inside the window and `window` holds the bounds.
func recordScope(info *flowInfo) scope {
	sc := scope{"key": info.keyType, "value": info.valueType, "timestamp": types.Int64, "headers": types.TypeOf(map[string]string{})}
	if info.win != nil {
		sc["window"] = windowType
	}
	return sc
}

func keyValueScope(info *flowInfo) scope {
	sc := scope{"key": info.keyType, "value": info.valueType}
	if info.win != nil {
		sc["window"] = windowType
	}
	return sc
}

// keyValueEnv is the environment of a key and value expression.
func keyValueEnv(key, value any) map[string]any {
	env := map[string]any{"value": value}
	putKey(env, key)
	return env
}

// putKey sets key, and window for a windowed key.
func putKey(env map[string]any, key any) {
	if w, ok := key.(window.Windowed[any]); ok {
		env["key"] = w.Key
		env["window"] = map[string]any{"start": w.Window.Start, "end": w.Window.End}
		return
	}
	env["key"] = key
}

func adderScope(info *flowInfo, agg types.Type) scope {
	return scope{"key": info.keyType, "value": info.valueType, "agg": agg}
}

// recordEnv is the environment of a record expression.
func recordEnv(key, value any, ts int64, h processor.Headers, withHeaders bool) map[string]any {
	env := map[string]any{"value": value, "timestamp": ts}
	putKey(env, key)
	if withHeaders {
		env["headers"] = headerMap(h)
	}
	return env
}

// headerMap is what `headers` is: each header name with its last value.
func headerMap(h processor.Headers) map[string]string {
	hm := make(map[string]string, len(h))
	for _, x := range h {
		hm[x.Key] = string(x.Value)
	}
	return hm
}

// evaluator is what one processor keeps from record to record to run its
// programs without allocating for them: the VM, whose stack survives a
// run, the environment, refilled in place, and a one-value result list.
// Programs are compiled once and shared by every task; an evaluator
// belongs to one processor, and so to one goroutine at a time.
type evaluator struct {
	vm  vm.VM
	env map[string]any
	one [1]any
	in  fastIn
}

// record is a fast path's input for a key and value: ev's own, which a
// call through a function value does not make escape to the heap.
func (ev *evaluator) record(k, v any) *fastIn {
	if ev == nil {
		return &fastIn{key: k, value: v}
	}
	ev.in = fastIn{key: k, value: v}
	return &ev.in
}

// single is v as a one-value result list, in ev's own array when there is
// an evaluator: the caller forwards its elements before the next record.
func (ev *evaluator) single(v any) []any {
	if ev == nil {
		return []any{v}
	}
	ev.one[0] = v
	return ev.one[:]
}

// reads is the set of a record scope's names some programs read, found
// in their syntax trees at load. A name no program reads need not be in
// the environment, so a reused environment holds only these; a program
// that reads $env (the environment as a whole, which it could keep or
// return) gets a fresh and full one for every record.
type reads struct {
	key, value, timestamp, headers, all bool
}

func readsOf(ps ...*program) reads {
	var r reads
	for _, p := range ps {
		if p == nil {
			continue
		}
		r.key = r.key || p.uses("key") || p.uses("window")
		r.value = r.value || p.uses("value")
		r.timestamp = r.timestamp || p.uses("timestamp")
		r.headers = r.headers || p.uses("headers")
		r.all = r.all || p.uses("$env")
	}
	return r
}

// env is the environment of a record expression that reads r: ev's own,
// refilled, when there is an evaluator and nothing reads it whole, else a
// fresh one. Headers and a windowed key's window are fresh maps in either
// case, since an expression may return them.
func (r reads) env(ev *evaluator, key, value any, ts int64, h processor.Headers) map[string]any {
	if ev == nil || r.all {
		return recordEnv(key, value, ts, h, r.headers)
	}
	env := ev.env
	if env == nil {
		env = make(map[string]any, 4)
		ev.env = env
	}
	if r.value {
		env["value"] = value
	}
	if r.timestamp {
		env["timestamp"] = ts
	}
	if r.key {
		if _, ok := key.(window.Windowed[any]); !ok {
			// A plain key after a windowed one (never on one flow, whose
			// keys are all of a kind) must not see the last window.
			delete(env, "window")
		}
		putKey(env, key)
	}
	if r.headers {
		env["headers"] = headerMap(h)
	}
	return env
}

// timestampOf converts what a timestamp expression returned to epoch
// milliseconds: a number of milliseconds, a time.Time, or an RFC 3339
// string.
func timestampOf(v any) (int64, error) {
	switch t := v.(type) {
	case time.Time:
		return t.UnixMilli(), nil
	case string:
		tm, err := time.Parse(time.RFC3339Nano, t)
		if err != nil {
			return 0, fmt.Errorf("timestamp %q is not RFC 3339", t)
		}
		return tm.UnixMilli(), nil
	case nil:
		return 0, errors.New("timestamp is null")
	}
	rv := reflect.ValueOf(v)
	switch {
	case rv.CanInt():
		return rv.Int(), nil
	case rv.CanUint():
		if rv.Uint() > math.MaxInt64 {
			return 0, fmt.Errorf("timestamp %d is out of range", rv.Uint())
		}
		return int64(rv.Uint()), nil
	case rv.CanFloat():
		f := rv.Float()
		if math.IsNaN(f) || f < math.MinInt64 || f >= math.MaxInt64 {
			return 0, fmt.Errorf("timestamp %v is out of range", f)
		}
		return int64(f), nil
	}
	return 0, fmt.Errorf("timestamp %s is a %T, expected milliseconds, a time or an RFC 3339 string", short(v), v)
}

// toList converts a list an expression returned to []any.
func toList(v any) ([]any, error) {
	if v == nil {
		return nil, nil
	}
	if l, ok := v.([]any); ok {
		return l, nil
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
		return nil, fmt.Errorf("result %s is a %T, expected a list", short(v), v)
	}
	out := make([]any, rv.Len())
	for i := range out {
		out[i] = rv.Index(i).Interface()
	}
	return out, nil
}

// pairOf reads a flat-map element: a {key, value} map or a [key, value]
// list.
func pairOf(v any) (k, val any, err error) {
	switch p := v.(type) {
	case map[string]any:
		kk, okK := p["key"]
		vv, okV := p["value"]
		if okK && okV && len(p) == 2 {
			return kk, vv, nil
		}
	default:
		if l, err := toList(v); err == nil && len(l) == 2 {
			return l[0], l[1], nil
		}
	}
	return nil, nil, fmt.Errorf("element %s is not a pair: expected {key: K, value: V} or [K, V]", short(v))
}
