package dsl

import (
	"reflect"

	"github.com/stoatflow/stoatctl/engine/metrics"
	"github.com/stoatflow/stoatctl/engine/processor"
)

// countDropped counts a record an operation drops, in the registry the
// runtime exposes through the context when it has one.
func countDropped(ctx processor.Context[any, any], reason string) {
	if m, ok := ctx.(interface{ Metrics() *metrics.Registry }); ok {
		m.Metrics().Counter(metrics.DroppedRecords, "reason", reason).Add(1)
	}
}

// droppedNullKey counts a record dropped for having no key.
func droppedNullKey(ctx processor.Context[any, any]) { countDropped(ctx, metrics.ReasonNullKey) }

// droppedNullValue counts a record dropped for having no value. Kafka
// Streams counts null keys and null values in one dropped-records sensor;
// the label says which it was.
func droppedNullValue(ctx processor.Context[any, any]) { countDropped(ctx, metrics.ReasonNullValue) }

// absent reports whether x is a null: nil, or a nil pointer, map, slice,
// channel, function or interface held in an any. Typed functions return
// typed nils, which an any does not compare equal to nil.
func absent(x any) bool {
	if x == nil {
		return true
	}
	v := reflect.ValueOf(x)
	switch v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Chan, reflect.Func, reflect.Interface, reflect.UnsafePointer:
		return v.IsNil()
	}
	return false
}

// anyOrNil returns x, or an untyped nil when x is a null, so that a null
// reaching a sink or a change is one the runtime recognises.
func anyOrNil(x any) any {
	if absent(x) {
		return nil
	}
	return x
}

// keyedRecord narrows rec for an aggregation, after the null checks every
// aggregation makes: ok is false, with the drop counted, for a record
// without a key, or without a value when needValue (a windowed count
// counts null values; the others drop them).
func keyedRecord[K, V any](ctx processor.Context[any, any], rec processor.Erased, needValue bool) (k K, v V, ok bool, err error) {
	if absent(rec.Key) {
		droppedNullKey(ctx)
		return k, v, false, nil
	}
	if needValue && absent(rec.Value) {
		droppedNullValue(ctx)
		return k, v, false, nil
	}
	k, v, err = narrow[K, V](rec)
	return k, v, err == nil, err
}
