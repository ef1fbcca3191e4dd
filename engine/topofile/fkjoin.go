package topofile

import (
	"github.com/stoatflow/stoatctl/engine/dsl"
)

// fkJoinStep compiles join-foreign-key and left-join-foreign-key: a table
// joined with the row of another table that its value names
// (dsl.TableJoinForeignKey, dsl.TableLeftJoinForeignKey).
func (c *compiler) fkJoinStep(st *step) (flow, bool) {
	var other *tableFlow[any]
	a, ok := c.stepArgs(st, stepSpec{allowed: []string{"with", "key", "joiner", "name", "store", "value-serde"},
		input: tableInput, required: []string{"with", "key"}, result: newValues,
		check: func(a *stepArgs) bool {
			otherName, ok := c.scalar(a.req[0], st.what+" with")
			if !ok {
				return false
			}
			o, ok := c.lookup(a.req[0], otherName, st.what)
			if !ok {
				return false
			}
			if other, ok = o.(*tableFlow[any]); !ok {
				c.errf(a.req[0], "%s: a foreign-key join looks rows up in a table with plain keys, but %s is %s", st.what, otherName, o.kind())
				return false
			}
			return c.readable(a.req[0], st, other)
		}})
	if !ok {
		return nil, false
	}
	in, ok := a.t.(*tableFlow[any])
	if !ok {
		c.errf(st.at, "%s: a foreign-key join reads a table with plain keys, but the table's keys are windowed", st.what)
		return nil, false
	}
	if !c.readable(st.at, st, in) {
		return nil, false
	}
	left, right := in.meta(), other.meta()
	kp, ok := c.compileExpr(a.req[1], st.what+" key", scope{"key": left.keyType, "value": left.valueType}, false)
	if !ok {
		return nil, false
	}
	var jp *program
	if jn := a.f.get("joiner"); jn != nil {
		if jp, ok = c.compileExpr(jn, st.what+" joiner", scope{"left": left.valueType, "right": right.valueType}, false); !ok {
			return nil, false
		}
	}
	spec, ok := c.store(a.f, st.what)
	if !ok {
		return nil, false
	}
	// An expression that fails gives its failure as the foreign key, whose
	// serde fails the record with the expression's error.
	foreignKey := func(k, v any) any {
		if failed(v) != nil {
			return v
		}
		return kp.runOrFail(map[string]any{"key": k, "value": v})
	}
	joiner := func(l, r any) any {
		if failed(l) != nil {
			return l
		}
		if failed(r) != nil {
			return r
		}
		if jp == nil {
			return map[string]any{"left": l, "right": r}
		}
		return jp.runOrFail(map[string]any{"left": l, "right": r})
	}
	opts := tableOpts(a.name)
	if spec.name != "" || spec.supplier != nil {
		opts = append(opts, materializedAs[any](spec).WithKeySerde(left.keySerde).WithValueSerde(a.info.valueSerde))
	} else {
		opts = append(opts, dsl.MaterializedWith[any, any](left.keySerde, a.info.valueSerde))
	}
	var out dsl.KTable[any, any]
	if st.op == "join-foreign-key" {
		out = dsl.TableJoinForeignKeyWithKey(in.t, other.t, foreignKey, joiner, opts...)
	} else {
		out = dsl.TableLeftJoinForeignKeyWithKey(in.t, other.t, foreignKey, joiner, opts...)
	}
	return &tableFlow[any]{t: out, info: a.info}, true
}
