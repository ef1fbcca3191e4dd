package benchcompare

import "testing"

func TestCommandLine(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, ""},
		{[]string{"-rounds", "3", "-brokers", "embedded,real"}, "-rounds 3 -brokers embedded,real"},
		{[]string{"-label", "issue 17, f2911f6"}, `-label "issue 17, f2911f6"`},
		{[]string{"-memory-keys", ""}, `-memory-keys ""`},
		{[]string{"-label", `say "$HOME" \ ` + "`x`"}, `-label "say \"\$HOME\" \\ \` + "`x\\`" + `"`},
		{[]string{"-out=/tmp/a b"}, `"-out=/tmp/a b"`},
	} {
		if got := CommandLine(tc.args); got != tc.want {
			t.Errorf("CommandLine(%q) = %s, want %s", tc.args, got, tc.want)
		}
	}
}
