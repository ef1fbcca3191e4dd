//go:build cgo

package rocks

// #include <rocksdb/c.h>
//
// // stoat_iter_step moves it (0: seek to k, 1: seek for prev to k, 2: next,
// // 3: prev) and, when it is then valid, returns 1 with its key and value:
// // one call into C where the C API's own functions take four (move,
// // valid, key, value).
// static int stoat_iter_step(rocksdb_iterator_t* it, int op, const char* k, size_t klen, const char** key, size_t* keylen, const char** val, size_t* vallen) {
// 	switch (op) {
// 	case 0: rocksdb_iter_seek(it, k, klen); break;
// 	case 1: rocksdb_iter_seek_for_prev(it, k, klen); break;
// 	case 2: rocksdb_iter_next(it); break;
// 	default: rocksdb_iter_prev(it); break;
// 	}
// 	if (!rocksdb_iter_valid(it)) return 0;
// 	*key = rocksdb_iter_key(it, keylen);
// 	*val = rocksdb_iter_value(it, vallen);
// 	return 1;
// }
import "C"

import (
	"unsafe"

	"github.com/linxGnu/grocksdb"
)

// grocksdb.Iterator is one pointer, its rocksdb_iterator_t: this fails to
// compile if that changes (an index out of range of a one-element array).
var _ = [1]struct{}{}[unsafe.Sizeof(grocksdb.Iterator{})-unsafe.Sizeof(unsafe.Pointer(nil))]

// A stepper moves a RocksDB iterator and reads its key in one native call
// a step, and its value in one more, without the Slice grocksdb allocates
// for each: a window fetch or a session lookup per record steps a few
// times, and each native call has a fixed cost.
type stepper struct {
	p *C.rocksdb_iterator_t
	// val is the value the iterator is at, in RocksDB's memory: valid
	// until it moves.
	val []byte
}

func newStepper(it *grocksdb.Iterator) stepper {
	return stepper{p: *(**C.rocksdb_iterator_t)(unsafe.Pointer(it))}
}

const (
	stepSeek C.int = iota
	stepSeekForPrev
	stepNext
	stepPrev
)

// step moves the iterator by op (to k for the seeks) and appends its key
// to buf[:0] when it is valid; value then reads its value.
func (s *stepper) step(op C.int, k []byte, buf []byte) ([]byte, bool) {
	var kp *C.char
	if len(k) > 0 {
		kp = (*C.char)(unsafe.Pointer(&k[0]))
	}
	var key, val *C.char
	var n, vn C.size_t
	if C.stoat_iter_step(s.p, op, kp, C.size_t(len(k)), &key, &n, &val, &vn) == 0 {
		s.val = nil
		return buf[:0], false
	}
	s.val = unsafe.Slice((*byte)(unsafe.Pointer(val)), int(vn))
	return append(buf[:0], unsafe.Slice((*byte)(unsafe.Pointer(key)), int(n))...), true
}

// value is the value the iterator is at, in RocksDB's memory: valid until
// it moves.
func (s *stepper) value() []byte { return s.val }
