package topofile

import (
	"cmp"
	"fmt"
	"math"
	"reflect"
)

// aggPlan is an aggregation step made into the functions the DSL takes.
// Exactly one of add and reduce is set.
type aggPlan struct {
	init   func() any
	add    func(key, value, agg any) any
	sub    func(key, value, agg any) any // grouped tables
	merge  func(key, agg, other any) any // sessions
	reduce func(agg, value any) any
	// reduceSub is a grouped table's reduce subtractor.
	reduceSub func(agg, value any) any
	values    *dynSerde
}

var aggOptions = map[string][]string{
	"count":     {"store", "name"},
	"sum":       {"expr", "store", "value-serde"},
	"min":       {"expr", "store", "value-serde"},
	"max":       {"expr", "store", "value-serde"},
	"reduce":    {"reducer", "subtractor", "store", "value-serde"},
	"aggregate": {"initializer", "adder", "subtractor", "merger", "store", "value-serde"},
}

var aggShorthand = map[string]string{"sum": "expr", "min": "expr", "max": "expr", "reduce": "reducer"}

func (c *compiler) aggregationStep(st *step) (flow, bool) {
	f, ok := c.args(st, aggShorthand[st.op], aggOptions[st.op]...)
	if !ok {
		return nil, false
	}
	if f.has("name") {
		c.errf(f.key("name"), "%s: an aggregation's nodes are named after its store: give store instead", st.what)
		return nil, false
	}
	store, ok := c.store(f, st.what)
	if !ok {
		return nil, false
	}
	_, onTable := st.in.(*groupedTableFlow)
	w, windowed := st.in.(*windowedFlow)
	session := windowed && w.session != nil
	switch st.in.(type) {
	case anyGrouped, *windowedFlow, *groupedTableFlow:
	default:
		c.errf(st.at, "%s: needs a grouped stream or table (group-by-key or group-by first), but its input is %s", st.what, st.in.kind())
		return nil, false
	}
	if f.has("subtractor") && !onTable {
		c.errf(f.key("subtractor"), "%s: subtractor applies to grouped tables only", st.what)
		return nil, false
	}
	if f.has("merger") && !session {
		c.errf(f.key("merger"), "%s: merger applies to session windows only", st.what)
		return nil, false
	}
	in := st.in.meta()
	var plan aggPlan
	switch st.op {
	case "count":
		plan, ok = c.countPlan(), true
	case "sum", "min", "max":
		if onTable && st.op != "sum" {
			c.errf(st.at, "%s: a grouped table cannot keep a %s: a value it no longer holds cannot be taken back out", st.what, st.op)
			return nil, false
		}
		plan, ok = c.numericPlan(st, f, in)
	case "reduce":
		plan, ok = c.reducePlan(st, f, in, onTable)
	case "aggregate":
		plan, ok = c.aggregatePlan(st, f, in, onTable, session)
	}
	if !ok {
		return nil, false
	}
	switch g := st.in.(type) {
	case anyGrouped:
		if plan.reduce != nil {
			return g.reduce(plan.reduce, store, plan.values), true
		}
		return g.aggregate(plan.init, plan.add, store, plan.values), true
	case *windowedFlow:
		if plan.reduce != nil {
			return g.reduce(plan.reduce, store, plan.values), true
		}
		return g.aggregate(plan.init, plan.add, plan.merge, store, plan.values), true
	case *groupedTableFlow:
		if plan.reduce != nil {
			return g.reduce(plan.reduce, plan.reduceSub, store, plan.values), true
		}
		return g.aggregate(plan.init, plan.add, plan.sub, store, plan.values), true
	}
	return nil, false
}

func (c *compiler) countPlan() aggPlan {
	long, _ := namedSerde("long")
	return aggPlan{
		init: func() any { return int64(0) },
		add: func(_, _, agg any) any {
			return numOp(agg, int64(1), addNumbers)
		},
		sub: func(_, _, agg any) any {
			return numOp(agg, int64(-1), addNumbers)
		},
		merge:  func(_, a, b any) any { return numOp(a, b, addNumbers) },
		values: long.serde,
	}
}

// numOp applies op unless an operand carries a failure, which it passes on.
func numOp(a, b any, op func(a, b any) (any, error)) any {
	if err := failed(a); err != nil {
		return a
	}
	if err := failed(b); err != nil {
		return b
	}
	out, err := op(a, b)
	if err != nil {
		return &evalFailure{err: err}
	}
	return out
}

// numericPlan is sum, min and max over an expression of the record.
func (c *compiler) numericPlan(st *step, f fields, in *flowInfo) (aggPlan, bool) {
	en, ok := c.required(st, f, "expr")
	if !ok {
		return aggPlan{}, false
	}
	p, ok := c.compileExpr(en, st.what, keyValueScope(in), false)
	if !ok {
		return aggPlan{}, false
	}
	def := "double"
	if t := p.resultType(); t != nil {
		switch {
		case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
			def = "long"
		case t.Kind() == reflect.String && st.op != "sum":
			def = "string"
		case t.Kind() != reflect.Float32 && t.Kind() != reflect.Float64:
			c.errf(en, "%s %q: result is a %s; expected a number", st.what, p.src, t)
			return aggPlan{}, false
		}
	}
	defSerde, _ := namedSerde(def)
	vs, _, ok := c.optSerde(f, "value-serde", st.what, defSerde.serde, nil)
	if !ok {
		return aggPlan{}, false
	}
	field := func(k, v any) any { return p.runOrFail(keyValueEnv(k, v)) }
	plan := aggPlan{values: vs}
	switch st.op {
	case "sum":
		zero, _ := convert(int64(0), vs.goType)
		plan.init = func() any { return zero }
		plan.add = func(k, v, agg any) any { return numOp(agg, field(k, v), addNumbers) }
		plan.sub = func(k, v, agg any) any { return numOp(agg, field(k, v), subNumbers) }
		plan.merge = func(_, a, b any) any { return numOp(a, b, addNumbers) }
	case "min", "max":
		pick := func(a, b any) any {
			if a == nil {
				return b
			}
			if b == nil {
				return a
			}
			return numOp(a, b, func(a, b any) (any, error) {
				n, err := compareValues(a, b)
				if err != nil {
					return nil, err
				}
				if (n > 0) == (st.op == "min") {
					return b, nil
				}
				return a, nil
			})
		}
		plan.init = func() any { return nil }
		plan.add = func(k, v, agg any) any { return pick(agg, field(k, v)) }
		plan.merge = func(_, a, b any) any { return pick(a, b) }
	}
	return plan, true
}

func (c *compiler) reducePlan(st *step, f fields, in *flowInfo, onTable bool) (aggPlan, bool) {
	rn, ok := c.required(st, f, "reducer")
	if !ok {
		return aggPlan{}, false
	}
	vs, vt, ok := c.optSerde(f, "value-serde", st.what, in.valueSerde, in.valueType)
	if !ok {
		return aggPlan{}, false
	}
	sc := scope{"agg": vt, "value": in.valueType}
	rp, ok := c.compileExpr(rn, st.what+" reducer", sc, false)
	if !ok {
		return aggPlan{}, false
	}
	plan := aggPlan{values: vs, reduce: twoArg(rp, "agg", "value", vs)}
	if onTable {
		sn, ok := c.required(st, f, "subtractor")
		if !ok {
			return aggPlan{}, false
		}
		sp, ok := c.compileExpr(sn, st.what+" subtractor", sc, false)
		if !ok {
			return aggPlan{}, false
		}
		plan.reduceSub = twoArg(sp, "agg", "value", vs)
	}
	return plan, true
}

// twoArg makes a two-argument DSL callback of a program, its result
// converted to the store's serde type so that the next call sees the type
// the checker assumed.
func twoArg(p *program, a, b string, vs *dynSerde) func(x, y any) any {
	return func(x, y any) any {
		if failed(x) != nil {
			return x
		}
		if failed(y) != nil {
			return y
		}
		return settle(p.runOrFail(map[string]any{a: x, b: y}), vs)
	}
}

// settle converts an aggregate to the type its serde reads back, so that
// an aggregate fresh from an expression and one read from the store look
// alike to the next expression.
func settle(v any, vs *dynSerde) any {
	if v == nil || failed(v) != nil {
		return v
	}
	out, err := convert(v, vs.goType)
	if err != nil {
		return &evalFailure{err: fmt.Errorf("aggregate for serde %s: %w", vs.Name(), err)}
	}
	return out
}

func (c *compiler) aggregatePlan(st *step, f fields, in *flowInfo, onTable, session bool) (aggPlan, bool) {
	json, _ := namedSerde("json")
	vs, vt, ok := c.optSerde(f, "value-serde", st.what, json.serde, json.typ)
	if !ok {
		return aggPlan{}, false
	}
	var (
		progs = map[string]*program{}
		good  = true
	)
	compile := func(k string, sc scope, need bool) {
		n := f.get(k)
		if n == nil {
			if need {
				c.errf(st.at, "%s: missing option %q", st.what, k)
				good = false
			}
			return
		}
		p, ok := c.compileExpr(n, st.what+" "+k, sc, false)
		progs[k], good = p, good && ok
	}
	compile("initializer", scope{}, true)
	compile("adder", adderScope(in, vt), true)
	compile("subtractor", adderScope(in, vt), onTable)
	compile("merger", scope{"key": in.keyType, "agg": vt, "other": vt}, session)
	if !good {
		return aggPlan{}, false
	}
	plan := aggPlan{values: vs}
	ip := progs["initializer"]
	plan.init = func() any { return settle(ip.runOrFail(map[string]any{}), vs) }
	fold := func(p *program) func(k, v, agg any) any {
		if p == nil {
			return nil
		}
		return func(k, v, agg any) any {
			if failed(agg) != nil {
				return agg
			}
			return settle(p.runOrFail(map[string]any{"key": k, "value": v, "agg": agg}), vs)
		}
	}
	plan.add, plan.sub = fold(progs["adder"]), fold(progs["subtractor"])
	if mp := progs["merger"]; mp != nil {
		plan.merge = func(k, a, b any) any {
			if failed(a) != nil {
				return a
			}
			if failed(b) != nil {
				return b
			}
			return settle(mp.runOrFail(map[string]any{"key": k, "agg": a, "other": b}), vs)
		}
	}
	return plan, true
}

// Numbers from records and expressions come as any Go numeric type: sums
// stay integers while both sides are, and become float64 otherwise.

func asInt(v any) (int64, bool) {
	rv := reflect.ValueOf(v)
	switch {
	case rv.CanInt():
		return rv.Int(), true
	case rv.CanUint() && rv.Uint() <= math.MaxInt64:
		return int64(rv.Uint()), true
	}
	return 0, false
}

func asFloat(v any) (float64, bool) {
	if i, ok := asInt(v); ok {
		return float64(i), true
	}
	rv := reflect.ValueOf(v)
	if rv.CanFloat() {
		return rv.Float(), true
	}
	return 0, false
}

func addNumbers(a, b any) (any, error) {
	if x, ok := asInt(a); ok {
		if y, ok := asInt(b); ok {
			s := x + y
			if (y > 0 && s < x) || (y < 0 && s > x) {
				return nil, fmt.Errorf("integer overflow adding %d and %d", x, y)
			}
			return s, nil
		}
	}
	x, okA := asFloat(a)
	y, okB := asFloat(b)
	if !okA || !okB {
		return nil, fmt.Errorf("cannot add %s (%T) and %s (%T): both must be numbers", short(a), a, short(b), b)
	}
	return x + y, nil
}

func subNumbers(a, b any) (any, error) {
	if y, ok := asInt(b); ok && y != math.MinInt64 {
		return addNumbers(a, -y)
	}
	y, ok := asFloat(b)
	if !ok {
		return nil, fmt.Errorf("cannot subtract %s (%T): not a number", short(b), b)
	}
	return addNumbers(a, -y)
}

// compareValues orders two numbers or two strings.
func compareValues(a, b any) (int, error) {
	if x, ok := a.(string); ok {
		if y, ok := b.(string); ok {
			return cmp.Compare(x, y), nil
		}
	}
	if x, ok := asInt(a); ok {
		if y, ok := asInt(b); ok {
			return cmp.Compare(x, y), nil
		}
	}
	x, okA := asFloat(a)
	y, okB := asFloat(b)
	if !okA || !okB {
		return 0, fmt.Errorf("cannot compare %s (%T) and %s (%T): both must be numbers or both strings", short(a), a, short(b), b)
	}
	return cmp.Compare(x, y), nil
}
