package topofile

import (
	"time"

	"github.com/expr-lang/expr/types"
	"go.yaml.in/yaml/v3"

	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/window"
)

func (c *compiler) joinStep(st *step) (flow, bool) {
	f, ok := c.args(st, "with", "with", "joiner", "window", "before", "after", "grace", "name", "store", "value-serde")
	if !ok {
		return nil, false
	}
	wn, ok := c.required(st, f, "with")
	if !ok {
		return nil, false
	}
	otherName, ok := c.scalar(wn, st.what+" with")
	if !ok {
		return nil, false
	}
	other, ok := c.lookup(wn, otherName, st.what)
	if !ok {
		return nil, false
	}
	if _, global := other.(*globalFlow); global {
		c.errf(wn, "%s: %s is a global table; join it with join-global or left-join-global", st.what, otherName)
		return nil, false
	}
	name, ok := c.nodeName(f, st, "")
	if !ok {
		return nil, false
	}
	// A table-table join's result store may be versioned, as a table's.
	_, inTable := st.in.(*tableFlow[any])
	_, otherTable := other.(*tableFlow[any])
	spec, ok := c.storeOf(f, st.what, inTable && otherTable)
	if !ok {
		return nil, false
	}
	store := spec.name
	left, right := st.in.meta(), other.meta()
	info := flowInfo{keySerde: left.keySerde, keyType: left.keyType, valueType: types.Any}
	if info.valueSerde, _, ok = c.optSerde(f, "value-serde", st.what, c.defValue, nil); !ok {
		return nil, false
	}
	plain := func(fl flow) bool {
		switch fl.(type) {
		case *streamFlow[any], *tableFlow[any]:
			return true
		}
		return false
	}
	if !plain(st.in) || !plain(other) {
		c.errf(st.at, "%s: joins read streams or tables with plain keys, but the inputs are %s (windowed keys: %v) and %s (windowed keys: %v)",
			st.what, st.in.kind(), left.win != nil, other.kind(), right.win != nil)
		return nil, false
	}
	_, tableTable := st.in.(*tableFlow[any])
	sc := scope{"key": left.keyType, "left": left.valueType, "right": right.valueType}
	if tableTable {
		sc = scope{"left": left.valueType, "right": right.valueType}
	}
	var joiner func(k, l, r any) any
	if jn := f.get("joiner"); jn != nil {
		p, ok := c.compileExpr(jn, st.what+" joiner", sc, false)
		if !ok {
			return nil, false
		}
		joiner = func(k, l, r any) any {
			if failed(l) != nil {
				return l
			}
			if failed(r) != nil {
				return r
			}
			env := map[string]any{"left": l, "right": r}
			if !tableTable {
				env["key"] = k
			}
			return p.runOrFail(env)
		}
	} else {
		joiner = func(_, l, r any) any { return map[string]any{"left": l, "right": r} }
	}
	windowOpts := []string{"window", "before", "after", "grace"}

	switch in := st.in.(type) {
	case *streamFlow[any]:
		switch o := other.(type) {
		case *streamFlow[any]:
			if !f.has("window") {
				c.errf(st.at, "%s: a stream-stream join needs a window: the largest time difference between joined records", st.what)
				return nil, false
			}
			jw, ok := c.joinWindows(st, f)
			if !ok {
				return nil, false
			}
			sj := dsl.StreamJoinedWith[any, any, any](left.keySerde, left.valueSerde, right.valueSerde).WithName(name).WithStoreName(store)
			if spec.supplier != nil {
				sj = sj.WithThisStoreSupplier(spec.supplier).WithOtherStoreSupplier(spec.supplier)
			}
			var out dsl.KStream[any, any]
			switch st.op {
			case "join":
				out = dsl.JoinStream(in.s, o.s, joiner, jw, sj)
			case "left-join":
				out = dsl.LeftJoinStream(in.s, o.s, joiner, jw, sj)
			default:
				out = dsl.OuterJoinStream(in.s, o.s, joiner, jw, sj)
			}
			return &streamFlow[any]{s: out, info: info}, true
		case *tableFlow[any]:
			if !c.readable(wn, st, o) {
				return nil, false
			}
			if bad := c.refuse(st, f, windowOpts[:3], "a stream-table join has no window"); bad {
				return nil, false
			}
			if f.has("store") {
				c.errf(f.key("store"), "%s: a stream-table join keeps no store of its own", st.what)
				return nil, false
			}
			j := dsl.JoinedWith[any, any, any](left.keySerde, left.valueSerde, right.valueSerde).WithName(name)
			if gn := f.get("grace"); gn != nil {
				grace, ok := c.duration(gn, st.what+" grace")
				if !ok {
					return nil, false
				}
				retention, versioned := o.t.Versioned()
				switch { // c.duration refuses a negative grace
				case !versioned:
					c.errf(gn, "%s grace: %s is not versioned, and a stream-table join's grace period needs a versioned table: give its store a history-retention", st.what, otherName)
					return nil, false
				case grace > retention:
					c.errf(gn, "%s grace: %v is longer than %s's history retention %v: history retention must be at least the grace period", st.what, grace, otherName, retention)
					return nil, false
				}
				j = j.WithGracePeriod(grace)
			}
			var out dsl.KStream[any, any]
			switch st.op {
			case "join":
				out = dsl.JoinTable(in.s, o.t, joiner, j)
			case "left-join":
				out = dsl.LeftJoinTable(in.s, o.t, joiner, j)
			default:
				c.errf(st.at, "%s: a stream-table join is inner (join) or left (left-join); an outer join needs two streams or two tables", st.what)
				return nil, false
			}
			return &streamFlow[any]{s: out, info: info}, true
		}
	case *tableFlow[any]:
		o, ok := other.(*tableFlow[any])
		if !ok {
			c.errf(wn, "%s: a table joins another table, but %s is %s (to join a stream with a table, start from the stream)", st.what, otherName, other.kind())
			return nil, false
		}
		if !c.readable(st.at, st, in) || !c.readable(wn, st, o) {
			return nil, false
		}
		if bad := c.refuse(st, f, windowOpts, "a table-table join has no window"); bad {
			return nil, false
		}
		opts := tableOpts(name)
		if store != "" || spec.supplier != nil {
			opts = append(opts, materializedAs[any](spec).WithKeySerde(left.keySerde).WithValueSerde(info.valueSerde))
		}
		vj := func(l, r any) any { return joiner(nil, l, r) }
		var out dsl.KTable[any, any]
		switch st.op {
		case "join":
			out = dsl.TableJoin(in.t, o.t, vj, opts...)
		case "left-join":
			out = dsl.TableLeftJoin(in.t, o.t, vj, opts...)
		default:
			out = dsl.TableOuterJoin(in.t, o.t, vj, opts...)
		}
		return &tableFlow[any]{t: out, info: info}, true
	}
	c.errf(st.at, "%s: cannot join %s with %s", st.what, st.in.kind(), other.kind())
	return nil, false
}

// readable reports, at n, a join input that cannot be looked up: a table
// suppressed until the barrier keeps its buffer in the suppress
// processor's memory, which no join can read (the DSL's Build refuses it
// too, without the file position). A table suppressed until a time limit
// or a window's close is read through its buffer.
func (c *compiler) readable(n *yaml.Node, st *step, t *tableFlow[any]) bool {
	if t.noLookup == "" {
		return true
	}
	c.errf(n, "%s: cannot join a table suppressed until the barrier (%s): its buffer lives in memory only, where no join can read it; join before suppressing, or suppress until a time limit", st.what, t.noLookup)
	return false
}

// refuse reports the first of keys present, which the join does not take.
func (c *compiler) refuse(st *step, f fields, keys []string, why string) bool {
	for _, k := range keys {
		if f.has(k) {
			c.errf(f.key(k), "%s: %s; remove %s", st.what, why, k)
			return true
		}
	}
	return false
}

func (c *compiler) joinWindows(st *step, f fields) (window.JoinWindows, bool) {
	d, ok := c.duration(f.get("window"), st.what+" window")
	if !ok {
		return window.JoinWindows{}, false
	}
	grace, ok := c.optDuration(f, "grace", st.what)
	if !ok {
		return window.JoinWindows{}, false
	}
	jw := window.JoinWindowsOfTimeDifferenceAndGrace(d, grace)
	for _, k := range []string{"before", "after"} {
		if n := f.get(k); n != nil {
			v, ok := c.duration(n, st.what+" "+k)
			if !ok {
				return jw, false
			}
			if k == "before" {
				jw = jw.Before(v)
			} else {
				jw = jw.After(v)
			}
		}
	}
	return jw, true
}

func msDuration(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }
