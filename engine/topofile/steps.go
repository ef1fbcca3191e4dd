package topofile

import (
	"fmt"
	"log/slog"
	"math"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/expr-lang/expr/types"
	"go.yaml.in/yaml/v3"

	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/window"
)

// step is one step of a pipeline as the compiler sees it.
type step struct {
	pipe string
	op   string
	// at is the step's operation key, where errors about the step point.
	at *yaml.Node
	// arg is the operation's value: a scalar shorthand, a mapping or null.
	arg *yaml.Node
	in  flow
	// what prefixes the step's errors: "pipeline p step 2 (filter)".
	what string
}

// A stepFunc compiles one kind of step. It returns the step's result, nil
// when the step ends the pipeline, and false after reporting an error.
type stepFunc func(c *compiler, st *step) (flow, bool)

var stepFuncs map[string]stepFunc

func init() {
	stepFuncs = map[string]stepFunc{
		"filter":                (*compiler).filterStep,
		"filter-not":            (*compiler).filterStep,
		"map":                   (*compiler).mapStep,
		"map-values":            (*compiler).mapValuesStep,
		"flat-map":              (*compiler).flatMapStep,
		"flat-map-values":       (*compiler).flatMapValuesStep,
		"select-key":            (*compiler).selectKeyStep,
		"peek":                  (*compiler).peekStep,
		"merge":                 (*compiler).mergeStep,
		"split":                 (*compiler).splitStep,
		"repartition":           (*compiler).repartitionStep,
		"to":                    (*compiler).toStep,
		"group-by-key":          (*compiler).groupByKeyStep,
		"group-by":              (*compiler).groupByStep,
		"window":                (*compiler).windowStep,
		"count":                 (*compiler).aggregationStep,
		"sum":                   (*compiler).aggregationStep,
		"min":                   (*compiler).aggregationStep,
		"max":                   (*compiler).aggregationStep,
		"reduce":                (*compiler).aggregationStep,
		"aggregate":             (*compiler).aggregationStep,
		"suppress":              (*compiler).suppressStep,
		"to-stream":             (*compiler).toStreamStep,
		"join":                  (*compiler).joinStep,
		"left-join":             (*compiler).joinStep,
		"outer-join":            (*compiler).joinStep,
		"join-global":           (*compiler).globalJoinStep,
		"left-join-global":      (*compiler).globalJoinStep,
		"join-foreign-key":      (*compiler).fkJoinStep,
		"left-join-foreign-key": (*compiler).fkJoinStep,
	}
}

func stepNames() string {
	names := make([]string, 0, len(stepFuncs))
	for k := range stepFuncs {
		names = append(names, k)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// steps compiles a list of steps from in.
func (c *compiler) steps(pipe string, n *yaml.Node, in flow) (flow, bool) {
	n = deref(n)
	if isNull(n) {
		return in, true
	}
	if n.Kind != yaml.SequenceNode {
		c.errf(n, "pipeline %s steps: expected a list of steps, got %s", pipe, kindName(n))
		return nil, false
	}
	cur := in
	for i, sn := range n.Content {
		sn = deref(sn)
		st := &step{pipe: pipe, in: cur}
		switch {
		case sn.Kind == yaml.ScalarNode && !isNull(sn):
			// An operation without arguments may be written bare: "- count".
			st.op, st.at = sn.Value, sn
		case sn.Kind == yaml.MappingNode && len(sn.Content) == 2:
			st.at, st.arg = deref(sn.Content[0]), deref(sn.Content[1])
			st.op = st.at.Value
		case sn.Kind == yaml.MappingNode && len(sn.Content) > 2:
			c.errf(deref(sn.Content[2]), "pipeline %s step %d: a step has one operation, got %s and %s (put options inside the operation: - %s: {...})",
				pipe, i+1, sn.Content[0].Value, sn.Content[2].Value, sn.Content[0].Value)
			return nil, false
		default:
			c.errf(sn, "pipeline %s step %d: expected an operation such as \"- filter: EXPR\", got %s", pipe, i+1, kindName(sn))
			return nil, false
		}
		st.what = fmt.Sprintf("pipeline %s step %d (%s)", pipe, i+1, st.op)
		fn, ok := stepFuncs[st.op]
		if !ok {
			c.errf(st.at, "pipeline %s step %d: unknown operation %q (expected one of: %s)", pipe, i+1, st.op, stepNames())
			return nil, false
		}
		if cur == nil {
			c.errf(st.at, "%s: the pipeline already ended with a sink or a split", st.what)
			return nil, false
		}
		out, ok := fn(c, st)
		if !ok {
			return nil, false
		}
		cur = out
	}
	return cur, true
}

// args reads a step's options. shorthand, when not "", is the option a
// bare scalar stands for ("- filter: EXPR" is "- filter: {expr: EXPR}").
func (c *compiler) args(st *step, shorthand string, allowed ...string) (fields, bool) {
	if st.arg != nil && st.arg.Kind == yaml.ScalarNode && !isNull(st.arg) {
		if shorthand == "" {
			c.errf(st.arg, "%s: expected a mapping of options, got %s", st.what, kindName(st.arg))
			return fields{}, false
		}
		return fields{
			keys:   map[string]*yaml.Node{shorthand: st.at},
			values: map[string]*yaml.Node{shorthand: st.arg},
			order:  []string{shorthand},
		}, true
	}
	if st.arg != nil && st.arg.Kind == yaml.SequenceNode && shorthand != "" {
		return fields{
			keys:   map[string]*yaml.Node{shorthand: st.at},
			values: map[string]*yaml.Node{shorthand: st.arg},
			order:  []string{shorthand},
		}, true
	}
	return c.mapping(st.arg, st.what, allowed...)
}

// required reports a missing option.
func (c *compiler) required(st *step, f fields, k string) (*yaml.Node, bool) {
	n := f.get(k)
	if n == nil {
		c.errf(st.at, "%s: missing option %q", st.what, k)
		return nil, false
	}
	return n, true
}

// nodeName is the step's name option, or a generated name in Kafka Streams'
// scheme for prefix.
func (c *compiler) nodeName(f fields, st *step, prefix string) (string, bool) {
	if n := f.get("name"); n != nil {
		return c.scalar(n, st.what+" name")
	}
	if prefix == "" {
		return "", true
	}
	return c.b.Topology().GeneratedName(prefix), true
}

// optSerde reads an optional serde option, keeping def when absent.
func (c *compiler) optSerde(f fields, k, what string, def *dynSerde, defType types.Type) (*dynSerde, types.Type, bool) {
	n := f.get(k)
	if n == nil {
		return def, defType, true
	}
	s, ok := c.serdeField(n, what+" "+k)
	if !ok {
		return nil, nil, false
	}
	return s.serde, s.typ, true
}

func (c *compiler) wantStream(st *step) (anyStream, bool) {
	s, ok := st.in.(anyStream)
	if !ok {
		c.errf(st.at, "%s: needs a stream, but its input is %s", st.what, st.in.kind())
	}
	return s, ok
}

func (c *compiler) wantTable(st *step) (anyTable, bool) {
	t, ok := st.in.(anyTable)
	if !ok {
		c.errf(st.at, "%s: needs a table, but its input is %s", st.what, st.in.kind())
	}
	return t, ok
}

// resultSerdes is which serde options a step reads for its result, before
// it names its node.
type resultSerdes int

const (
	// inputSerdes reads none: the result keeps the input's serdes, or the
	// step reads its serde options itself.
	inputSerdes resultSerdes = iota
	// newValues: value-serde, else the default; the values become any.
	newValues
	// newKeys: key-serde, else the default; value-serde, else the
	// input's. The keys become any and plain.
	newKeys
	// newRecords: key-serde and value-serde, else the defaults; keys and
	// values become any, the keys plain.
	newRecords
)

// stepInput is the kind of input a step takes. A stream or a table is
// checked right after the options; streamOrTable after the result's
// serdes, and a table's node is then named only by its name option.
type stepInput int

const (
	streamInput stepInput = iota
	tableInput
	streamOrTable
)

// stepSpec is what a step reads before its own work, in this order: its
// options, its input, the required options, the result's serdes, check,
// and its node name.
type stepSpec struct {
	// shorthand is the option a bare scalar stands for (see args).
	shorthand string
	allowed   []string
	input     stepInput
	required  []string
	result    resultSerdes
	// check, when set, vets the options before the node is named.
	check func(a *stepArgs) bool
	// prefix is the scheme of the generated node name; "" leaves an
	// unnamed node to the DSL.
	prefix string
}

// stepArgs is what compiler.stepArgs reads for a step.
type stepArgs struct {
	f fields
	// s is the input stream, or t the input table.
	s anyStream
	t anyTable
	// req holds the values of stepSpec.required, in its order.
	req []*yaml.Node
	// info is the result's flowInfo under stepSpec.result.
	info flowInfo
	name string
}

// stepArgs reads what spec describes, reporting the first error.
func (c *compiler) stepArgs(st *step, spec stepSpec) (*stepArgs, bool) {
	f, ok := c.args(st, spec.shorthand, spec.allowed...)
	if !ok {
		return nil, false
	}
	a := &stepArgs{f: f}
	switch spec.input {
	case streamInput:
		a.s, ok = c.wantStream(st)
	case tableInput:
		a.t, ok = c.wantTable(st)
	}
	if !ok {
		return nil, false
	}
	for _, k := range spec.required {
		n, ok := c.required(st, f, k)
		if !ok {
			return nil, false
		}
		a.req = append(a.req, n)
	}
	if a.info, ok = c.resultInfo(f, st, spec.result); !ok {
		return nil, false
	}
	prefix := spec.prefix
	if spec.input == streamOrTable {
		if t, isTable := st.in.(anyTable); isTable {
			a.t, prefix = t, ""
		} else if a.s, ok = c.wantStream(st); !ok {
			return nil, false
		}
	}
	if spec.check != nil && !spec.check(a) {
		return nil, false
	}
	if a.name, ok = c.nodeName(f, st, prefix); !ok {
		return nil, false
	}
	return a, true
}

// resultInfo reads the serde options r names.
func (c *compiler) resultInfo(f fields, st *step, r resultSerdes) (flowInfo, bool) {
	in := st.in.meta()
	info := *in
	var ok bool
	switch r {
	case inputSerdes:
		return info, true
	case newValues:
		info.valueType = types.Any
		info.valueSerde, _, ok = c.optSerde(f, "value-serde", st.what, c.defValue, nil)
		return info, ok
	}
	// The keys change.
	info = flowInfo{keyType: types.Any, valueType: types.Any}
	if info.keySerde, _, ok = c.optSerde(f, "key-serde", st.what, c.defKey, nil); !ok {
		return info, false
	}
	valueDef := c.defValue
	if r == newKeys {
		valueDef, info.valueType = in.valueSerde, in.valueType
	}
	info.valueSerde, _, ok = c.optSerde(f, "value-serde", st.what, valueDef, nil)
	return info, ok
}

// serdeOptions applies a step's key-serde and value-serde options to info.
func (c *compiler) serdeOptions(f fields, st *step, info flowInfo) (flowInfo, bool) {
	var ok bool
	if info.keySerde, info.keyType, ok = c.optSerde(f, "key-serde", st.what, info.keySerde, info.keyType); !ok {
		return info, false
	}
	info.valueSerde, info.valueType, ok = c.optSerde(f, "value-serde", st.what, info.valueSerde, info.valueType)
	return info, ok
}

// recordProgram is a step's expression over its input's records.
type recordProgram struct {
	*program
	// headers is whether it reads the headers, which are converted only
	// then.
	headers bool
}

func (c *compiler) recordProgram(st *step, n *yaml.Node, what string, asBool bool) (recordProgram, bool) {
	p, ok := c.compileExpr(n, what, recordScope(st.in.meta()), asBool)
	if !ok {
		return recordProgram{}, false
	}
	return recordProgram{program: p, headers: p.uses("headers")}, true
}

func (p recordProgram) env(k, v any, ts int64, hs processor.Headers) map[string]any {
	return recordEnv(k, v, ts, hs, p.headers)
}

// listProgram is recordProgram for an expression that yields a list,
// refused when its static type is known not to be one.
func (c *compiler) listProgram(st *step, n *yaml.Node) (recordProgram, bool) {
	p, ok := c.recordProgram(st, n, st.what, false)
	if !ok {
		return p, false
	}
	if t := p.resultType(); t != nil && t.Kind() != reflect.Slice && t.Kind() != reflect.Array {
		c.errf(n, "%s %q: result is a %s; expected a list", st.what, p.src, t)
		return p, false
	}
	return p, true
}

// runList evaluates a program that yields a list.
func (p *program) runList(env map[string]any) ([]any, error) {
	res, err := p.run(env)
	if err != nil {
		return nil, err
	}
	l, err := toList(res)
	if err != nil {
		return nil, p.fail(err)
	}
	return l, nil
}

func (c *compiler) filterStep(st *step) (flow, bool) {
	a, ok := c.stepArgs(st, stepSpec{shorthand: "expr", allowed: []string{"expr", "name"}, required: []string{"expr"},
		input: streamOrTable, prefix: "KSTREAM-FILTER-"})
	if !ok {
		return nil, false
	}
	not := st.op == "filter-not"
	if a.t != nil {
		p, ok := c.compileExpr(a.req[0], st.what, keyValueScope(st.in.meta()), true)
		if !ok {
			return nil, false
		}
		return a.t.filter(a.name, func(k, v any) bool {
			keep, err := p.runBool(keyValueEnv(k, v))
			if err != nil {
				// A table filter has no error path in the DSL; the record
				// is treated as not matching, and the failure logged.
				slog.Error("topology file: table filter failed", "err", err)
				return not
			}
			return keep
		}, not), true
	}
	p, ok := c.recordProgram(st, a.req[0], st.what, true)
	if !ok {
		return nil, false
	}
	return a.s.values(a.name, func(k, v any, ts int64, hs processor.Headers) ([]any, error) {
		keep, err := p.runBool(p.env(k, v, ts, hs))
		if err != nil || keep == not {
			return nil, err
		}
		return []any{v}, nil
	}), true
}

func (c *compiler) peekStep(st *step) (flow, bool) {
	a, ok := c.stepArgs(st, stepSpec{shorthand: "expr", allowed: []string{"expr", "name"}, required: []string{"expr"},
		prefix: "KSTREAM-PEEK-"})
	if !ok {
		return nil, false
	}
	p, ok := c.recordProgram(st, a.req[0], st.what, false)
	if !ok {
		return nil, false
	}
	return a.s.values(a.name, func(k, v any, ts int64, hs processor.Headers) ([]any, error) {
		out, err := p.run(p.env(k, v, ts, hs))
		if err != nil {
			return nil, err
		}
		slog.Debug("topology file: peek", "at", p.at, "result", out)
		return []any{v}, nil
	}), true
}

func (c *compiler) mapValuesStep(st *step) (flow, bool) {
	a, ok := c.stepArgs(st, stepSpec{shorthand: "expr", allowed: []string{"expr", "name", "value-serde"}, required: []string{"expr"},
		input: streamOrTable, result: newValues, prefix: "KSTREAM-MAPVALUES-"})
	if !ok {
		return nil, false
	}
	if a.t != nil {
		p, ok := c.compileExpr(a.req[0], st.what, keyValueScope(st.in.meta()), false)
		if !ok {
			return nil, false
		}
		return a.t.mapValues(a.name, func(k, v any) any {
			return p.runOrFail(keyValueEnv(k, v))
		}, a.info), true
	}
	p, ok := c.recordProgram(st, a.req[0], st.what, false)
	if !ok {
		return nil, false
	}
	out := a.s.values(a.name, func(k, v any, ts int64, hs processor.Headers) ([]any, error) {
		nv, err := p.run(p.env(k, v, ts, hs))
		if err != nil {
			return nil, err
		}
		return []any{nv}, nil
	})
	*out.meta() = a.info
	return out, true
}

func (c *compiler) flatMapValuesStep(st *step) (flow, bool) {
	a, ok := c.stepArgs(st, stepSpec{shorthand: "expr", allowed: []string{"expr", "name", "value-serde"}, required: []string{"expr"},
		result: newValues, prefix: "KSTREAM-FLATMAPVALUES-"})
	if !ok {
		return nil, false
	}
	p, ok := c.listProgram(st, a.req[0])
	if !ok {
		return nil, false
	}
	out := a.s.values(a.name, func(k, v any, ts int64, hs processor.Headers) ([]any, error) {
		return p.runList(p.env(k, v, ts, hs))
	})
	*out.meta() = a.info
	return out, true
}

func (c *compiler) mapStep(st *step) (flow, bool) {
	a, ok := c.stepArgs(st, stepSpec{allowed: []string{"key", "value", "name", "key-serde", "value-serde"}, required: []string{"key", "value"},
		result: newRecords, prefix: "KSTREAM-MAP-"})
	if !ok {
		return nil, false
	}
	kp, okK := c.recordProgram(st, a.req[0], st.what+" key", false)
	vp, okV := c.recordProgram(st, a.req[1], st.what+" value", false)
	if !okK || !okV {
		return nil, false
	}
	h := kp.headers || vp.headers
	return a.s.keyValues(a.name, func(k, v any, ts int64, hs processor.Headers) ([]keyValue, error) {
		env := recordEnv(k, v, ts, hs, h)
		nk, err := kp.run(env)
		if err != nil {
			return nil, err
		}
		nv, err := vp.run(env)
		if err != nil {
			return nil, err
		}
		return []keyValue{{nk, nv}}, nil
	}, a.info), true
}

func (c *compiler) selectKeyStep(st *step) (flow, bool) {
	a, ok := c.stepArgs(st, stepSpec{shorthand: "expr", allowed: []string{"expr", "name", "key-serde"}, required: []string{"expr"},
		result: newKeys, prefix: "KSTREAM-KEY-SELECT-"})
	if !ok {
		return nil, false
	}
	return c.rekey(st, a.s, a.req[0], a.name, a.info)
}

// rekey adds a node computing a new key from each record.
func (c *compiler) rekey(st *step, s anyStream, en *yaml.Node, name string, info flowInfo) (*streamFlow[any], bool) {
	p, ok := c.recordProgram(st, en, st.what, false)
	if !ok {
		return nil, false
	}
	return s.keyValues(name, func(k, v any, ts int64, hs processor.Headers) ([]keyValue, error) {
		nk, err := p.run(p.env(k, v, ts, hs))
		if err != nil {
			return nil, err
		}
		return []keyValue{{nk, v}}, nil
	}, info), true
}

func (c *compiler) flatMapStep(st *step) (flow, bool) {
	a, ok := c.stepArgs(st, stepSpec{shorthand: "expr", allowed: []string{"expr", "name", "key-serde", "value-serde"}, required: []string{"expr"},
		result: newRecords, prefix: "KSTREAM-FLATMAP-"})
	if !ok {
		return nil, false
	}
	p, ok := c.listProgram(st, a.req[0])
	if !ok {
		return nil, false
	}
	return a.s.keyValues(a.name, func(k, v any, ts int64, hs processor.Headers) ([]keyValue, error) {
		l, err := p.runList(p.env(k, v, ts, hs))
		if err != nil {
			return nil, err
		}
		out := make([]keyValue, 0, len(l))
		for _, e := range l {
			nk, nv, err := pairOf(e)
			if err != nil {
				return nil, p.fail(err)
			}
			out = append(out, keyValue{nk, nv})
		}
		return out, nil
	}, a.info), true
}

func (c *compiler) mergeStep(st *step) (flow, bool) {
	f, ok := c.args(st, "with", "with", "name")
	if !ok {
		return nil, false
	}
	wn, ok := c.required(st, f, "with")
	if !ok {
		return nil, false
	}
	names, ok := c.stringList(wn, st.what+" with")
	if !ok {
		return nil, false
	}
	others, ok := c.lookupAll(wn, names, st.what)
	if !ok {
		return nil, false
	}
	name, ok := c.nodeName(f, st, "")
	if !ok {
		return nil, false
	}
	return c.mergeAll(st.at, append([]flow{st.in}, others...), append([]string{"the pipeline's stream"}, names...), name, st.what)
}

func (c *compiler) splitStep(st *step) (flow, bool) {
	a, ok := c.stepArgs(st, stepSpec{shorthand: "branches", allowed: []string{"branches", "name"}, required: []string{"branches"},
		prefix: "KSTREAM-BRANCH-", check: func(a *stepArgs) bool {
			if bn := a.req[0]; bn.Kind != yaml.SequenceNode || len(bn.Content) == 0 {
				c.errf(bn, "%s branches: expected a list of branches, got %s", st.what, kindName(bn))
				return false
			}
			return true
		}})
	if !ok {
		return nil, false
	}
	bn, splitter := a.req[0], a.name
	in := st.in.meta()
	type branch struct {
		name  string
		at    *yaml.Node
		pred  *program
		steps *yaml.Node
	}
	var branches []branch
	var children []string
	headers := false
	for i, item := range bn.Content {
		what := fmt.Sprintf("%s branch %d", st.what, i+1)
		bf, ok := c.mapping(item, what, "name", "when", "steps")
		if !ok {
			return nil, false
		}
		br := branch{name: fmt.Sprint(i + 1), at: item, steps: bf.get("steps")}
		if n := bf.get("name"); n != nil {
			if br.name, ok = c.scalar(n, what+" name"); !ok {
				return nil, false
			}
			if !validName.MatchString(br.name) {
				c.errf(n, "%s name: %q must be letters, digits, '_' and '-'", what, br.name)
				return nil, false
			}
		}
		if wn := bf.get("when"); wn != nil {
			if br.pred, ok = c.compileExpr(wn, what+" when", recordScope(in), true); !ok {
				return nil, false
			}
			headers = headers || br.pred.uses("headers")
		} else {
			if i != len(bn.Content)-1 {
				c.errf(item, "%s: only the last branch may leave out when (it takes every record no other branch took)", what)
				return nil, false
			}
			if bf.get("name") == nil {
				br.name = "0"
			}
		}
		branches = append(branches, br)
		// Branch nodes are named after the splitter, as the DSL's Split
		// names them.
		children = append(children, splitter+br.name)
	}
	outs := a.s.split(splitter, children, func(k, v any, ts int64, hs processor.Headers) (int, error) {
		env := recordEnv(k, v, ts, hs, headers)
		for i, b := range branches {
			if b.pred == nil {
				return i, nil
			}
			take, err := b.pred.runBool(env)
			if err != nil || take {
				return i, err
			}
		}
		return -1, nil
	})
	for i, b := range branches {
		full := st.pipe + "." + b.name
		out, ok := c.steps(full, b.steps, outs[i])
		if !ok {
			c.define(full, b.at, poisoned{})
			continue
		}
		c.define(full, b.at, out)
	}
	return nil, true
}

func (c *compiler) repartitionStep(st *step) (flow, bool) {
	a, ok := c.stepArgs(st, stepSpec{allowed: []string{"name", "partitions", "key-serde", "value-serde"}})
	if !ok {
		return nil, false
	}
	var partitions int64
	if pn := a.f.get("partitions"); pn != nil {
		if partitions, ok = c.intField(pn, st.what+" partitions", 1, math.MaxInt32); !ok {
			return nil, false
		}
	}
	info, ok := c.serdeOptions(a.f, st, *st.in.meta())
	if !ok {
		return nil, false
	}
	return a.s.repartition(a.name, int32(partitions), info), true
}

func (c *compiler) toStep(st *step) (flow, bool) {
	var topic string
	a, ok := c.stepArgs(st, stepSpec{shorthand: "topic", allowed: []string{"topic", "name", "key-serde", "value-serde"},
		check: func(a *stepArgs) bool {
			var ok bool
			topic, ok = c.requiredString(a.f, st.at, "topic", st.what)
			return ok
		}})
	if !ok {
		return nil, false
	}
	info, ok := c.serdeOptions(a.f, st, *st.in.meta())
	if !ok {
		return nil, false
	}
	a.s.to(topic, a.name, info.keySerde, info.valueSerde)
	return nil, true
}

func (c *compiler) groupByKeyStep(st *step) (flow, bool) {
	a, ok := c.stepArgs(st, stepSpec{allowed: []string{"name", "key-serde", "value-serde"}})
	if !ok {
		return nil, false
	}
	info, ok := c.serdeOptions(a.f, st, *st.in.meta())
	if !ok {
		return nil, false
	}
	return a.s.groupByKey(a.name, info), true
}

func (c *compiler) groupByStep(st *step) (flow, bool) {
	if t, isTable := st.in.(*tableFlow[any]); isTable {
		return c.groupTableBy(st, t)
	}
	a, ok := c.stepArgs(st, stepSpec{shorthand: "key", allowed: []string{"key", "name", "key-serde", "value-serde"}, required: []string{"key"}})
	if !ok {
		return nil, false
	}
	// The DSL's GroupBy names its key selector after the grouping when
	// the grouping is named.
	selector := a.name
	if selector == "" {
		selector = c.b.Topology().GeneratedName("KSTREAM-KEY-SELECT-")
	}
	in := *st.in.meta()
	in.keySerde, in.keyType, in.win = c.defKey, types.Any, nil
	info, ok := c.serdeOptions(a.f, st, in)
	if !ok {
		return nil, false
	}
	rekeyed, ok := c.rekey(st, a.s, a.req[0], selector, info)
	if !ok {
		return nil, false
	}
	return rekeyed.groupByKey(a.name, info), true
}

func (c *compiler) groupTableBy(st *step, t *tableFlow[any]) (flow, bool) {
	a, ok := c.stepArgs(st, stepSpec{shorthand: "key", allowed: []string{"key", "value", "name", "key-serde", "value-serde"},
		input: tableInput, required: []string{"key"}})
	if !ok {
		return nil, false
	}
	in := st.in.meta()
	sc := keyValueScope(in)
	kp, ok := c.compileExpr(a.req[0], st.what+" key", sc, false)
	if !ok {
		return nil, false
	}
	var vp *program
	if vn := a.f.get("value"); vn != nil {
		if vp, ok = c.compileExpr(vn, st.what+" value", sc, false); !ok {
			return nil, false
		}
	}
	info := *in
	info.keySerde, info.keyType = c.defKey, types.Any
	if vp != nil {
		info.valueSerde, info.valueType = c.defValue, types.Any
	}
	if info, ok = c.serdeOptions(a.f, st, info); !ok {
		return nil, false
	}
	g := dsl.GroupedWith[any, any](info.keySerde, info.valueSerde).WithName(a.name)
	gt := dsl.GroupTableBy(t.t, func(k, v any) (any, any) {
		env := keyValueEnv(k, v)
		nk := kp.runOrFail(env)
		if vp == nil {
			return nk, v
		}
		return nk, vp.runOrFail(env)
	}, g)
	return &groupedTableFlow{g: gt, info: info}, true
}

func (c *compiler) windowStep(st *step) (flow, bool) {
	f, ok := c.args(st, "", "type", "size", "advance", "difference", "gap", "grace", "emit")
	if !ok {
		return nil, false
	}
	g, ok := st.in.(*groupedFlow[any])
	if !ok {
		if _, windowed := st.in.(*groupedFlow[window.Windowed[any]]); windowed {
			c.errf(st.at, "%s: the stream's keys are already windowed; select a plain key before windowing again", st.what)
		} else {
			c.errf(st.at, "%s: needs a grouped stream (group-by-key or group-by first), but its input is %s", st.what, st.in.kind())
		}
		return nil, false
	}
	tn, ok := c.required(st, f, "type")
	if !ok {
		return nil, false
	}
	typ, ok := c.oneOf(tn, st.what+" type", "tumbling", "hopping", "sliding", "session")
	if !ok {
		return nil, false
	}
	allowed := map[string][]string{
		"tumbling": {"size"},
		"hopping":  {"size", "advance"},
		"sliding":  {"difference"},
		"session":  {"gap"},
	}[typ]
	for _, k := range []string{"size", "advance", "difference", "gap"} {
		if f.has(k) && !slices.Contains(allowed, k) {
			c.errf(f.key(k), "%s: %s windows take %s, not %s", st.what, typ, strings.Join(allowed, " and "), k)
			return nil, false
		}
	}
	durs := map[string]int64{}
	for _, k := range allowed {
		n, ok := c.required(st, f, k)
		if !ok {
			return nil, false
		}
		d, ok := c.duration(n, st.what+" "+k)
		if !ok {
			return nil, false
		}
		if d.Milliseconds() <= 0 {
			c.errf(n, "%s %s: must be at least 1ms", st.what, k)
			return nil, false
		}
		durs[k] = d.Milliseconds()
	}
	grace, ok := c.optDuration(f, "grace", st.what)
	if !ok {
		return nil, false
	}
	emit := dsl.OnWindowUpdate()
	if en := f.get("emit"); en != nil {
		e, ok := c.oneOf(en, st.what+" emit", "on-update", "on-window-close")
		if !ok {
			return nil, false
		}
		if e == "on-window-close" {
			emit = dsl.OnWindowClose()
		}
	}
	ms := func(k string) int64 { return durs[k] }
	w := &windowedFlow{info: g.info}
	switch typ {
	case "tumbling", "hopping":
		tw := window.TimeWindowsOfSizeAndGrace(msDuration(ms("size")), grace)
		if typ == "hopping" {
			if ms("advance") > ms("size") {
				c.errf(f.get("advance"), "%s advance: must not exceed the size", st.what)
				return nil, false
			}
			tw = tw.AdvanceBy(msDuration(ms("advance")))
		}
		tws := g.g.WindowedBy(tw).EmitStrategy(emit)
		w.time, w.win = &tws, winInfo{size: ms("size")}
	case "sliding":
		sw := window.SlidingWindowsOfTimeDifferenceAndGrace(msDuration(ms("difference")), grace)
		tws := g.g.WindowedBySliding(sw).EmitStrategy(emit)
		w.time, w.win = &tws, winInfo{size: ms("difference")}
	case "session":
		sw := window.SessionWindowsOfInactivityGapAndGrace(msDuration(ms("gap")), grace)
		ss := g.g.WindowedBySession(sw).EmitStrategy(emit)
		w.session, w.win = &ss, winInfo{session: true}
	}
	return w, true
}

func (c *compiler) toStreamStep(st *step) (flow, bool) {
	a, ok := c.stepArgs(st, stepSpec{allowed: []string{"name"}, input: tableInput})
	if !ok {
		return nil, false
	}
	return a.t.toStream(a.name), true
}

func (c *compiler) suppressStep(st *step) (flow, bool) {
	f, ok := c.args(st, "until", "until", "limit", "max-records", "max-bytes", "when-full", "name")
	if !ok {
		return nil, false
	}
	t, ok := c.wantTable(st)
	if !ok {
		return nil, false
	}
	un, ok := c.required(st, f, "until")
	if !ok {
		return nil, false
	}
	until, ok := c.oneOf(un, st.what+" until", "window-closes", "time-limit", "barrier")
	if !ok {
		return nil, false
	}
	if until == "window-closes" && st.in.meta().win == nil {
		c.errf(un, "%s: until window-closes needs a windowed table (a windowed aggregation's result)", st.what)
		return nil, false
	}
	if f.has("limit") != (until == "time-limit") {
		c.errf(f.key("limit", "until"), "%s: limit goes with until time-limit, and only with it", st.what)
		return nil, false
	}
	buf := dsl.Unbounded()
	bounded := false
	for _, opt := range []struct {
		k    string
		with func(dsl.BufferConfig, int64) dsl.BufferConfig
	}{
		{"max-records", dsl.BufferConfig.WithMaxRecords},
		{"max-bytes", dsl.BufferConfig.WithMaxBytes},
	} {
		if n := f.get(opt.k); n != nil {
			v, ok := c.intField(n, st.what+" "+opt.k, 1, math.MaxInt64)
			if !ok {
				return nil, false
			}
			buf, bounded = opt.with(buf, v), true
		}
	}
	// Only a time limit may release early by default: the other two
	// promise one result per window or epoch.
	whenFull := "shut-down"
	if until == "time-limit" {
		whenFull = "emit-early"
	}
	if n := f.get("when-full"); n != nil {
		if whenFull, ok = c.oneOf(n, st.what+" when-full", "emit-early", "shut-down"); !ok {
			return nil, false
		}
		if !bounded {
			c.errf(n, "%s: when-full needs max-records or max-bytes", st.what)
			return nil, false
		}
		if whenFull == "emit-early" && until != "time-limit" {
			c.errf(n, "%s: until %s never releases early; when-full must be shut-down", st.what, until)
			return nil, false
		}
	}
	if bounded {
		if whenFull == "emit-early" {
			buf = buf.EmitEarlyWhenFull()
		} else {
			buf = buf.ShutDownWhenFull()
		}
	}
	var s dsl.Suppressed
	switch until {
	case "window-closes":
		s = dsl.UntilWindowCloses(buf)
	case "barrier":
		s = dsl.UntilBarrier(buf)
	case "time-limit":
		limit, ok := c.duration(f.get("limit"), st.what+" limit")
		if !ok {
			return nil, false
		}
		s = dsl.UntilTimeLimit(limit, buf)
	}
	name, ok := c.nodeName(f, st, "")
	if !ok {
		return nil, false
	}
	return t.suppress(s, name, st.what, until == "barrier"), true
}
