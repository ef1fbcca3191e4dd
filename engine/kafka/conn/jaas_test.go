package conn

import (
	"errors"
	"maps"
	"strings"
	"testing"
)

func TestParseJAAS(t *testing.T) {
	tests := []struct {
		name, in string
		want     JAAS
		err      string
	}{
		{"scram", `org.apache.kafka.common.security.scram.ScramLoginModule required username="u" password="p";`,
			JAAS{Module: scramModule, Flag: "required", Options: map[string]string{"username": "u", "password": "p"}}, ""},
		{"plain, unquoted words, spread over lines", "org.apache.kafka.common.security.plain.PlainLoginModule REQUIRED\n  username=alice\n  password=\"a b;c=d\" ;",
			JAAS{Module: plainModule, Flag: "required", Options: map[string]string{"username": "alice", "password": "a b;c=d"}}, ""},
		{"oauth with extensions", `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required clientId="id" clientSecret="s" scope="api://x/.default" extension_logicalCluster="lkc-1";`,
			JAAS{Module: oauthModule, Flag: "required", Options: map[string]string{"clientId": "id", "clientSecret": "s", "scope": "api://x/.default", "extension_logicalCluster": "lkc-1"}}, ""},
		{"no options", `software.amazon.msk.auth.iam.IAMLoginModule required;`, JAAS{Module: iamModule, Flag: "required", Options: map[string]string{}}, ""},
		{"escapes and comments", `M /* c */ optional // line
 password="q\"uo\\te\n\101";`, JAAS{Module: "M", Flag: "optional", Options: map[string]string{"password": "q\"uo\\te\nA"}}, ""},
		{"missing semicolon", `M required username="u"`, JAAS{}, "at character 24: want an option name or ';'"},
		{"missing flag", `M username="u";`, JAAS{}, "want a control flag after the login module: required"},
		{"missing value", `M required password=;`, JAAS{}, "want a value for option password"},
		{"missing equals", `M required password "p";`, JAAS{}, "want '=' after option password"},
		{"unclosed quote", `M required password="p;`, JAAS{}, "quoted value not closed"},
		{"two modules", `M required; N required;`, JAAS{}, "want one login module"},
		{"duplicate option", `M required a=1 a=2;`, JAAS{}, "option a is set twice"},
		{"empty", ``, JAAS{}, "want the login module's class name"},
		{"unclosed comment", `M required /* x`, JAAS{}, "comment not closed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseJAAS(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrJAAS) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Module != tc.want.Module || got.Flag != tc.want.Flag || !maps.Equal(got.Options, tc.want.Options) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestParseJAASErrorsHideValues: whatever is wrong, the error does not
// quote the configuration, which holds a password.
func TestParseJAASErrorsHideValues(t *testing.T) {
	for _, in := range []string{
		`M required password="hunter2"`, `M required password="hunter2`, `M required password=hunter2 x`,
		`M required password="hunter2"; N`, `hunter2`, `M hunter2 x=1;`,
	} {
		_, err := ParseJAAS(in)
		if err == nil {
			t.Fatalf("%q parsed", in)
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%q: error shows the password: %v", in, err)
		}
	}
}

// FuzzParseJAAS: any string parses or fails without a panic; what parses
// is read back the same when written with every value quoted; an error
// never quotes a value the input holds.
func FuzzParseJAAS(f *testing.F) {
	for _, s := range []string{
		`org.apache.kafka.common.security.scram.ScramLoginModule required username="u" password="p";`,
		"M optional a=b /* c */ // d\n c=\"\\101\";", `M required;`, `M required a="`, `"x"`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		j, err := ParseJAAS(s)
		if err != nil {
			return
		}
		var b strings.Builder
		b.WriteString(j.Module + " " + j.Flag)
		for k, v := range j.Options {
			b.WriteString(" " + k + "=" + quoteJAAS(v))
		}
		b.WriteString(";")
		again, err := ParseJAAS(b.String())
		if err != nil {
			t.Fatalf("written back %q: %v", b.String(), err)
		}
		if again.Module != j.Module || again.Flag != j.Flag || !maps.Equal(again.Options, j.Options) {
			t.Fatalf("written back: %+v, want %+v", again, j)
		}
	})
}
