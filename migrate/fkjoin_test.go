package migrate

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"strings"
	"testing"
)

// TestKSMurmur3 checks ksMurmur3 against Kafka Streams' own
// Murmur3.hash128 (org.apache.kafka.streams.state.internals, the hash
// SubscriptionSendProcessorSupplier puts in a SubscriptionWrapper): the
// vectors were printed by Kafka Streams 4.4's jar through jshell, and
// cover the empty input, every tail length class (1 to 15 bytes, a full
// block, a block and one) and bytes above 0x7f (Java's signed bytes).
func TestKSMurmur3(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "9d2764a018e329428c3cf3b035938518"},
		{"a", "3361634e7e0f5188e9c7dda24eae326b"},
		{"c1", "cba4559fa47bb26026d4404b37fda042"},
		{"hello world", "bd699b58e46894087d50ce87a7f20429"},
		{"0123456789abcdef", "1a6e941ec6a76967d7d82808f505d6b1"},
		{"0123456789abcdefX", "c31e5ea436db745dd00872afcf95362c"},
		{`{"customer":"c1","item":"tea"}`, "552182e644b382b94ca9ceb4eba5319e"},
		{"\u00ff\u00fe\u0080 neg bytes \u00e9\u00e8\u00e7 tail", "c1c1d0f76f2b6f25d347a45f7e9af58b"},
	} {
		got := ksMurmur3([]byte(tc.in))
		if hex.EncodeToString(got[:]) != tc.want {
			t.Errorf("ksMurmur3(%q) = %x, want %s", tc.in, got, tc.want)
		}
	}
}

// ksCombinedKey is a key of Kafka Streams' subscription store
// (CombinedKeySchema.toBytes): the foreign key's length (4 bytes,
// big-endian), the foreign key, the left key.
func ksCombinedKey(fk, pk string) []byte {
	return append(append(binary.BigEndian.AppendUint32(nil, uint32(len(fk))), fk...), pk...)
}

// ksSubscriptionWrapper is a value of Kafka Streams' subscription store
// (SubscriptionWrapperSerde.serializeV1): the version, 0x80 set for a null
// hash; the instruction; the 16-byte hash; the left key; the left key's
// partition (4 bytes). Version 0 ends before the partition.
func ksSubscriptionWrapper(version, instruction byte, hash []byte, pk string, partition int32) []byte {
	first := version
	if hash == nil {
		first |= 0x80
	}
	out := append(append([]byte{first, instruction}, hash...), pk...)
	if version == 1 {
		out = binary.BigEndian.AppendUint32(out, uint32(partition))
	}
	return out
}

func TestDecodeSubscription(t *testing.T) {
	h := ksMurmur3([]byte("c1"))
	for _, tc := range []struct {
		name       string
		key, value []byte
		want       Subscription
		err        string
	}{
		{name: "v1", key: ksCombinedKey("c1", "o1"), value: ksSubscriptionWrapper(1, 3, h[:], "o1", 7),
			want: Subscription{ForeignKey: []byte("c1"), LeftKey: []byte("o1"), Hash: h[:], Instruction: 3, Version: 1}},
		{name: "v0", key: ksCombinedKey("c1", "o1"), value: ksSubscriptionWrapper(0, 2, h[:], "o1", 0),
			want: Subscription{ForeignKey: []byte("c1"), LeftKey: []byte("o1"), Hash: h[:], Instruction: 2}},
		{name: "null hash", key: ksCombinedKey("c1", "o1"), value: ksSubscriptionWrapper(1, 1, nil, "o1", 0),
			want: Subscription{ForeignKey: []byte("c1"), LeftKey: []byte("o1"), Instruction: 1, Version: 1}},
		{name: "tombstone", key: ksCombinedKey("", "o1"),
			want: Subscription{ForeignKey: []byte{}, LeftKey: []byte("o1")}},
		{name: "short key", key: []byte{0, 0, 1}, err: "a CombinedKey starts with the foreign key's length"},
		{name: "foreign key past the end", key: ksCombinedKey("c1", "")[:5], err: "foreign key of 2 bytes in a key of 5"},
		{name: "version 2", key: ksCombinedKey("c1", "o1"), value: ksSubscriptionWrapper(2, 3, h[:], "o1", 0), err: "SubscriptionWrapper version 2"},
		{name: "instruction 4", key: ksCombinedKey("c1", "o1"), value: ksSubscriptionWrapper(1, 4, h[:], "o1", 0), err: "instruction 4"},
		{name: "short hash", key: ksCombinedKey("c1", "o1"), value: []byte{1, 3, 9, 9}, err: "its hash is 16"},
		{name: "another left key", key: ksCombinedKey("c1", "o1"), value: ksSubscriptionWrapper(1, 3, h[:], "o2", 0), err: "left key 6f32 is not its CombinedKey's 6f31"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeSubscription(tc.key, tc.value)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.ForeignKey, tc.want.ForeignKey) || !bytes.Equal(got.LeftKey, tc.want.LeftKey) || !bytes.Equal(got.Hash, tc.want.Hash) ||
				got.Instruction != tc.want.Instruction || got.Version != tc.want.Version {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func FuzzDecodeSubscription(f *testing.F) {
	h := ksMurmur3([]byte("c1"))
	f.Add(ksCombinedKey("c1", "o1"), ksSubscriptionWrapper(1, 3, h[:], "o1", 7))
	f.Add(ksCombinedKey("c1", "o1"), ksSubscriptionWrapper(0, 2, nil, "o1", 0))
	f.Add([]byte{0, 0, 0, 9}, []byte{0x81})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		s, err := DecodeSubscription(key, value)
		if err != nil {
			return
		}
		if !bytes.Equal(ksCombinedKey(string(s.ForeignKey), string(s.LeftKey)), key) {
			t.Fatalf("key %x decoded as foreign key %x and left key %x", key, s.ForeignKey, s.LeftKey)
		}
		if value != nil && s.Hash != nil && len(s.Hash) != 16 {
			t.Fatalf("hash of %d bytes", len(s.Hash))
		}
	})
}
