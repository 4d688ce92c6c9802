package sandbox_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"myco.dev/hosts/sandbox"
	"myco.dev/internal/needs"
)

func TestMain(m *testing.M) {
	sandbox.Main()
	os.Exit(m.Run())
}

// fence returns a fence through the test binary, skipping the test where the kernel has
// no Landlock.
func fence(t *testing.T) *sandbox.Fence {
	t.Helper()
	f, err := sandbox.New(sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := f.Support()
	t.Logf("support: %s", s)
	if !s.Landlock || !s.Net {
		needs.Missing(t, "the kernel cannot fence: %s", s)
	}
	return f
}

// run runs script with bash in the sandbox and returns its output and exit status.
func run(t *testing.T, f *sandbox.Fence, spec sandbox.Spec, dir, script string) (string, int) {
	t.Helper()
	cmd := exec.Command("/bin/bash", "-c", script)
	cmd.Dir = dir
	if err := f.Wrap(cmd, spec); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

// TestFence: in the session's directory and its temporary directory a command writes;
// outside them, in .git/hooks and .git/config, and in myco's home it does not, nor does it
// read myco's home or connect to a port it was not given: fenced by Wrap, and through a
// Runner's helper.
func TestFence(t *testing.T) {
	f := fence(t)
	t.Run("wrap", func(t *testing.T) { testFence(t, f, run) })
	t.Run("runner", func(t *testing.T) { testFence(t, f, runnerRun) })
}

// runFunc runs script with bash in the sandbox and returns its output and exit status.
type runFunc func(t *testing.T, f *sandbox.Fence, spec sandbox.Spec, dir, script string) (string, int)

func testFence(t *testing.T, f *sandbox.Fence, run runFunc) {
	root := t.TempDir()
	dir := filepath.Join(root, "proj")
	tmp := filepath.Join(root, "tmp")
	home := filepath.Join(root, "home", ".myco")
	outside := filepath.Join(root, "outside")
	for _, d := range []string{dir + "/.git/hooks", tmp, home, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(dir+"/.git/config", []byte("[core]\n"), 0o644)
	os.WriteFile(home+"/credentials", []byte("secret-token"), 0o600)
	allowed, _ := net.Listen("tcp4", "127.0.0.1:0")
	defer allowed.Close()
	other, _ := net.Listen("tcp4", "127.0.0.1:0")
	defer other.Close()
	port := func(l net.Listener) string { return strconv.Itoa(l.Addr().(*net.TCPAddr).Port) }
	pa, _ := strconv.Atoi(port(allowed))
	spec := sandbox.Spec{
		Writable:  []string{dir, tmp},
		Protected: []string{dir + "/.git/hooks", dir + "/.git/config"},
		Hidden:    []string{home},
		Ports:     []uint16{uint16(pa)},
	}
	for _, tc := range []struct {
		name, script string
		ok           bool
	}{
		{"write in the directory", "echo x > a.txt && mkdir -p sub/deep && mv a.txt sub/deep/", true},
		{"write in TMPDIR", "echo x > " + tmp + "/t", true},
		{"write outside", "echo x > " + outside + "/o", false},
		{"write a hook", "echo x > .git/hooks/pre-commit", false},
		{"write .git/config", "echo '[core] hooksPath = /tmp' >> .git/config", false},
		{"replace .git/config", "echo x > .git/config.lock && mv .git/config.lock .git/config", false},
		{"read myco's home", "cat " + home + "/credentials", false},
		{"write myco's home", "echo x > " + home + "/config.toml", false},
		{"read elsewhere", "cat /etc/hostname >/dev/null || cat /etc/passwd >/dev/null", true},
		{"connect to the given port", "exec 3<>/dev/tcp/127.0.0.1/" + port(allowed), true},
		{"connect elsewhere", "exec 3<>/dev/tcp/127.0.0.1/" + port(other), false},
		{"undo a mount", "umount .git/hooks", false},
		{"no ruleset descriptor inherited", "! ls -l /proc/$$/fd | grep -q landlock", true},
		{"no socket inherited", "! ls -l /proc/$$/fd | grep -q socket", true},
		{"no new privileges", "grep -q 'NoNewPrivs:[[:space:]]*1' /proc/self/status", true},
		{"read the parent's memory", "cat /proc/$PPID/environ >/dev/null", false},
		// The helper's threads each have a domain, one of them the command's.
		{"read a thread of the parent", "for t in /proc/$PPID/task/*; do head -c1 $t/maps >/dev/null 2>&1 && exit 0; done; exit 1", false},
	} {
		out, code := run(t, f, spec, dir, tc.script)
		if (code == 0) != tc.ok {
			t.Errorf("%s: exit %d, want ok=%v; output:\n%s", tc.name, code, tc.ok, out)
		}
		if strings.Contains(out, "secret-token") {
			t.Errorf("%s: the credentials were read", tc.name)
		}
	}
	if _, err := os.Stat(outside + "/o"); err == nil {
		t.Error("a file was written outside")
	}
	if b, _ := os.ReadFile(dir + "/.git/config"); string(b) != "[core]\n" {
		t.Errorf(".git/config changed: %q", b)
	}
}

// TestFenceNetworkOn: with the network on, any port may be reached.
func TestFenceNetworkOn(t *testing.T) {
	f := fence(t)
	l, _ := net.Listen("tcp4", "127.0.0.1:0")
	defer l.Close()
	dir := t.TempDir()
	out, code := run(t, f, sandbox.Spec{Writable: []string{dir}, Network: true}, dir,
		"exec 3<>/dev/tcp/127.0.0.1/"+strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
	if code != 0 {
		t.Errorf("exit %d: %s", code, out)
	}
}

// TestFenceReadOnly: with only a temporary directory writable, the directory it runs in is
// read-only.
func TestFenceReadOnly(t *testing.T) {
	f := fence(t)
	for _, via := range vias {
		dir, tmp := t.TempDir(), t.TempDir()
		out, code := via.run(t, f, sandbox.Spec{Writable: []string{tmp}}, dir, "ls >/dev/null && touch x")
		if code == 0 {
			t.Errorf("%s: a read-only run wrote: %s", via.name, out)
		}
	}
}

// TestFenceHiddenWithoutNamespaces: where the hidden directory is not inside a writable
// one and no path is protected, Landlock alone hides it, without a mount namespace.
func TestFenceHiddenWithoutNamespaces(t *testing.T) {
	f := fence(t)
	root := t.TempDir()
	home := filepath.Join(root, "a", "home")
	os.MkdirAll(home, 0o700)
	os.WriteFile(home+"/secret", []byte("s3cret"), 0o600)
	dir := t.TempDir()
	out, code := run(t, f, sandbox.Spec{Writable: []string{dir}, Hidden: []string{home}}, dir, "cat "+home+"/secret")
	if code == 0 || strings.Contains(out, "s3cret") {
		t.Errorf("exit %d, output %q", code, out)
	}
}

// TestCheck: a spec the kernel cannot enforce is refused, naming what is missing.
func TestCheck(t *testing.T) {
	err := sandbox.Support{}.Check(sandbox.Spec{})
	if err == nil || !strings.Contains(err.Error(), "Landlock") {
		t.Errorf("no Landlock: %v", err)
	}
	err = sandbox.Support{ABI: 3, Landlock: true}.Check(sandbox.Spec{})
	if err == nil || !strings.Contains(err.Error(), "ABI 4") {
		t.Errorf("ABI 3 with the network off: %v", err)
	}
	p := t.TempDir()
	err = sandbox.Support{ABI: 7, Landlock: true, Net: true}.Check(sandbox.Spec{Protected: []string{p}})
	if err == nil || !strings.Contains(err.Error(), "namespaces") {
		t.Errorf("protected paths without user namespaces: %v", err)
	}
	if err := (sandbox.Support{ABI: 7, Landlock: true, Net: true, UserNS: true}).Check(sandbox.Spec{Protected: []string{p}}); err != nil {
		t.Error(err)
	}
}

// TestFenceHiddenInsideWritable: myco's home inside the session's directory (a session
// run in the home directory) is hidden by a mount, so neither read nor written.
func TestFenceHiddenInsideWritable(t *testing.T) {
	f := fence(t)
	if !f.Support().UserNS {
		needs.Missing(t, "no unprivileged user namespaces")
	}
	for _, via := range vias {
		dir := t.TempDir()
		home := filepath.Join(dir, ".myco")
		os.MkdirAll(home, 0o700)
		os.WriteFile(home+"/secret", []byte("s3cret"), 0o600)
		for _, script := range []string{"cat .myco/secret", "echo x > .myco/config.toml", "touch ok && ! test -e .myco/config.toml && false"} {
			out, code := via.run(t, f, sandbox.Spec{Writable: []string{dir}, Hidden: []string{home}}, dir, script)
			if code == 0 || strings.Contains(out, "s3cret") {
				t.Errorf("%s: %s: exit %d, output %q", via.name, script, code, out)
			}
		}
		if _, err := os.Stat(home + "/config.toml"); err == nil {
			t.Errorf("%s: a file was created in the hidden home", via.name)
		}
		if _, err := os.Stat(dir + "/ok"); err != nil {
			t.Errorf("%s: the directory was not writable", via.name)
		}
	}
}

// BenchmarkFence compares a fenced `true`, by Wrap and through a Runner, with an
// unfenced one.
func BenchmarkFence(b *testing.B) {
	f, _ := sandbox.New(sandbox.Options{})
	if !f.Support().Landlock {
		needs.Missing(b, "no Landlock")
	}
	dir := b.TempDir()
	os.MkdirAll(dir+"/.git/hooks", 0o755)
	hidden := b.TempDir() // in $TMPDIR, as a test's MYCO_HOME is
	for _, bc := range []struct {
		name string
		spec *sandbox.Spec
	}{
		{"plain", nil},
		{"landlock", &sandbox.Spec{Writable: []string{dir}}},
		{"landlock+mounts", &sandbox.Spec{Writable: []string{dir}, Protected: []string{dir + "/.git/hooks"}}},
		{"landlock+hidden-in-tmp", &sandbox.Spec{Writable: []string{dir}, Hidden: []string{hidden}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				cmd := exec.Command("/bin/bash", "-c", "true")
				if bc.spec != nil {
					if err := f.Wrap(cmd, *bc.spec); err != nil {
						b.Fatal(err)
					}
				}
				if err := cmd.Run(); err != nil {
					b.Fatal(err)
				}
			}
		})
		if bc.spec == nil {
			continue
		}
		b.Run(bc.name+"/runner", func(b *testing.B) {
			r, err := f.Runner(*bc.spec)
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			for b.Loop() {
				p, err := r.Start(b.Context(), sandbox.Command{Path: "/bin/bash", Args: []string{"bash", "-c", "true"}})
				if err != nil {
					b.Fatal(err)
				}
				if ws, err := p.Wait(); err != nil || ws != 0 {
					b.Fatalf("Wait: %v, %v", ws, err)
				}
			}
		})
	}
}

// TestFenceWritableInsideHidden: a writable directory inside a hidden one (the profile's
// workspace in myco's home) stays reachable and writable, while the rest of the hidden one
// is not, with and without a mount namespace.
func TestFenceWritableInsideHidden(t *testing.T) {
	f := fence(t)
	for i := range 4 {
		inside, via := i%2 == 1, vias[i/2]
		root := t.TempDir()
		dir := filepath.Join(root, "proj")
		home := filepath.Join(root, "myco")
		if inside {
			dir, home = root, filepath.Join(root, ".myco")
		}
		ws := filepath.Join(home, "profiles", "default", "workspace")
		os.MkdirAll(ws, 0o700)
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(home, "approval.key"), []byte("s3cret"), 0o600)
		spec := sandbox.Spec{Writable: []string{dir, ws}, Hidden: []string{home}}
		out, code := via.run(t, f, spec, dir, "echo note > "+ws+"/note.md && cat "+ws+"/note.md")
		if code != 0 || !strings.Contains(out, "note") {
			t.Errorf("%s: inside=%v: the workspace: exit %d, %q", via.name, inside, code, out)
		}
		out, code = via.run(t, f, spec, dir, "cat "+home+"/approval.key")
		if code == 0 || strings.Contains(out, "s3cret") {
			t.Errorf("%s: inside=%v: the key was read: %q", via.name, inside, out)
		}
	}
}
