//go:build cgo

package migrate

// The RocksDB that reads a Kafka Streams store is loaded at run time, not
// linked: Kafka Streams 4.4 writes its stores with RocksDB 10 (rocksdbjni
// 10.1.3), whose table format (format_version 6) the RocksDB our state
// backend links (Debian's 7.8, through grocksdb) cannot read ("Corrupt or
// unsupported format_version: 6"). Two RocksDB versions cannot be linked
// into one binary, so the reader opens a RocksDB shared library with
// dlopen, private to itself (RTLD_LOCAL, and RTLD_DEEPBIND so that the
// library binds its own symbols before the linked RocksDB's), and calls its
// C API through the table below. The library is the one the Kafka Streams
// application itself runs: its rocksdbjni jar holds librocksdbjni-*.so,
// which exports RocksDB's whole C API. docs/decisions/0007-offline-rocksdb-library.md
// says why.

/*
#cgo LDFLAGS: -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <stddef.h>

typedef struct {
	void* h;
	void* (*options_create)(void);
	void (*options_destroy)(void*);
	char** (*list_column_families)(const void*, const char*, size_t*, char**);
	void (*list_column_families_destroy)(char**, size_t);
	void* (*open_ro_cf)(const void*, const char*, int, const char* const*, const void* const*, void**, unsigned char, char**);
	void (*close)(void*);
	void (*cf_destroy)(void*);
	void* (*readoptions_create)(void);
	void (*readoptions_destroy)(void*);
	void* (*create_iterator_cf)(void*, const void*, void*);
	void (*iter_seek_to_first)(void*);
	unsigned char (*iter_valid)(const void*);
	void (*iter_next)(void*);
	const char* (*iter_key)(const void*, size_t*);
	const char* (*iter_value)(const void*, size_t*);
	void (*iter_get_error)(const void*, char**);
	void (*iter_destroy)(void*);
	char* (*get_cf)(void*, const void*, void*, const char*, size_t, size_t*, char**);
	void (*free)(void*);
} ks_rocks;

static const char* ks_load(ks_rocks* r, const char* path) {
	r->h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
	if (!r->h) return dlerror();
#define KS_SYM(field, name) if (!(*(void**)(&r->field) = dlsym(r->h, name))) return "missing symbol " name;
	KS_SYM(options_create, "rocksdb_options_create")
	KS_SYM(options_destroy, "rocksdb_options_destroy")
	KS_SYM(list_column_families, "rocksdb_list_column_families")
	KS_SYM(list_column_families_destroy, "rocksdb_list_column_families_destroy")
	KS_SYM(open_ro_cf, "rocksdb_open_for_read_only_column_families")
	KS_SYM(close, "rocksdb_close")
	KS_SYM(cf_destroy, "rocksdb_column_family_handle_destroy")
	KS_SYM(readoptions_create, "rocksdb_readoptions_create")
	KS_SYM(readoptions_destroy, "rocksdb_readoptions_destroy")
	KS_SYM(create_iterator_cf, "rocksdb_create_iterator_cf")
	KS_SYM(iter_seek_to_first, "rocksdb_iter_seek_to_first")
	KS_SYM(iter_valid, "rocksdb_iter_valid")
	KS_SYM(iter_next, "rocksdb_iter_next")
	KS_SYM(iter_key, "rocksdb_iter_key")
	KS_SYM(iter_value, "rocksdb_iter_value")
	KS_SYM(iter_get_error, "rocksdb_iter_get_error")
	KS_SYM(iter_destroy, "rocksdb_iter_destroy")
	KS_SYM(get_cf, "rocksdb_get_cf")
	KS_SYM(free, "rocksdb_free")
	return NULL;
}

static void* ks_options_create(ks_rocks* r) { return r->options_create(); }
static void ks_options_destroy(ks_rocks* r, void* o) { r->options_destroy(o); }
static char** ks_list_cf(ks_rocks* r, void* o, const char* path, size_t* n, char** err) { return r->list_column_families(o, path, n, err); }
static void ks_list_cf_destroy(ks_rocks* r, char** l, size_t n) { r->list_column_families_destroy(l, n); }
static void* ks_open_ro(ks_rocks* r, void* o, const char* path, int n, char** names, void** handles, char** err) {
	const void* opts[n];
	for (int i = 0; i < n; i++) opts[i] = o;
	return r->open_ro_cf(o, path, n, (const char* const*)names, opts, handles, 0, err);
}
static void ks_close(ks_rocks* r, void* db) { r->close(db); }
static void ks_cf_destroy(ks_rocks* r, void* h) { r->cf_destroy(h); }
static void* ks_ro_create(ks_rocks* r) { return r->readoptions_create(); }
static void ks_ro_destroy(ks_rocks* r, void* ro) { r->readoptions_destroy(ro); }
static void* ks_iter(ks_rocks* r, void* db, void* ro, void* cf) { return r->create_iterator_cf(db, ro, cf); }
static void ks_iter_first(ks_rocks* r, void* it) { r->iter_seek_to_first(it); }
static int ks_iter_valid(ks_rocks* r, void* it) { return r->iter_valid(it); }
static void ks_iter_next(ks_rocks* r, void* it) { r->iter_next(it); }
static const char* ks_iter_key(ks_rocks* r, void* it, size_t* n) { return r->iter_key(it, n); }
static const char* ks_iter_value(ks_rocks* r, void* it, size_t* n) { return r->iter_value(it, n); }
static void ks_iter_error(ks_rocks* r, void* it, char** err) { r->iter_get_error(it, err); }
static void ks_iter_destroy(ks_rocks* r, void* it) { r->iter_destroy(it); }
static char* ks_get(ks_rocks* r, void* db, void* ro, void* cf, const char* k, size_t kn, size_t* vn, char** err) { return r->get_cf(db, ro, cf, k, kn, vn, err); }
static void ks_free(ks_rocks* r, void* p) { r->free(p); }
*/
import "C"

import (
	"archive/zip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"unsafe"
)

// DefaultRocksDBLibrary is the library loaded when Options.RocksDBLibrary
// is empty: the system's RocksDB, which reads stores of Kafka Streams
// versions whose RocksDB it is at least as new as.
const DefaultRocksDBLibrary = "librocksdb.so"

// rocksLib is a loaded RocksDB library.
type rocksLib struct {
	c    *C.ks_rocks
	path string
}

var libs struct {
	mu     sync.Mutex
	loaded map[string]*rocksLib
}

// loadRocks loads the RocksDB library at path once per process. A jar (a
// rocksdbjni jar) is opened and the native library for this machine taken
// from it.
func loadRocks(path string) (*rocksLib, error) {
	if path == "" {
		path = DefaultRocksDBLibrary
	}
	libs.mu.Lock()
	defer libs.mu.Unlock()
	if l, ok := libs.loaded[path]; ok {
		return l, nil
	}
	file := path
	if strings.HasSuffix(path, ".jar") {
		tmp, err := extractJNI(path)
		if err != nil {
			return nil, err
		}
		// The mapping outlives the name: once loaded, the file can go.
		defer os.Remove(tmp)
		file = tmp
	}
	c := (*C.ks_rocks)(C.calloc(1, C.sizeof_ks_rocks))
	cpath := C.CString(file)
	defer C.free(unsafe.Pointer(cpath))
	if msg := C.ks_load(c, cpath); msg != nil {
		err := fmt.Errorf("load RocksDB library %s: %s", path, C.GoString(msg))
		C.free(unsafe.Pointer(c))
		return nil, err
	}
	l := &rocksLib{c: c, path: path}
	if libs.loaded == nil {
		libs.loaded = map[string]*rocksLib{}
	}
	libs.loaded[path] = l
	return l, nil
}

// extractJNI copies a rocksdbjni jar's native library for this machine
// (librocksdbjni-linux64.so on amd64, librocksdbjni-linux-aarch64.so on
// arm64) to a temporary file.
func extractJNI(jar string) (string, error) {
	name := map[string]string{"amd64": "librocksdbjni-linux64.so", "arm64": "librocksdbjni-linux-aarch64.so"}[runtime.GOARCH]
	if name == "" || runtime.GOOS != "linux" {
		return "", fmt.Errorf("%s: no native RocksDB library for %s/%s is known", jar, runtime.GOOS, runtime.GOARCH)
	}
	z, err := zip.OpenReader(jar)
	if err != nil {
		return "", fmt.Errorf("open %s: %w", jar, err)
	}
	defer z.Close()
	for _, f := range z.File {
		if f.Name != name {
			continue
		}
		r, err := f.Open()
		if err != nil {
			return "", fmt.Errorf("%s: %s: %w", jar, name, err)
		}
		defer r.Close()
		out, err := os.CreateTemp("", "stoatctl-rocksdb-*.so")
		if err != nil {
			return "", err
		}
		if _, err := io.Copy(out, r); err != nil {
			out.Close()
			os.Remove(out.Name())
			return "", fmt.Errorf("%s: extract %s: %w", jar, name, err)
		}
		if err := out.Close(); err != nil {
			os.Remove(out.Name())
			return "", err
		}
		return out.Name(), nil
	}
	return "", fmt.Errorf("%s holds no %s: not a rocksdbjni jar for this machine", jar, name)
}

// cerr turns a RocksDB error string (allocated by the library) into an
// error, and frees it.
func (l *rocksLib) cerr(e *C.char) error {
	if e == nil {
		return nil
	}
	defer C.ks_free(l.c, unsafe.Pointer(e))
	return errors.New(C.GoString(e))
}

// instance is one RocksDB instance of a Kafka Streams store (a key-value
// store, or a segment), open read-only: nothing is written to it, and
// Kafka Streams' LOCK file is not taken.
type instance struct {
	path string
	lib  *rocksLib
	db   unsafe.Pointer
	opts unsafe.Pointer
	ro   unsafe.Pointer
	cfs  map[string]unsafe.Pointer
}

func openInstance(lib *rocksLib, path string) (*instance, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	opts := C.ks_options_create(lib.c)
	var n C.size_t
	var e *C.char
	list := C.ks_list_cf(lib.c, opts, cpath, &n, &e)
	if err := lib.cerr(e); err != nil {
		C.ks_options_destroy(lib.c, opts)
		return nil, &StateDirError{Path: path, Err: fmt.Errorf("not a RocksDB instance: %w", err)}
	}
	names := make([]string, int(n))
	for i, p := range unsafe.Slice(list, int(n)) {
		names[i] = C.GoString(p)
	}
	handles := make([]unsafe.Pointer, len(names))
	// The names array is the library's; its handles array is C memory too,
	// so that no Go pointer is handed over.
	ch := (*unsafe.Pointer)(C.calloc(C.size_t(len(names)), C.size_t(unsafe.Sizeof(unsafe.Pointer(nil)))))
	defer C.free(unsafe.Pointer(ch))
	db := C.ks_open_ro(lib.c, opts, cpath, C.int(len(names)), list, ch, &e)
	C.ks_list_cf_destroy(lib.c, list, n)
	if err := lib.cerr(e); err != nil {
		C.ks_options_destroy(lib.c, opts)
		if strings.Contains(err.Error(), "format_version") {
			err = fmt.Errorf("%w (a newer RocksDB wrote this store: load the one the Kafka Streams application runs, its rocksdbjni jar, with --rocksdb-library)", err)
		}
		return nil, &StateDirError{Path: path, Err: fmt.Errorf("open RocksDB read-only (%s): %w", lib.path, err)}
	}
	copy(handles, unsafe.Slice(ch, len(names)))
	in := &instance{path: path, lib: lib, db: db, opts: opts, ro: C.ks_ro_create(lib.c), cfs: map[string]unsafe.Pointer{}}
	for i, name := range names {
		in.cfs[name] = handles[i]
	}
	return in, nil
}

func (in *instance) close() {
	for _, h := range in.cfs {
		C.ks_cf_destroy(in.lib.c, h)
	}
	C.ks_ro_destroy(in.lib.c, in.ro)
	C.ks_close(in.lib.c, in.db)
	C.ks_options_destroy(in.lib.c, in.opts)
}

func (in *instance) families() []string {
	var out []string
	for n := range in.cfs {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// long reads an 8-byte big-endian value of the offsets column family.
func (in *instance) long(key string) (int64, bool, error) {
	h, ok := in.cfs[cfOffsets]
	if !ok {
		return 0, false, nil
	}
	ck := C.CString(key)
	defer C.free(unsafe.Pointer(ck))
	var n C.size_t
	var e *C.char
	v := C.ks_get(in.lib.c, in.db, in.ro, h, ck, C.size_t(len(key)), &n, &e)
	if err := in.lib.cerr(e); err != nil {
		return 0, false, &StateDirError{Path: in.path, Err: fmt.Errorf("read offsets %q: %w", key, err)}
	}
	if v == nil {
		return 0, false, nil
	}
	defer C.ks_free(in.lib.c, unsafe.Pointer(v))
	if n != 8 {
		return 0, false, &StateDirError{Path: in.path, Err: fmt.Errorf("offsets %q: %d bytes, want 8", key, n)}
	}
	return int64(binary.BigEndian.Uint64(C.GoBytes(unsafe.Pointer(v), 8))), true, nil
}

// each calls fn with every entry of column family cf, in key order. The
// slices are fn's to keep.
func (in *instance) each(cf string, fn func(k, v []byte) error) error {
	h, ok := in.cfs[cf]
	if !ok {
		return nil
	}
	c := in.lib.c
	it := C.ks_iter(c, in.db, in.ro, h)
	defer C.ks_iter_destroy(c, it)
	for C.ks_iter_first(c, it); C.ks_iter_valid(c, it) != 0; C.ks_iter_next(c, it) {
		var kn, vn C.size_t
		kp := C.ks_iter_key(c, it, &kn)
		vp := C.ks_iter_value(c, it, &vn)
		// An empty value (an empty string) is not a tombstone: it stays a
		// non-nil slice.
		key, val := C.GoBytes(unsafe.Pointer(kp), C.int(kn)), C.GoBytes(unsafe.Pointer(vp), C.int(vn))
		if val == nil {
			val = []byte{}
		}
		if err := fn(key, val); err != nil {
			return err
		}
	}
	var e *C.char
	C.ks_iter_error(c, it, &e)
	if err := in.lib.cerr(e); err != nil {
		return &StateDirError{Path: in.path, Err: fmt.Errorf("iterate %s: %w", cf, err)}
	}
	return nil
}
