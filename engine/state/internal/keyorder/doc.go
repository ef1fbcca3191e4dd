// Package keyorder orders store keys for the in-memory structures that
// hold them: the in-memory store's tree and the RocksDB backend's epoch
// layers. The order is unsigned byte order, RocksDB's default
// comparator's, so that a layer merges with the database below it; Less
// computes it a word at a time, since store keys share long prefixes.
package keyorder
