package topofile

import (
	"go.yaml.in/yaml/v3"

	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/processor"
)

// globalTableFields are the fields of a global table. It reads its whole
// topic from the start, outside event time, so it takes no watermark,
// offset reset or timestamp.
var globalTableFields = []string{"topic", "key-serde", "value-serde", "store", "name"}

// globalFlow is a global table. No step reads it as its input: streams
// look values up in it with join-global and left-join-global.
type globalFlow struct {
	g    dsl.GlobalKTable[any, any]
	info flowInfo
}

func (g *globalFlow) kind() string    { return "a global table" }
func (g *globalFlow) meta() *flowInfo { return &g.info }

// lookupKeyed is a stream value with the key to look it up by, computed by
// the processor a join-global adds before the join when its key
// expression reads the record's timestamp or headers, which the DSL's key
// selector does not see.
type lookupKeyed struct{ key, value any }

func (c *compiler) globalJoinStep(st *step) (flow, bool) {
	var g *globalFlow
	a, ok := c.stepArgs(st, stepSpec{allowed: []string{"with", "key", "joiner", "name", "value-serde"},
		required: []string{"with", "key", "joiner"}, result: newValues,
		check: func(a *stepArgs) bool {
			var ok bool
			g, ok = c.globalTable(st, a.req[0])
			return ok
		}})
	if !ok {
		return nil, false
	}
	in, ok := st.in.(*streamFlow[any])
	if !ok {
		c.errf(st.at, "%s: joins read streams with plain keys, but the stream's keys are windowed; select a plain key first", st.what)
		return nil, false
	}
	left := in.meta()
	kp, ok := c.recordProgram(st, a.req[1], st.what+" key", false)
	if !ok {
		return nil, false
	}
	jp, ok := c.compileExpr(a.req[2], st.what+" joiner", scope{"key": left.keyType, "left": left.valueType, "right": g.info.valueType}, false)
	if !ok {
		return nil, false
	}
	keyOf := func(k, v any) any {
		if failed(v) != nil {
			// The failure, as the key, fails the lookup with its error.
			return v
		}
		return kp.runOrFail(keyValueEnv(k, v))
	}
	valueOf := func(v any) any { return v }
	s := in.s
	if kp.reads.timestamp || kp.reads.headers {
		// Compute the key where the record is in hand; a record without a
		// value goes through as it is, for the join to drop.
		pre := ""
		if a.name != "" {
			pre = a.name + "-key"
		}
		s = in.values(pre, func(ev *evaluator, k, v any, ts int64, hs processor.Headers) ([]any, error) {
			if v == nil {
				return ev.single(nil), nil
			}
			nk, err := kp.run(ev, kp.env(ev, k, v, ts, hs))
			if err != nil {
				return nil, err
			}
			return ev.single(&lookupKeyed{key: nk, value: v}), nil
		}).(*streamFlow[any]).s
		keyOf = func(_, v any) any { return v.(*lookupKeyed).key }
		valueOf = func(v any) any { return v.(*lookupKeyed).value }
	}
	joiner := func(k, l, r any) any {
		l = valueOf(l)
		if failed(l) != nil {
			return l
		}
		return jp.runOrFail(map[string]any{"key": k, "left": l, "right": r})
	}
	var out dsl.KStream[any, any]
	if st.op == "join-global" {
		out = dsl.JoinGlobal(s, g.g, keyOf, joiner, named(a.name)...)
	} else {
		out = dsl.LeftJoinGlobal(s, g.g, keyOf, joiner, named(a.name)...)
	}
	return &streamFlow[any]{s: out, info: a.info}, true
}

// globalTable finds the global table a join-global's with names.
func (c *compiler) globalTable(st *step, wn *yaml.Node) (*globalFlow, bool) {
	name, ok := c.scalar(wn, st.what+" with")
	if !ok {
		return nil, false
	}
	if _, defined := c.defined[name]; !defined {
		c.errf(wn, "%s: no global table is called %q (define it under global-tables before it is used)", st.what, name)
		return nil, false
	}
	f, ok := c.lookup(wn, name, st.what)
	if !ok {
		return nil, false
	}
	g, ok := f.(*globalFlow)
	if !ok {
		c.errf(wn, "%s: %s is %s, not a global table (join a stream with a table with join or left-join)", st.what, name, f.kind())
		return nil, false
	}
	return g, true
}
