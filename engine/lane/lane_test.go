package lane_test

import (
	"flag"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/lane"
)

// The vectors are Kafka's own: org.apache.kafka.common.utils.UtilsTest's
// testMurmur2, plus a binary key generated with the JVM client (quoted by
// several Go clients), so a lane here is the partition a Java producer
// picks for the same count.
func TestMurmur2KafkaVectors(t *testing.T) {
	tests := []struct {
		in   []byte
		want int32
	}{
		{[]byte("21"), -973932308},
		{[]byte("foobar"), -790332482},
		{[]byte("a-little-bit-long-string"), -985981536},
		{[]byte("a-little-bit-longer-string"), -1486304829},
		{[]byte("lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8"), -58897971},
		{[]byte("abc"), 479470107},
		{[]byte{12, 42, 56, 24, 109, 111}, 274204207},
	}
	for _, tc := range tests {
		if got := lane.Murmur2(tc.in); got != tc.want {
			t.Errorf("murmur2(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestFor(t *testing.T) {
	tests := []struct {
		key   string
		lanes int
		want  int
	}{
		// toPositive(-973932308) = 1173551340; % 8 = 4, % 16 = 12.
		{"21", 8, 4},
		{"21", 16, 12},
		// toPositive(-790332482) = 1357151166; % 8 = 6, % 3 = 0.
		{"foobar", 8, 6},
		{"foobar", 3, 0},
		// 479470107 % 8 = 3.
		{"abc", 8, 3},
		{"abc", 1, 0},
		{"abc", 0, 0},
	}
	for _, tc := range tests {
		if got := lane.For([]byte(tc.key), tc.lanes); got != tc.want {
			t.Errorf("For(%q, %d) = %d, want %d", tc.key, tc.lanes, got, tc.want)
		}
	}
}

func TestConfigured(t *testing.T) {
	if n, err := lane.Configured(config.New(nil)); err != nil || n != lane.ReferenceCount {
		t.Fatalf("unset: %d %v, want %d", n, err, lane.ReferenceCount)
	}
	if n, err := lane.Configured(config.New(map[string]string{config.NumStreamThreads: "8"})); err != nil || n != 8 {
		t.Fatalf("num.stream.threads=8: %d %v", n, err)
	}
	if _, err := lane.Configured(config.New(map[string]string{config.NumStreamThreads: "0"})); err == nil {
		t.Fatal("0 lanes accepted")
	}
}

func FuzzFor(f *testing.F) {
	f.Add([]byte("k0"), 8)
	f.Fuzz(func(t *testing.T, key []byte, lanes int) {
		got := lane.For(key, lanes)
		if got < 0 || (lanes > 1 && got >= lanes) || (lanes <= 1 && got != 0) {
			t.Fatalf("For(%q, %d) = %d out of range", key, lanes, got)
		}
	})
}

func TestFor32IsForOverTheHash(t *testing.T) {
	for _, k := range []string{"", "a", "key-1", "the quick brown fox", "\xff\xfe"} {
		for _, n := range []int{1, 3, 16, 1000} {
			if got, want := lane.For32(lane.Murmur2([]byte(k)), n), lane.For([]byte(k), n); got != want {
				t.Errorf("For32(Murmur2(%q), %d) = %d, For = %d", k, n, got, want)
			}
		}
	}
}

var partitionerSeed = flag.Int64("partitioner.seed", 0, "replay TestForIsFranzGosPartitioner with this seed")

// TestForIsFranzGosPartitioner: the lane of key bytes is the partition
// franz-go's Kafka-compatible partitioner (StickyKeyPartitioner with its
// default hasher, Kafka's murmur2) picks for a keyed record, for random
// keys of every length up to 64 bytes and counts up to 1000. franz-go does
// not export its murmur2, so Murmur2 stays ours; this ties it to the
// library's as TestMurmur2KafkaVectors ties it to Java's.
func TestForIsFranzGosPartitioner(t *testing.T) {
	seed := *partitionerSeed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d (-partitioner.seed replays it)", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	p := kgo.StickyKeyPartitioner(nil).ForTopic("t")
	for i := range 20000 {
		key := make([]byte, i%65)
		for j := range key {
			key[j] = byte(rng.UintN(256))
		}
		n := 1 + rng.IntN(1000)
		if got, want := lane.For(key, n), p.Partition(&kgo.Record{Key: key}, n); got != want {
			t.Fatalf("For(%x, %d) = %d, franz-go's partitioner %d (seed %d)", key, n, got, want, seed)
		}
	}
}
