//go:build cgo

// The version of the RocksDB library linked in, asked of the library
// itself: its C API has no such call.

#include <string>

#include <rocksdb/version.h>

extern "C" const char* stoat_rocksdb_version() {
  static const std::string v = rocksdb::GetRocksVersionAsString(true);
  return v.c_str();
}
