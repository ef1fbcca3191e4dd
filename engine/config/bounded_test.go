package config

import "testing"

// BoundedInt reads a key as Int does and refuses a value below the
// catalogue's least with the message Check gives for the same value.
func TestBoundedInt(t *testing.T) {
	tests := []struct {
		name    string
		values  map[string]string
		key     string
		def     int64
		want    int64
		wantErr string
	}{
		{"unset is the default", nil, "retry.backoff.ms", 100, 100, ""},
		{"blank is the default", map[string]string{"retry.backoff.ms": " "}, "retry.backoff.ms", 100, 100, ""},
		{"the least value passes", map[string]string{"retry.backoff.ms": "10"}, "retry.backoff.ms", 100, 10, ""},
		{"below the least value", map[string]string{"retry.backoff.ms": "9"}, "retry.backoff.ms", 100, 0, "config retry.backoff.ms: 9 is below the least value, 10"},
		{"zero allowed at a least value of 0", map[string]string{StateStoreCacheMaxBytes: "0"}, StateStoreCacheMaxBytes, 1, 0, ""},
		{"negative below 0", map[string]string{StateStoreCacheMaxBytes: "-1"}, StateStoreCacheMaxBytes, 1, 0, "config statestore.cache.max.bytes: -1 is below the least value, 0"},
		{"lanes", map[string]string{NumStreamThreads: "0"}, NumStreamThreads, 2, 0, "config num.stream.threads: 0 is below the least value, 1"},
		{"not a number", map[string]string{NumStreamThreads: "two"}, NumStreamThreads, 2, 0, `config num.stream.threads: "two" is not an integer`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := New(tc.values).BoundedInt(tc.key, tc.def)
			if tc.wantErr == "" {
				if err != nil || got != tc.want {
					t.Fatalf("BoundedInt = %d, %v; want %d", got, err, tc.want)
				}
				return
			}
			if err == nil || err.Error() != tc.wantErr {
				t.Fatalf("BoundedInt = %d, %v; want error %q", got, err, tc.wantErr)
			}
			// One rule, one message: config check says the same.
			var said []string
			for _, p := range Check(tc.values) {
				said = append(said, p.String())
			}
			if len(said) != 1 || said[0] != tc.wantErr {
				t.Fatalf("Check says %q, BoundedInt %q", said, tc.wantErr)
			}
		})
	}
}

// A key without a least value in the catalogue is the reader's mistake,
// caught at once.
func TestBoundedIntNeedsALeastValue(t *testing.T) {
	for _, key := range []string{"no.such.key", ApplicationID} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("BoundedInt(%q) did not panic", key)
				}
			}()
			_, _ = New(nil).BoundedInt(key, 0)
		}()
	}
}
