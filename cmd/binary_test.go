package cmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// buildBinary builds the stoatctl binary, stamped as scripts/build.sh
// stamps it, into a temporary directory, and returns that directory.
func buildBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH to build the binary with")
	}
	dir := t.TempDir()
	build := exec.Command(goTool, "build", "-buildvcs=false", "-o", filepath.Join(dir, "stoatctl"),
		"-ldflags", "-X main.version=v9.9.9-test -X main.commit=feedbee", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return dir
}

// TestBinary runs the built binary as a user would: process exit codes,
// the link-time stamp, and shell completion in the shells installed.
func TestBinary(t *testing.T) {
	dir := buildBinary(t)
	bin := filepath.Join(dir, "stoatctl")

	t.Run("exit codes", func(t *testing.T) {
		tests := []struct {
			args []string
			code int
		}{
			{[]string{"topology", "try", "uppercase"}, ExitOK},
			{[]string{"topology", "try", "nope"}, ExitFailure},
			{[]string{"topology", "try", "uppercase", "--bogus"}, ExitUsage},
			{[]string{"bogus"}, ExitUsage},
		}
		for _, tc := range tests {
			err := exec.Command(bin, tc.args...).Run()
			code := 0
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				code = exit.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.code {
				t.Errorf("stoatctl %s exited %d, want %d", strings.Join(tc.args, " "), code, tc.code)
			}
		}
	})

	t.Run("link-time stamp", func(t *testing.T) {
		out, err := exec.Command(bin, "version", "-o", "json").Output()
		if err != nil {
			t.Fatal(err)
		}
		var v struct{ Version, Commit string }
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatal(err)
		}
		if v.Version != "v9.9.9-test" || v.Commit != "feedbee" {
			t.Fatalf("version %q commit %q, want the -ldflags stamp v9.9.9-test feedbee", v.Version, v.Commit)
		}
	})

	t.Run("broker with kcat", func(t *testing.T) { testBrokerBinaryWithKcat(t, bin) })

	path := dir + string(os.PathListSeparator) + os.Getenv("PATH")
	shell := func(t *testing.T, name, script string) string {
		t.Helper()
		sh, err := exec.LookPath(name)
		if err != nil {
			missingTool(t, name, name)
		}
		c := exec.Command(sh, "-c", script)
		c.Env = append(os.Environ(), "PATH="+path, "HOME="+t.TempDir())
		var stderr bytes.Buffer
		c.Stderr = &stderr
		out, err := c.Output()
		if err != nil {
			t.Fatalf("%s: %v\nstderr:\n%s", name, err, stderr.String())
		}
		return string(out)
	}

	t.Run("bash", func(t *testing.T) {
		const bashCompletion = "/usr/share/bash-completion/bash_completion"
		if _, err := os.Stat(bashCompletion); err != nil {
			missingTool(t, "bash-completion", "bash-completion")
		}
		// Drive the completion function as bash would on <TAB>.
		out := shell(t, "bash", `
source `+bashCompletion+`
source <(stoatctl completion bash)
complete_line() {
	COMP_LINE="$1"; COMP_POINT=${#COMP_LINE}
	read -ra COMP_WORDS <<< "$1"; [[ "$1" == *" " ]] && COMP_WORDS+=("")
	COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
	COMPREPLY=()
	__start_stoatctl 2>/dev/null
	echo "$1|${COMPREPLY[*]}"
}
complete_line "stoatctl topology "
complete_line "stoatctl topology try up"
complete_line "stoatctl version -o "
`)
		want := "stoatctl topology |describe list try validate\n" +
			"stoatctl topology try up|uppercase\n" +
			"stoatctl version -o |text json yaml\n"
		if out != want {
			t.Fatalf("bash completions:\n%s\nwant:\n%s", out, want)
		}
	})

	t.Run("zsh", func(t *testing.T) {
		out := shell(t, "zsh", `
autoload -U compinit && compinit -u
source <(stoatctl completion zsh)
whence -w _stoatctl
`)
		if strings.TrimSpace(out) != "_stoatctl: function" {
			t.Fatalf("zsh did not define the completion function: %q", out)
		}
	})

	t.Run("fish", func(t *testing.T) {
		out := shell(t, "fish", `
stoatctl completion fish | source
complete -C "stoatctl topology try up"
complete -C "stoatctl topology "
`)
		for _, want := range []string{"uppercase\t", "describe\t", "list\t", "try\t"} {
			if !strings.Contains(out, want) {
				t.Errorf("fish completions lack %q:\n%s", want, out)
			}
		}
	})
}

// TestCompletionScripts checks every shell's script is generated, in-process.
func TestCompletionScripts(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish", "powershell"} {
		var stdout, stderr bytes.Buffer
		if code := Run([]string{"completion", sh}, &stdout, &stderr); code != ExitOK {
			t.Fatalf("completion %s: exit %d: %s", sh, code, stderr.String())
		}
		if !strings.Contains(stdout.String(), "stoatctl") {
			t.Errorf("completion %s wrote no script for stoatctl", sh)
		}
	}
}

// TestDynamicCompletion checks what the shells ask the binary for.
func TestDynamicCompletion(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"__complete", "topology", "try", ""}, []string{"uppercase\t"}},
		{[]string{"__complete", "topology", "describe", "up"}, []string{"uppercase\t"}},
		{[]string{"__complete", "version", "-o", ""}, []string{"text", "json", "yaml"}},
		{[]string{"__complete", "topology", "list", "--output", ""}, []string{"text", "json"}},
		// Example names, then files (directive 0, the default).
		{[]string{"__complete", "run", "-t", ""}, []string{"word-count\t", "uppercase\t", "\n:0\n"}},
		{[]string{"__complete", "topic", "read", "--topology", "word"}, []string{"word-count\t", "\n:0\n"}},
		{[]string{"__complete", "topology", "validate", ""}, []string{"word-count\t", "\n:0\n"}},
		// Fixture files (directive 8: filter by extension) besides record.
		{[]string{"__complete", "replay", ""}, []string{"record\t", "yaml\nyml\n:8\n"}},
	}
	for _, tc := range tests {
		var stdout, stderr bytes.Buffer
		if code := Run(tc.args, &stdout, &stderr); code != ExitOK {
			t.Fatalf("%v: exit %d: %s", tc.args, code, stderr.String())
		}
		for _, w := range tc.want {
			if !strings.Contains(stdout.String(), w) {
				t.Errorf("%v: completions lack %q:\n%s", tc.args, w, stdout.String())
			}
		}
	}
}

// missingTool skips a test whose tool is not installed, but fails it
// under CI: scripts/test.sh installs the tool (Debian package pkg), so a
// CI run that skipped it would pass without having run the test (the
// completion tests were all skipped once, and the summary said ok).
func missingTool(t *testing.T, tool, pkg string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is not installed; scripts/test.sh installs it (Debian package %s)", tool, pkg)
	}
	t.Skipf("%s is not installed (scripts/test.sh installs it)", tool)
}
