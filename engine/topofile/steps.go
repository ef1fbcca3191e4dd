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
		"filter":          (*compiler).filterStep,
		"filter-not":      (*compiler).filterStep,
		"map":             (*compiler).mapStep,
		"map-values":      (*compiler).mapValuesStep,
		"flat-map":        (*compiler).flatMapStep,
		"flat-map-values": (*compiler).flatMapValuesStep,
		"select-key":      (*compiler).selectKeyStep,
		"peek":            (*compiler).peekStep,
		"merge":           (*compiler).mergeStep,
		"split":           (*compiler).splitStep,
		"repartition":     (*compiler).repartitionStep,
		"to":              (*compiler).toStep,
		"group-by-key":    (*compiler).groupByKeyStep,
		"group-by":        (*compiler).groupByStep,
		"window":          (*compiler).windowStep,
		"count":           (*compiler).aggregationStep,
		"sum":             (*compiler).aggregationStep,
		"min":             (*compiler).aggregationStep,
		"max":             (*compiler).aggregationStep,
		"reduce":          (*compiler).aggregationStep,
		"aggregate":       (*compiler).aggregationStep,
		"suppress":        (*compiler).suppressStep,
		"to-stream":       (*compiler).toStreamStep,
		"join":            (*compiler).joinStep,
		"left-join":       (*compiler).joinStep,
		"outer-join":      (*compiler).joinStep,
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
func (c *compiler) optSerde(f fields, k string, st *step, def *dynSerde, defType types.Type) (*dynSerde, types.Type, bool) {
	n := f.get(k)
	if n == nil {
		return def, defType, true
	}
	s, ok := c.serdeField(n, st.what+" "+k)
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

func (c *compiler) filterStep(st *step) (flow, bool) {
	f, ok := c.args(st, "expr", "expr", "name")
	if !ok {
		return nil, false
	}
	en, ok := c.required(st, f, "expr")
	if !ok {
		return nil, false
	}
	not := st.op == "filter-not"
	info := st.in.meta()
	if t, isTable := st.in.(anyTable); isTable {
		name, ok := c.nodeName(f, st, "")
		if !ok {
			return nil, false
		}
		p, ok := c.compileExpr(en, st.what, keyValueScope(info), true)
		if !ok {
			return nil, false
		}
		return t.filter(name, func(k, v any) bool {
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
	s, ok := c.wantStream(st)
	if !ok {
		return nil, false
	}
	name, ok := c.nodeName(f, st, "KSTREAM-FILTER-")
	if !ok {
		return nil, false
	}
	p, ok := c.compileExpr(en, st.what, recordScope(info), true)
	if !ok {
		return nil, false
	}
	h := p.uses("headers")
	return s.values(name, func(k, v any, ts int64, hs processor.Headers) ([]any, error) {
		keep, err := p.runBool(recordEnv(k, v, ts, hs, h))
		if err != nil || keep == not {
			return nil, err
		}
		return []any{v}, nil
	}), true
}

func (c *compiler) peekStep(st *step) (flow, bool) {
	f, ok := c.args(st, "expr", "expr", "name")
	if !ok {
		return nil, false
	}
	s, ok := c.wantStream(st)
	if !ok {
		return nil, false
	}
	en, ok := c.required(st, f, "expr")
	if !ok {
		return nil, false
	}
	name, ok := c.nodeName(f, st, "KSTREAM-PEEK-")
	if !ok {
		return nil, false
	}
	info := st.in.meta()
	p, ok := c.compileExpr(en, st.what, recordScope(info), false)
	if !ok {
		return nil, false
	}
	h := p.uses("headers")
	return s.values(name, func(k, v any, ts int64, hs processor.Headers) ([]any, error) {
		out, err := p.run(recordEnv(k, v, ts, hs, h))
		if err != nil {
			return nil, err
		}
		slog.Debug("topology file: peek", "at", p.at, "result", out)
		return []any{v}, nil
	}), true
}

func (c *compiler) mapValuesStep(st *step) (flow, bool) {
	f, ok := c.args(st, "expr", "expr", "name", "value-serde")
	if !ok {
		return nil, false
	}
	en, ok := c.required(st, f, "expr")
	if !ok {
		return nil, false
	}
	in := st.in.meta()
	info := *in
	info.valueType = types.Any
	if info.valueSerde, _, ok = c.optSerde(f, "value-serde", st, c.defValue, nil); !ok {
		return nil, false
	}
	if t, isTable := st.in.(anyTable); isTable {
		name, ok := c.nodeName(f, st, "")
		if !ok {
			return nil, false
		}
		p, ok := c.compileExpr(en, st.what, keyValueScope(in), false)
		if !ok {
			return nil, false
		}
		return t.mapValues(name, func(k, v any) any {
			return p.runOrFail(keyValueEnv(k, v))
		}, info), true
	}
	s, ok := c.wantStream(st)
	if !ok {
		return nil, false
	}
	name, ok := c.nodeName(f, st, "KSTREAM-MAPVALUES-")
	if !ok {
		return nil, false
	}
	p, ok := c.compileExpr(en, st.what, recordScope(in), false)
	if !ok {
		return nil, false
	}
	h := p.uses("headers")
	out := s.values(name, func(k, v any, ts int64, hs processor.Headers) ([]any, error) {
		nv, err := p.run(recordEnv(k, v, ts, hs, h))
		if err != nil {
			return nil, err
		}
		return []any{nv}, nil
	})
	*out.meta() = info
	return out, true
}

func (c *compiler) flatMapValuesStep(st *step) (flow, bool) {
	f, ok := c.args(st, "expr", "expr", "name", "value-serde")
	if !ok {
		return nil, false
	}
	s, ok := c.wantStream(st)
	if !ok {
		return nil, false
	}
	en, ok := c.required(st, f, "expr")
	if !ok {
		return nil, false
	}
	info := *st.in.meta()
	info.valueType = types.Any
	if info.valueSerde, _, ok = c.optSerde(f, "value-serde", st, c.defValue, nil); !ok {
		return nil, false
	}
	name, ok := c.nodeName(f, st, "KSTREAM-FLATMAPVALUES-")
	if !ok {
		return nil, false
	}
	in := st.in.meta()
	p, ok := c.compileExpr(en, st.what, recordScope(in), false)
	if !ok || !c.checkList(en, p, st) {
		return nil, false
	}
	h := p.uses("headers")
	out := s.values(name, func(k, v any, ts int64, hs processor.Headers) ([]any, error) {
		res, err := p.run(recordEnv(k, v, ts, hs, h))
		if err != nil {
			return nil, err
		}
		l, err := toList(res)
		if err != nil {
			return nil, &EvalError{At: p.at, What: p.what, Expr: p.src, Err: err}
		}
		return l, nil
	})
	*out.meta() = info
	return out, true
}

// checkList refuses an expression whose static type is known not to be a
// list.
func (c *compiler) checkList(n *yaml.Node, p *program, st *step) bool {
	if t := p.resultType(); t != nil && t.Kind() != reflect.Slice && t.Kind() != reflect.Array {
		c.errf(n, "%s %q: result is a %s; expected a list", st.what, p.src, t)
		return false
	}
	return true
}

// keyChange is what map, select-key and flat-map share: the result's serdes.
func (c *compiler) keyChange(f fields, st *step, keepValue bool) (flowInfo, bool) {
	in := st.in.meta()
	info := flowInfo{keyType: types.Any, valueType: types.Any}
	var ok bool
	if info.keySerde, _, ok = c.optSerde(f, "key-serde", st, c.defKey, nil); !ok {
		return info, false
	}
	valueDef := c.defValue
	if keepValue {
		valueDef, info.valueType = in.valueSerde, in.valueType
	}
	if info.valueSerde, _, ok = c.optSerde(f, "value-serde", st, valueDef, nil); !ok {
		return info, false
	}
	return info, true
}

func (c *compiler) mapStep(st *step) (flow, bool) {
	f, ok := c.args(st, "", "key", "value", "name", "key-serde", "value-serde")
	if !ok {
		return nil, false
	}
	s, ok := c.wantStream(st)
	if !ok {
		return nil, false
	}
	kn, ok := c.required(st, f, "key")
	if !ok {
		return nil, false
	}
	vn, ok := c.required(st, f, "value")
	if !ok {
		return nil, false
	}
	info, ok := c.keyChange(f, st, false)
	if !ok {
		return nil, false
	}
	name, ok := c.nodeName(f, st, "KSTREAM-MAP-")
	if !ok {
		return nil, false
	}
	in := st.in.meta()
	sc := recordScope(in)
	kp, okK := c.compileExpr(kn, st.what+" key", sc, false)
	vp, okV := c.compileExpr(vn, st.what+" value", sc, false)
	if !okK || !okV {
		return nil, false
	}
	h := kp.uses("headers") || vp.uses("headers")
	return s.keyValues(name, func(k, v any, ts int64, hs processor.Headers) ([]keyValue, error) {
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
	}, info), true
}

func (c *compiler) selectKeyStep(st *step) (flow, bool) {
	f, ok := c.args(st, "expr", "expr", "name", "key-serde")
	if !ok {
		return nil, false
	}
	s, ok := c.wantStream(st)
	if !ok {
		return nil, false
	}
	en, ok := c.required(st, f, "expr")
	if !ok {
		return nil, false
	}
	info, ok := c.keyChange(f, st, true)
	if !ok {
		return nil, false
	}
	name, ok := c.nodeName(f, st, "KSTREAM-KEY-SELECT-")
	if !ok {
		return nil, false
	}
	return c.rekey(st, s, en, name, info)
}

// rekey adds a node computing a new key from each record.
func (c *compiler) rekey(st *step, s anyStream, en *yaml.Node, name string, info flowInfo) (*streamFlow[any], bool) {
	in := st.in.meta()
	p, ok := c.compileExpr(en, st.what, recordScope(in), false)
	if !ok {
		return nil, false
	}
	h := p.uses("headers")
	return s.keyValues(name, func(k, v any, ts int64, hs processor.Headers) ([]keyValue, error) {
		nk, err := p.run(recordEnv(k, v, ts, hs, h))
		if err != nil {
			return nil, err
		}
		return []keyValue{{nk, v}}, nil
	}, info), true
}

func (c *compiler) flatMapStep(st *step) (flow, bool) {
	f, ok := c.args(st, "expr", "expr", "name", "key-serde", "value-serde")
	if !ok {
		return nil, false
	}
	s, ok := c.wantStream(st)
	if !ok {
		return nil, false
	}
	en, ok := c.required(st, f, "expr")
	if !ok {
		return nil, false
	}
	info, ok := c.keyChange(f, st, false)
	if !ok {
		return nil, false
	}
	name, ok := c.nodeName(f, st, "KSTREAM-FLATMAP-")
	if !ok {
		return nil, false
	}
	in := st.in.meta()
	p, ok := c.compileExpr(en, st.what, recordScope(in), false)
	if !ok || !c.checkList(en, p, st) {
		return nil, false
	}
	h := p.uses("headers")
	return s.keyValues(name, func(k, v any, ts int64, hs processor.Headers) ([]keyValue, error) {
		res, err := p.run(recordEnv(k, v, ts, hs, h))
		if err != nil {
			return nil, err
		}
		l, err := toList(res)
		if err != nil {
			return nil, &EvalError{At: p.at, What: p.what, Expr: p.src, Err: err}
		}
		out := make([]keyValue, 0, len(l))
		for _, e := range l {
			nk, nv, err := pairOf(e)
			if err != nil {
				return nil, &EvalError{At: p.at, What: p.what, Expr: p.src, Err: err}
			}
			out = append(out, keyValue{nk, nv})
		}
		return out, nil
	}, info), true
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
	flows := []flow{st.in}
	for _, n := range names {
		fl, ok := c.lookup(wn, n, st.what)
		if !ok {
			return nil, false
		}
		if _, bad := fl.(poisoned); bad {
			return nil, false
		}
		flows = append(flows, fl)
	}
	name, ok := c.nodeName(f, st, "")
	if !ok {
		return nil, false
	}
	return c.mergeAll(st.at, flows, append([]string{"the pipeline's stream"}, names...), name, st.what)
}

func (c *compiler) splitStep(st *step) (flow, bool) {
	f, ok := c.args(st, "branches", "branches", "name")
	if !ok {
		return nil, false
	}
	s, ok := c.wantStream(st)
	if !ok {
		return nil, false
	}
	bn, ok := c.required(st, f, "branches")
	if !ok {
		return nil, false
	}
	if bn.Kind != yaml.SequenceNode || len(bn.Content) == 0 {
		c.errf(bn, "%s branches: expected a list of branches, got %s", st.what, kindName(bn))
		return nil, false
	}
	splitter, ok := c.nodeName(f, st, "KSTREAM-BRANCH-")
	if !ok {
		return nil, false
	}
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
	outs := s.split(splitter, children, func(k, v any, ts int64, hs processor.Headers) (int, error) {
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
	f, ok := c.args(st, "", "name", "partitions", "key-serde", "value-serde")
	if !ok {
		return nil, false
	}
	s, ok := c.wantStream(st)
	if !ok {
		return nil, false
	}
	name, ok := c.nodeName(f, st, "")
	if !ok {
		return nil, false
	}
	var partitions int64
	if pn := f.get("partitions"); pn != nil {
		if partitions, ok = c.intField(pn, st.what+" partitions", 1, math.MaxInt32); !ok {
			return nil, false
		}
	}
	info := *st.in.meta()
	if info.keySerde, info.keyType, ok = c.optSerde(f, "key-serde", st, info.keySerde, info.keyType); !ok {
		return nil, false
	}
	if info.valueSerde, info.valueType, ok = c.optSerde(f, "value-serde", st, info.valueSerde, info.valueType); !ok {
		return nil, false
	}
	return s.repartition(name, int32(partitions), info), true
}

func (c *compiler) toStep(st *step) (flow, bool) {
	f, ok := c.args(st, "topic", "topic", "name", "key-serde", "value-serde")
	if !ok {
		return nil, false
	}
	s, ok := c.wantStream(st)
	if !ok {
		return nil, false
	}
	topic, ok := c.requiredString(f, st.at, "topic", st.what)
	if !ok {
		return nil, false
	}
	name, ok := c.nodeName(f, st, "")
	if !ok {
		return nil, false
	}
	info := st.in.meta()
	ks, _, ok := c.optSerde(f, "key-serde", st, info.keySerde, nil)
	if !ok {
		return nil, false
	}
	vs, _, ok := c.optSerde(f, "value-serde", st, info.valueSerde, nil)
	if !ok {
		return nil, false
	}
	s.to(topic, name, ks, vs)
	return nil, true
}

func (c *compiler) groupByKeyStep(st *step) (flow, bool) {
	f, ok := c.args(st, "", "name", "key-serde", "value-serde")
	if !ok {
		return nil, false
	}
	s, ok := c.wantStream(st)
	if !ok {
		return nil, false
	}
	name, ok := c.nodeName(f, st, "")
	if !ok {
		return nil, false
	}
	info, ok := c.groupSerdes(f, st, *st.in.meta())
	if !ok {
		return nil, false
	}
	return s.groupByKey(name, info), true
}

func (c *compiler) groupSerdes(f fields, st *step, info flowInfo) (flowInfo, bool) {
	var ok bool
	if info.keySerde, info.keyType, ok = c.optSerde(f, "key-serde", st, info.keySerde, info.keyType); !ok {
		return info, false
	}
	if info.valueSerde, info.valueType, ok = c.optSerde(f, "value-serde", st, info.valueSerde, info.valueType); !ok {
		return info, false
	}
	return info, true
}

func (c *compiler) groupByStep(st *step) (flow, bool) {
	if t, isTable := st.in.(*tableFlow[any]); isTable {
		return c.groupTableBy(st, t)
	}
	f, ok := c.args(st, "key", "key", "name", "key-serde", "value-serde")
	if !ok {
		return nil, false
	}
	s, ok := c.wantStream(st)
	if !ok {
		return nil, false
	}
	kn, ok := c.required(st, f, "key")
	if !ok {
		return nil, false
	}
	// The DSL's GroupBy names its key selector after the grouping when
	// the grouping is named.
	name, ok := c.nodeName(f, st, "")
	if !ok {
		return nil, false
	}
	selector := name
	if selector == "" {
		selector = c.b.Topology().GeneratedName("KSTREAM-KEY-SELECT-")
	}
	in := *st.in.meta()
	in.keySerde, in.keyType, in.win = c.defKey, types.Any, nil
	info, ok := c.groupSerdes(f, st, in)
	if !ok {
		return nil, false
	}
	rekeyed, ok := c.rekey(st, s, kn, selector, info)
	if !ok {
		return nil, false
	}
	return rekeyed.groupByKey(name, info), true
}

func (c *compiler) groupTableBy(st *step, t *tableFlow[any]) (flow, bool) {
	f, ok := c.args(st, "key", "key", "value", "name", "key-serde", "value-serde")
	if !ok {
		return nil, false
	}
	kn, ok := c.required(st, f, "key")
	if !ok {
		return nil, false
	}
	name, ok := c.nodeName(f, st, "")
	if !ok {
		return nil, false
	}
	in := st.in.meta()
	sc := keyValueScope(in)
	kp, ok := c.compileExpr(kn, st.what+" key", sc, false)
	if !ok {
		return nil, false
	}
	var vp *program
	if vn := f.get("value"); vn != nil {
		if vp, ok = c.compileExpr(vn, st.what+" value", sc, false); !ok {
			return nil, false
		}
	}
	info := *in
	info.keySerde, info.keyType = c.defKey, types.Any
	if vp != nil {
		info.valueSerde, info.valueType = c.defValue, types.Any
	}
	if info, ok = c.groupSerdes(f, st, info); !ok {
		return nil, false
	}
	g := dsl.GroupedWith[any, any](info.keySerde, info.valueSerde).WithName(name)
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
	f, ok := c.args(st, "", "name")
	if !ok {
		return nil, false
	}
	t, ok := st.in.(anyTable)
	if !ok {
		c.errf(st.at, "%s: needs a table, but its input is %s", st.what, st.in.kind())
		return nil, false
	}
	name, ok := c.nodeName(f, st, "")
	if !ok {
		return nil, false
	}
	return t.toStream(name), true
}

func (c *compiler) suppressStep(st *step) (flow, bool) {
	f, ok := c.args(st, "until", "until", "limit", "max-records", "max-bytes", "when-full", "name")
	if !ok {
		return nil, false
	}
	t, ok := st.in.(anyTable)
	if !ok {
		c.errf(st.at, "%s: needs a table, but its input is %s", st.what, st.in.kind())
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
	if n := f.get("max-records"); n != nil {
		v, ok := c.intField(n, st.what+" max-records", 1, math.MaxInt64)
		if !ok {
			return nil, false
		}
		buf, bounded = buf.WithMaxRecords(v), true
	}
	if n := f.get("max-bytes"); n != nil {
		v, ok := c.intField(n, st.what+" max-bytes", 1, math.MaxInt64)
		if !ok {
			return nil, false
		}
		buf, bounded = buf.WithMaxBytes(v), true
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
	return t.suppress(s, name), true
}
