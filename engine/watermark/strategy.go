package watermark

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Unset is the watermark before any has been emitted.
const Unset int64 = math.MinInt64

// DefaultOutOfOrderness is the bound of the default strategy.
const DefaultOutOfOrderness = 10 * time.Second

// Generator makes a partition's watermark from the event times it sees.
// Implementations are used by one goroutine at a time.
type Generator interface {
	// OnEvent is called for every record with its event time.
	OnEvent(eventTime int64)
	// Current is the partition's watermark now, or Unset.
	Current() int64
}

// TimestampAssigner reads a record's event time; recordTimestamp is the
// timestamp Kafka gave it. key and value are deserialized.
type TimestampAssigner func(key, value any, recordTimestamp int64) (int64, error)

// Kind names a built-in strategy.
type Kind string

const (
	KindBoundedOutOfOrderness Kind = "bounded-out-of-orderness"
	KindMonotonous            Kind = "monotonous"
	KindNone                  Kind = "no-watermarks"
	KindCustom                Kind = "custom"
)

// Strategy is a source's event-time declaration: how event time is read,
// how its watermark is generated, when its partitions count as idle and
// which alignment group it belongs to. The zero value is the default
// strategy: record timestamps, a 10 s out-of-orderness bound.
type Strategy struct {
	kind      Kind
	bound     time.Duration
	custom    func() Generator
	assigner  TimestampAssigner
	idleness  time.Duration
	alignment *Alignment
}

// Alignment is a source's alignment group.
type Alignment struct {
	Group          string
	MaxDrift       time.Duration
	UpdateInterval time.Duration
}

// ForBoundedOutOfOrderness trails the largest event time seen by bound.
func ForBoundedOutOfOrderness(bound time.Duration) Strategy {
	return Strategy{kind: KindBoundedOutOfOrderness, bound: bound}
}

// ForMonotonousTimestamps is a zero bound: the watermark is the largest
// event time seen.
func ForMonotonousTimestamps() Strategy {
	return Strategy{kind: KindMonotonous}
}

// NoWatermarks never advances; a topology that needs event time refuses a
// source declared this way.
func NoWatermarks() Strategy { return Strategy{kind: KindNone} }

// ForGenerator uses a custom generator, one per partition.
func ForGenerator(newGenerator func() Generator) Strategy {
	return Strategy{kind: KindCustom, custom: newGenerator}
}

// WithTimestampAssigner reads event time with assigner.
func (s Strategy) WithTimestampAssigner(a TimestampAssigner) Strategy { s.assigner = a; return s }

// WithIdleness marks a partition idle after timeout without records.
func (s Strategy) WithIdleness(timeout time.Duration) Strategy { s.idleness = timeout; return s }

// WithWatermarkAlignment puts the source in an alignment group.
func (s Strategy) WithWatermarkAlignment(group string, maxDrift, updateInterval time.Duration) Strategy {
	s.alignment = &Alignment{Group: group, MaxDrift: maxDrift, UpdateInterval: updateInterval}
	return s
}

// Kind is the strategy's built-in kind.
func (s Strategy) Kind() Kind {
	if s.kind == "" {
		return KindBoundedOutOfOrderness
	}
	return s.kind
}

// Bound is the out-of-orderness bound of a bounded strategy.
func (s Strategy) Bound() time.Duration {
	switch s.Kind() {
	case KindBoundedOutOfOrderness:
		if s.kind == "" {
			return DefaultOutOfOrderness
		}
		return s.bound
	}
	return 0
}

// Assigner is the timestamp assigner, or nil for record timestamps.
func (s Strategy) Assigner() TimestampAssigner { return s.assigner }

// Idleness is the idleness timeout, 0 when the source sets none.
func (s Strategy) Idleness() time.Duration { return s.idleness }

// AlignmentGroup is the alignment declaration, or nil.
func (s Strategy) AlignmentGroup() *Alignment { return s.alignment }

// AdvancesWatermark reports whether the strategy can ever move a watermark.
func (s Strategy) AdvancesWatermark() bool { return s.Kind() != KindNone }

// NewGenerator returns a generator for one partition.
func (s Strategy) NewGenerator() Generator {
	switch s.Kind() {
	case KindMonotonous:
		return &bounded{max: Unset}
	case KindNone:
		return none{}
	case KindCustom:
		return s.custom()
	}
	return &bounded{max: Unset, bound: s.Bound().Milliseconds()}
}

// ErrInvalidStrategy is wrapped by Validate's errors.
var ErrInvalidStrategy = errors.New("invalid watermark strategy")

// Validate checks the declaration; source names the source in errors.
func (s Strategy) Validate(source string) error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("source %s: %w: %s", source, ErrInvalidStrategy, fmt.Sprintf(format, args...))
	}
	if s.Kind() == KindBoundedOutOfOrderness && s.kind != "" && s.bound < 0 {
		return fail("negative out-of-orderness bound %s", s.bound)
	}
	if s.Kind() == KindCustom && s.custom == nil {
		return fail("custom strategy without a generator")
	}
	if s.idleness < 0 {
		return fail("negative idleness timeout %s", s.idleness)
	}
	if a := s.alignment; a != nil {
		switch {
		case a.Group == "":
			return fail("alignment group has no name")
		case a.MaxDrift <= 0:
			return fail("alignment group %s: maximum drift %s must be positive", a.Group, a.MaxDrift)
		case a.UpdateInterval < 0:
			return fail("alignment group %s: negative update interval %s", a.Group, a.UpdateInterval)
		case s.Kind() == KindNone:
			return fail("alignment group %s: a source without watermarks cannot be aligned", a.Group)
		}
	}
	return nil
}

// bounded trails the largest event time by a fixed bound; monotonous is a
// zero bound.
type bounded struct {
	max   int64
	bound int64
}

func (g *bounded) OnEvent(ts int64) {
	if ts > g.max {
		g.max = ts
	}
}

func (g *bounded) Current() int64 {
	if g.max == Unset {
		return Unset
	}
	return g.max - g.bound
}

// Preview is the watermark after an event at ts, the generator unchanged.
func (g *bounded) Preview(ts int64) int64 { return max(g.max, ts) - g.bound }

type none struct{}

func (none) OnEvent(int64)  {}
func (none) Current() int64 { return Unset }
