package lane

import (
	"encoding/binary"

	"github.com/stoatflow/stoatctl/engine/config"
)

// HashHeader carries, on a changelog record written while processing a
// record or a timer, the Murmur2 hash (4 bytes, big-endian) of the key
// bytes that picked the lane. Restoration routes the record to lane hash
// mod N for whatever N the restarted engine runs with; a record without it
// (written by a barrier or punctuator) goes to every lane. The live lanes
// write it (engine/lanes), and so does migrate.
const HashHeader = "__stoatflow.lane.hash"

// ReferenceCount is the lane count used when nothing configures one. It is
// fixed, never the machine's core count, so that a lane judgement made in a
// unit test is the same on a laptop and in CI.
const ReferenceCount = 16

// Murmur2 is Kafka's Utils.murmur2: the 32-bit MurmurHash2 with Kafka's
// seed, reading the input in little-endian 4-byte blocks. The result is
// the signed value Java returns, so test vectors compare unchanged.
//
// franz-go has the same function (the hasher of kgo.StickyKeyPartitioner)
// but does not export it, and its partitioner gives only hash mod n: the
// lane hash header needs the hash itself, computed once per record on the
// dispatch path without building a kgo.Record. TestForIsFranzGosPartitioner
// holds For to franz-go's partitioner, TestMurmur2KafkaVectors Murmur2 to
// Java's.
func Murmur2(data []byte) int32 {
	const (
		seed uint32 = 0x9747b28c
		m    uint32 = 0x5bd1e995
		r           = 24
	)
	n := len(data)
	h := seed ^ uint32(n)
	for len(data) >= 4 {
		k := binary.LittleEndian.Uint32(data)
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
		data = data[4:]
	}
	// The tail falls through from three bytes to one, as in Kafka's switch.
	switch len(data) {
	case 3:
		h ^= uint32(data[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(data[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(data[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return int32(h)
}

// toPositive is Kafka's Utils.toPositive: the sign bit masked off, not
// the absolute value, so that math.MinInt32 maps to 0 rather than
// overflowing.
func toPositive(n int32) int32 { return n & 0x7fffffff }

// For returns the lane, in [0, lanes), of a record or timer laned by
// keyBytes: toPositive(murmur2(keyBytes)) % lanes, Kafka's default
// partitioner. With one lane or fewer every key is on lane 0.
func For(keyBytes []byte, lanes int) int {
	if lanes <= 1 {
		return 0
	}
	return int(toPositive(Murmur2(keyBytes)) % int32(lanes))
}

// For32 is For over a murmur2 hash already computed: the lane of key bytes
// whose Murmur2 is h.
func For32(h int32, lanes int) int {
	if lanes <= 1 {
		return 0
	}
	return int(toPositive(h) % int32(lanes))
}

// Configured is the lane count a configuration asks for:
// num.stream.threads when set, else ReferenceCount. The test driver's
// numberOfLanes override comes before it and is the driver's business.
func Configured(cfg config.Config) (int, error) {
	n, err := cfg.BoundedInt(config.NumStreamThreads, ReferenceCount)
	if err != nil {
		return 0, err
	}
	return int(n), nil
}
