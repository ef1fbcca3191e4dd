package cmd

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tmuxSession is a detached tmux session on a server of its own (-L), so
// that the test neither sees nor touches anyone's sessions.
type tmuxSession struct {
	t      *testing.T
	socket string
	name   string
}

func newTmux(t *testing.T, w, h int, env []string, argv ...string) *tmuxSession {
	t.Helper()
	s := &tmuxSession{t: t, socket: fmt.Sprintf("stoatctl-test-%d", os.Getpid()), name: strings.ReplaceAll(t.Name(), "/", "-")}
	cmd := append([]string{"new-session", "-d", "-s", s.name, "-x", fmt.Sprint(w), "-y", fmt.Sprint(h), "env"}, env...)
	s.run(append(cmd, argv...)...)
	t.Cleanup(func() {
		_ = exec.Command("tmux", "-L", s.socket, "kill-session", "-t", s.name).Run()
		_ = exec.Command("tmux", "-L", s.socket, "kill-server").Run()
	})
	return s
}

func (s *tmuxSession) run(args ...string) string {
	s.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", s.socket, "-f", "/dev/null"}, args...)...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// capture is the screen as text; with escapes, its styles too.
func (s *tmuxSession) capture(escapes bool) string {
	s.t.Helper()
	args := []string{"capture-pane", "-p", "-t", s.name}
	if escapes {
		args = append(args, "-e")
	}
	return s.run(args...)
}

// waitFor polls the screen until it shows every want, or fails after 20 s
// with the last screen.
func (s *tmuxSession) waitFor(want ...string) string {
	s.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		screen := s.capture(false)
		missing := ""
		for _, w := range want {
			if !strings.Contains(screen, w) {
				missing = w
				break
			}
		}
		if missing == "" {
			return screen
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("the screen never showed %q; it shows:\n%s", missing, screen)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (s *tmuxSession) alive() bool {
	return exec.Command("tmux", "-L", s.socket, "has-session", "-t", s.name).Run() == nil
}

// TestWatchTUIInTmux runs the built binary's full-screen view in tmux
// against recorded documents served over HTTP (the live engine of issue
// 12 takes their place with its merge): the stall shows with its branch,
// ? shows the help, r raw times, / filters, a resize reflows the frame,
// the view is on the alternate screen, NO_COLOR drops the colours, and q
// quits with exit 0.
func TestWatchTUIInTmux(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("tmux is not installed; scripts/test.sh installs it (Debian package tmux)")
		}
		t.Skip("tmux is not installed (scripts/test.sh installs it; CI fails without it)")
	}
	bin := filepath.Join(buildBinary(t), "stoatctl")
	srv := newRecordedEngine(t, "clicks:1")

	for _, tc := range []struct {
		name    string
		noColor bool
	}{{"colour", false}, {"NO_COLOR", true}} {
		t.Run(tc.name, func(t *testing.T) {
			status := filepath.Join(t.TempDir(), "status")
			env := []string{"TERM=xterm-256color", "COLORTERM="}
			if tc.noColor {
				env = append(env, "NO_COLOR=1")
			}
			script := fmt.Sprintf("%q watch watermarks --url %q --interval 250ms --stall-after 2s; echo $? > %q", bin, srv.URL, status)
			s := newTmux(t, 80, 24, env, "sh", "-c", script)

			screen := s.waitFor("STALLED", "pinned by ▶ clicks:1", "live but old timestamps", "clicks-per-minute")
			t.Logf("the screen at 80x24:\n%s", screen)
			if got := strings.TrimSpace(s.run("display-message", "-p", "-t", s.name, "#{alternate_on}")); got != "1" {
				t.Errorf("the view is not on the alternate screen (alternate_on %q)", got)
			}
			styled := s.capture(true)
			coloured := strings.Contains(styled, "\x1b[31") || strings.Contains(styled, ";31m") || strings.Contains(styled, "38;5;1m")
			if tc.noColor && coloured {
				t.Errorf("NO_COLOR is set but the screen has colour:\n%q", styled)
			}
			if !tc.noColor && !coloured {
				t.Errorf("the stall is not in red:\n%q", styled)
			}

			s.run("send-keys", "-t", s.name, "?")
			s.waitFor("the six runbook branches of a stall")
			s.run("send-keys", "-t", s.name, "?")
			s.waitFor("LAG TREND")

			s.run("send-keys", "-t", s.name, "r")
			s.waitFor("global 17900715") // epoch ms
			s.run("send-keys", "-t", s.name, "r", "/", "z", "z", "Enter")
			s.waitFor(`no topic matches "zz"`, `topic ~ "zz"`)
			s.run("send-keys", "-t", s.name, "Escape")
			s.waitFor("LAG TREND")

			// A resize reflows the frame: narrower columns go, the footer
			// stays on the last line.
			s.run("resize-window", "-t", s.name, "-x", "60", "-y", "20")
			deadline := time.Now().Add(10 * time.Second)
			for {
				lines := strings.Split(strings.TrimRight(s.capture(false), "\n"), "\n")
				reflowed := len(lines) == 20 && strings.HasPrefix(lines[19], "sort lag")
				for _, l := range lines {
					if strings.Contains(l, "PARTITION") && strings.Contains(l, "TIMEOUT") {
						reflowed = false // the 80-column header
					}
				}
				if reflowed {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("after a resize to 60x20 the screen is:\n%s", strings.Join(lines, "\n"))
				}
				time.Sleep(100 * time.Millisecond)
			}

			s.run("send-keys", "-t", s.name, "q")
			deadline = time.Now().Add(10 * time.Second)
			for s.alive() {
				if time.Now().After(deadline) {
					t.Fatalf("q did not quit; the screen:\n%s", s.capture(false))
				}
				time.Sleep(50 * time.Millisecond)
			}
			if b, err := os.ReadFile(status); err != nil || strings.TrimSpace(string(b)) != "0" {
				t.Errorf("after q the command exited %q (%v), want 0", b, err)
			}
		})
	}
}
