// Package versionedtest holds the scenarios of Kafka Streams'
// RocksDBVersionedStoreTest, transcribed, so that the versioned store is
// held to them over every backend: package state runs them over the
// in-memory byte store, package state/rocks over RocksDB with its epoch
// layers, and both restore the store from the changelog it wrote and run
// the reads again.
//
// A scenario is a list of steps: a put (value or tombstone) with the
// return code Kafka Streams' test expects, a delete with the record it
// expects back, and reads (latest, or as of a time) with the version they
// expect. Timestamps use the test's constants: history retention 300 000
// ms, segment interval a third of it, base timestamp 10.
package versionedtest
