package topofile

import (
	"flag"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/types"
)

var fastPathSeed = flag.Uint64("fastpath.seed", 0, "TestFastPathMatchesVM's seed (0: from the clock)")

// fastExprGen writes random expressions of the fast path's subset.
type fastExprGen struct{ r *rand.Rand }

var fastLiterals = []string{`""`, `"a"`, `"7"`, `" x "`, `"İ"`, `"value-"`}

func (g fastExprGen) str(depth int) string {
	n := 3
	if depth > 0 {
		n = 7
	}
	switch g.r.IntN(n) {
	case 0:
		return "key"
	case 1:
		return "value"
	case 2:
		return fastLiterals[g.r.IntN(len(fastLiterals))]
	case 3:
		return "upper(" + g.str(depth-1) + ")"
	case 4:
		return "lower(" + g.str(depth-1) + ")"
	case 5:
		return "trim(" + g.str(depth-1) + ")"
	default:
		return "(" + g.str(depth-1) + " + " + g.str(depth-1) + ")"
	}
}

func (g fastExprGen) boolean(depth int) string {
	ops := []string{"==", "!=", "startsWith", "endsWith", "contains"}
	n := 2
	if depth > 0 {
		n = 6
	}
	switch g.r.IntN(n) {
	case 0:
		return []string{"true", "false"}[g.r.IntN(2)]
	case 1, 2:
		return "(" + g.str(depth-1) + " " + ops[g.r.IntN(len(ops))] + " " + g.str(depth-1) + ")"
	case 3:
		return []string{"not ", "!"}[g.r.IntN(2)] + "(" + g.boolean(depth-1) + ")"
	default:
		return "(" + g.boolean(depth-1) + " " + []string{"and", "or", "&&", "||"}[g.r.IntN(4)] + " " + g.boolean(depth-1) + ")"
	}
}

// fastValues are the keys and values tried: strings, and what a string
// serde's static type does not rule out at run time (a null, a number an
// earlier step wrote).
var fastValues = []any{"", "a", "A b", " x ", "\tx\n", "ß", "İ", "\xff", "value-0000007", "7", nil, 7, 1.5}

// TestFastPathMatchesVM compiles random expressions of the subset, each
// of which must get a fast path, and requires that where the fast path
// takes a record its result is the VM's, given the key and value as
// values or, strings, as an entry hands them, and that it declines every
// record whose key or value is not a string. Replay a run with
// -fastpath.seed.
func TestFastPathMatchesVM(t *testing.T) {
	seed := *fastPathSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (-fastpath.seed to replay)", seed)
	g := fastExprGen{rand.New(rand.NewPCG(seed, seed))}
	sc := scope{"key": types.String, "value": types.String, "timestamp": types.Int64}
	for i := range 400 {
		src := g.str(3)
		if i%2 == 1 {
			src = g.boolean(3)
		}
		prog, err := expr.Compile(src, expr.Env(sc))
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		p := &program{prog: prog, src: src}
		fast := fastPathOf(p, false)
		if fast == nil {
			t.Fatalf("%s: no fast path", src)
		}
		for _, k := range fastValues {
			for _, v := range fastValues {
				got, ok := fast(&fastIn{key: k, value: v})
				want, err := expr.Run(prog, map[string]any{"key": k, "value": v, "timestamp": int64(0)})
				_, kStr := k.(string)
				_, vStr := v.(string)
				if !ok {
					if kStr && vStr {
						t.Fatalf("%s on key %#v value %#v: the fast path declined strings", src, k, v)
					}
					continue
				}
				if reads := readsOf(p); (!kStr && reads.key) || (!vStr && reads.value) {
					t.Fatalf("%s on key %#v value %#v: the fast path took a value that is not a string", src, k, v)
				}
				if err != nil || !reflect.DeepEqual(got, want) {
					t.Fatalf("%s on key %#v value %#v: fast path %#v, VM %#v (%v)", src, k, v, got, want, err)
				}
				if kStr && vStr {
					// As an entry hands them: the strings, unboxed.
					typed, ok := fast(&fastIn{typed: true, keyString: k.(string), valString: v.(string)})
					if !ok || !reflect.DeepEqual(typed, want) {
						t.Fatalf("%s on key %q value %q, typed: fast path %#v (%v), VM %#v", src, k, v, typed, ok, want)
					}
				}
			}
		}
	}
}

// TestFastPathSubset lists expressions outside the subset, which keep the
// VM, and the subset's edges.
func TestFastPathSubset(t *testing.T) {
	sc := scope{"key": types.String, "value": types.String, "timestamp": types.Int64, "n": types.Int}
	for src, want := range map[string]bool{
		`upper(value)`:                 true,
		`not (value endsWith "7")`:     true,
		`"a" + "b"`:                    true,
		`key + "/" + lower(value)`:     true,
		`len(value)`:                   false,
		`timestamp > 0`:                false,
		`value matches "a+"`:           false,
		`$env.value`:                   false,
		`trim(value, "x")`:             false,
		`upper(value) == string(n)`:    false,
		`value == "a" ? "x" : "y"`:     false,
		`value in ["a", "b"]`:          false,
		`value == "a" and timestamp>0`: false,
	} {
		prog, err := expr.Compile(src, expr.Env(sc))
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if got := fastPathOf(&program{prog: prog, src: src}, false) != nil; got != want {
			t.Errorf("%s: fast path %v, want %v", src, got, want)
		}
	}
	// A windowed flow's key is inside its window: no fast path.
	prog, _ := expr.Compile(`upper(value)`, expr.Env(sc))
	if fastPathOf(&program{prog: prog}, true) != nil {
		t.Error("a fast path on a windowed flow")
	}
	// An untyped value (json) gives the checker nothing to go on.
	prog, _ = expr.Compile(`upper(value)`, expr.Env(scope{"value": types.Any}))
	if fastPathOf(&program{prog: prog}, false) != nil {
		t.Error("a fast path for an untyped value")
	}
}
