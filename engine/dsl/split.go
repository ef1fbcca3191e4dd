package dsl

import (
	"strconv"

	"github.com/stoatflow/stoatctl/engine/processor"
)

// BranchedStream splits a stream by predicates: each record goes to the
// first branch whose predicate accepts it, or to the default branch.
type BranchedStream[K, V any] struct {
	s        KStream[K, V]
	prefix   string
	splitter string
	preds    []func(K, V) bool
	children []string
	branches map[string]KStream[K, V]
	ended    bool
}

// Branched names a branch.
type Branched struct{ name string }

// BranchAs names a branch; the branch's key in the result is the split's
// prefix followed by name.
func BranchAs(name string) Branched { return Branched{name: name} }

// Split starts a split. named, if given, is the prefix of branch names;
// otherwise the splitter's generated name is.
func (s KStream[K, V]) Split(named ...Named) *BranchedStream[K, V] {
	splitter := s.b.newName(branchPrefix, named)
	bs := &BranchedStream[K, V]{s: s, splitter: splitter, prefix: splitter, branches: map[string]KStream[K, V]{}}
	if n := named_(named); n != "" {
		bs.prefix = n
	}
	s.b.t.AddProcessor(splitter, keyKeeping(func(ctx processor.Context[any, any], rec processor.Erased) error {
		k, v, err := narrow[K, V](rec)
		if err != nil {
			return err
		}
		for i, pred := range bs.preds {
			if pred == nil || pred(k, v) {
				ctx.ForwardTo(rec, bs.children[i])
				return nil
			}
		}
		return nil
	}), s.node)
	return bs
}

func named_(opts []Named) string { return named(opts) }

func (bs *BranchedStream[K, V]) add(pred func(K, V) bool, branched []Branched) {
	if bs.ended {
		bs.s.b.t.Fail(bs.splitter, errSplitEnded)
		return
	}
	name := bs.prefix + strconv.Itoa(len(bs.preds)+1)
	if len(branched) > 0 && branched[0].name != "" {
		name = bs.prefix + branched[0].name
	}
	bs.s.b.t.AddProcessor(name, keyKeeping(func(ctx processor.Context[any, any], rec processor.Erased) error {
		ctx.Forward(rec)
		return nil
	}), bs.splitter)
	bs.preds = append(bs.preds, pred)
	bs.children = append(bs.children, name)
	bs.branches[name] = bs.s.derive(name)
}

// Branch adds a branch for the records pred accepts (and no earlier branch
// took).
func (bs *BranchedStream[K, V]) Branch(pred func(K, V) bool, branched ...Branched) *BranchedStream[K, V] {
	if pred == nil {
		bs.s.b.t.Fail(bs.splitter, errNilPredicate)
		return bs
	}
	bs.add(pred, branched)
	return bs
}

// DefaultBranch adds a branch for every record no other branch took and
// returns all branches by name.
func (bs *BranchedStream[K, V]) DefaultBranch(branched ...Branched) map[string]KStream[K, V] {
	if len(branched) == 0 || branched[0].name == "" {
		branched = []Branched{{name: "0"}}
	}
	bs.add(nil, branched)
	bs.ended = true
	return bs.branches
}

// NoDefaultBranch drops records no branch took and returns the branches.
func (bs *BranchedStream[K, V]) NoDefaultBranch() map[string]KStream[K, V] {
	bs.ended = true
	return bs.branches
}
