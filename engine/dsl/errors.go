package dsl

import "errors"

var (
	errSplitEnded   = errors.New("branch added after the split was ended")
	errNilPredicate = errors.New("nil predicate")
)
