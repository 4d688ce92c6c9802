package main

// Another user of the machine, tried against the real binary: the ways in that the issue
// on local users found (a socket directory taken over, the token read from ps, idle
// connections that lock the owner out) and the URL of an IPv6 server. The other user is
// uid otheruser.UID: the test (root in CI) makes files its own with chown and opens
// sockets as it with otheruser.Do; the kernel needs no passwd entry.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"myco.dev/internal/fakemodel"
	"myco.dev/internal/needs"
	"myco.dev/internal/otheruser"
	"myco.dev/internal/syncbuf"
)

// sockets returns every Unix socket under dir.
func sockets(dir string) []string {
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type()&fs.ModeSocket != 0 {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// TestOtherUserHostDir: a $TMPDIR/myco-UID that another user made first, that others can
// enter, or that is a symbolic link is refused by the host daemon's proxy with a message
// that names it and the fix, and no socket is made there; the host still serves, in its
// own process.
func TestOtherUserHostDir(t *testing.T) {
	for _, tt := range []struct {
		name  string
		root  bool
		setup func(t *testing.T, dir string)
		want  string
	}{
		{"another user's", true, func(t *testing.T, dir string) {
			if err := os.Mkdir(dir, 0o777); err != nil {
				t.Fatal(err)
			}
			os.Chmod(dir, 0o777)
			if err := os.Chown(dir, otheruser.UID, otheruser.UID); err != nil {
				t.Fatal(err)
			}
		}, fmt.Sprintf("belongs to uid %d", otheruser.UID)},
		{"open to others", false, func(t *testing.T, dir string) {
			if err := os.Mkdir(dir, 0o777); err != nil {
				t.Fatal(err)
			}
			os.Chmod(dir, 0o777)
		}, "chmod 700"},
		{"a symbolic link", false, func(t *testing.T, dir string) {
			target := filepath.Join(filepath.Dir(dir), "theirs")
			if err := os.Mkdir(target, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, dir); err != nil {
				t.Fatal(err)
			}
		}, "is a symbolic link"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.root {
				needs.Root(t, "making another user's directory")
			}
			tmp, err := os.MkdirTemp("", "ou-") // short: a socket path must fit sun_path
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(tmp) })
			os.Chmod(tmp, 0o755)
			dir := filepath.Join(tmp, "myco-"+strconv.Itoa(os.Getuid()))
			tt.setup(t, dir)
			cmd := exec.Command(binary(t), "--mode", "host")
			cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
			cmd.Stdin = strings.NewReader("")
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			cmd.WaitDelay = 10 * time.Second
			if err := cmd.Run(); err != nil {
				t.Fatalf("myco --mode host: %v\n%s", err, stderr.String())
			}
			for _, want := range []string{dir, tt.want} {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
				}
			}
			if !strings.Contains(stdout.String(), `"hello"`) {
				t.Errorf("the host did not serve in its own process: stdout %q", stdout.String())
			}
			if s := sockets(tmp); len(s) != 0 {
				t.Errorf("sockets were made: %v", s)
			}
		})
	}
}

// TestOtherUserCannotTakeOverWorkers: the server makes no socket in $TMPDIR, so another
// user who prepares the directory and sockets where the old server kept its workers' (a
// $TMPDIR/myco-UID of theirs, with server-PID/default.sock and default.handoff listening)
// receives nothing while the owner uses the pages and the API.
func TestOtherUserCannotTakeOverWorkers(t *testing.T) {
	tmp, err := os.MkdirTemp("", "ou-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	t.Setenv("TMPDIR", tmp)
	fake := fakemodel.New(t)
	fake.Loop()
	fake.Script(fakemodel.Turn{Text: "hello"})
	home := profileHome(t, "anthropic-messages", fake.URL, "")
	cmd, u, _ := startServer(t, home)
	if s := sockets(tmp); len(s) != 0 {
		t.Fatalf("the server made sockets in $TMPDIR: %v", s)
	}
	trap := filepath.Join(tmp, "myco-"+strconv.Itoa(os.Getuid()), "server-"+strconv.Itoa(cmd.Process.Pid))
	if err := os.MkdirAll(trap, 0o777); err != nil {
		t.Fatal(err)
	}
	var caught atomic.Int32
	for _, name := range []string{"default.sock", "default.handoff"} {
		l, err := net.Listen("unix", filepath.Join(trap, name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				caught.Add(1)
				c.Close()
			}
		}()
	}
	filepath.WalkDir(filepath.Join(tmp, "myco-"+strconv.Itoa(os.Getuid())), func(p string, _ fs.DirEntry, _ error) error {
		os.Lchown(p, otheruser.UID, otheruser.UID) // theirs, where root can give it away
		return nil
	})
	api := apiClient{t, strings.TrimSuffix(u, "/") + "/api"}
	if _, snap := api.run("take-1", "hi"); snap["answer"] != "hello" {
		t.Errorf("the owner's turn: %v", snap)
	}
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("GET %s = %d", u, resp.StatusCode)
	}
	if n := caught.Load(); n != 0 {
		t.Errorf("the other user's sockets caught %d connections", n)
	}
}

// TestOtherUserRefusedAndClosed: another user's connection gets its 403 and is closed at
// once, whether it sends a request or nothing at all.
func TestOtherUserRefusedAndClosed(t *testing.T) {
	home := profileHome(t, "anthropic-messages", "http://127.0.0.1:9/", "")
	_, u, _ := startServer(t, home)
	addr := strings.TrimPrefix(strings.SplitN(u, "/profiles/", 2)[0], "http://")
	for _, tt := range []struct {
		name, request string
	}{
		{"a request", "GET /profiles/default/ HTTP/1.1\r\nHost: " + addr + "\r\n\r\n"},
		{"a request to keep alive", "GET /profiles/default/api/sessions HTTP/1.1\r\nHost: " + addr + "\r\nConnection: keep-alive\r\n\r\n"},
		{"nothing", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var c net.Conn
			var err error
			otheruser.Do(t, otheruser.UID, func() { c, err = net.Dial("tcp", addr) })
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			start := time.Now()
			if tt.request != "" {
				io.WriteString(c, tt.request)
			}
			got, err := io.ReadAll(c) // returns once the server closes
			if err != nil {
				t.Fatalf("read: %v (after %v), got %q; want the connection closed", err, time.Since(start), got)
			}
			if !strings.HasPrefix(string(got), "HTTP/1.1 403 ") || !strings.Contains(string(got), "uid "+strconv.Itoa(otheruser.UID)) || !strings.Contains(string(got), `"code": "not_owner"`) {
				t.Errorf("answer = %q, want a 403 not_owner naming uid %d", got, otheruser.UID)
			}
		})
	}
}

// floodSize is how many idle connections another user opens in the flood tests: twice
// the descriptor limit (1,024) their target runs with.
const floodSize = 2000

// needFlood ends the test unless it can act as another user and open floodSize
// connections.
func needFlood(t *testing.T) {
	t.Helper()
	needs.Root(t, "acting as another user")
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur < floodSize+200 {
		needs.Missing(t, "this test opens %d connections; the descriptor limit is %d", floodSize, lim.Cur)
	}
}

// flood opens floodSize connections to addr as another user, which send nothing and
// stay open until the test ends, and returns them. A myco that held each until its
// ReadHeaderTimeout would sit at its descriptor limit.
func flood(t *testing.T, addr string) []net.Conn {
	t.Helper()
	var conns []net.Conn
	var dialErr error
	otheruser.Do(t, otheruser.UID, func() {
		for range floodSize {
			c, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				dialErr = err
				return
			}
			conns = append(conns, c)
		}
	})
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	if dialErr != nil && len(conns) < floodSize/2 {
		t.Fatalf("opened %d connections as uid %d: %v", len(conns), otheruser.UID, dialErr)
	}
	return conns
}

// TestOtherUserIdleConnectionsDoNotLockOut: 2,000 idle connections of another user, to a
// server limited to 1,024 descriptors, leave the owner served, and the
// server holds only a few of them.
func TestOtherUserIdleConnectionsDoNotLockOut(t *testing.T) {
	needFlood(t)
	home := profileHome(t, "anthropic-messages", "http://127.0.0.1:9/", "")
	cmd := exec.Command("/bin/sh", "-c", `ulimit -n 1024 && exec "$0" --addr 127.0.0.1:0`, binary(t))
	cmd.Env = append(os.Environ(), "MYCO_HOME="+home, "MYCO_PROFILE=", "MYCO_CONFIG=")
	out, stderr := startPiped(t, cmd)
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("no URL: %v\n%s", err, stderr)
	}
	u := strings.TrimSpace(line)
	addr := strings.TrimPrefix(strings.SplitN(u, "/profiles/", 2)[0], "http://")
	conns := flood(t, addr)
	// Answered at all is what is checked (a flood once took the descriptors, and the
	// request failed); within 5 s leaves room for a loaded machine, where 1 s did not.
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(strings.TrimSuffix(u, "/") + "/api/sessions")
	if err != nil {
		t.Fatalf("the owner's request after %d idle connections of another user: %v\nserver:\n%s", len(conns), err, stderr)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("the owner's request = %d", resp.StatusCode)
	}
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", cmd.Process.Pid))
	if len(fds) > 100 {
		t.Errorf("the server holds %d descriptors with %d idle connections of another user open", len(fds), len(conns))
	}
}

// TestOtherUserFloodDoesNotFailPrompt: the port of myco -p's nested-session API, which
// another user finds in /proc/net/tcp, takes the flood the server takes (2,000 idle
// connections of another user, myco -p limited to 1,024 descriptors) while its turn waits
// on a tool: the owner's API still answers, myco -p holds few descriptors,
// and the run ends with exit status 0 and its answer (its checkpoints once failed with
// "too many open files", and it exited 1).
func TestOtherUserFloodDoesNotFailPrompt(t *testing.T) {
	needFlood(t)
	gate := filepath.Join(t.TempDir(), "gate")
	args, _ := json.Marshal(map[string]string{"command": fmt.Sprintf(`for i in $(seq 600); do [ -e %s ] && break; sleep 0.1; done; echo through the gate`, gate)})
	fake := fakemodel.New(t,
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "wait", Name: "bash", Args: string(args)}}},
		fakemodel.Turn{Text: "Done: {{tool_result}}"})
	home := profileHome(t, "anthropic-messages", fake.URL, "")
	cmd := exec.Command("/bin/sh", "-c", `ulimit -n 1024 && exec "$0" -p "wait for the gate"`, binary(t))
	cmd.Env = append(os.Environ(), "MYCO_HOME="+home, "MYCO_PROFILE=", "MYCO_CONFIG=")
	var stdout, stderr syncbuf.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	// The tool waits at the gate once the model has been asked; the API listens by then.
	var addr string
	for deadline := time.Now().Add(30 * time.Second); addr == "" || len(fake.Requests()) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("myco -p never listened and asked the model (listening on %q)\nstderr:\n%s", addr, &stderr)
		}
		if ports := listening(t, cmd.Process.Pid); len(ports) == 1 {
			addr = ports[0]
		}
	}
	conns := flood(t, addr)
	// Answered at all is what is checked (a flood once took the descriptors, and the
	// request failed); within 5 s leaves room for a loaded machine, where 1 s did not.
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + addr + "/profiles/default/api/sessions")
	if err != nil {
		t.Fatalf("the owner's request after %d idle connections of another user: %v\nstderr:\n%s", len(conns), err, &stderr)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("the owner's request = %d", resp.StatusCode)
	}
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", cmd.Process.Pid))
	if len(fds) > 100 {
		t.Errorf("myco -p holds %d descriptors with %d idle connections of another user open", len(fds), len(conns))
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		exited <- err // for the cleanup
		if err != nil {
			t.Fatalf("myco -p = %v, want exit status 0\nstderr:\n%s", err, &stderr)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("myco -p did not end within a minute of the gate\nstderr:\n%s", &stderr)
	}
	if got := stdout.String(); !strings.Contains(got, "Done: through the gate") {
		t.Errorf("stdout = %q, want the answer with the tool's output", got)
	}
}

// listening returns the loopback addresses (127.0.0.1:PORT) that process pid listens on,
// as another user finds them: the listening sockets of /proc/net/tcp, here told apart by
// the process's descriptors.
func listening(t *testing.T, pid int) []string {
	t.Helper()
	inodes := map[string]bool{}
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	for _, fd := range fds {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if inode, ok := strings.CutPrefix(link, "socket:["); err == nil && ok {
			inodes[strings.TrimSuffix(inode, "]")] = true
		}
	}
	table, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(table), "\n")[1:] {
		f := strings.Fields(line)
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		if len(f) < 10 || f[3] != "0A" || !inodes[f[9]] {
			continue
		}
		ip, port, _ := strings.Cut(f[1], ":")
		n, err := strconv.ParseUint(port, 16, 16)
		if ip != "0100007F" || err != nil {
			continue
		}
		out = append(out, "127.0.0.1:"+strconv.Itoa(int(n)))
	}
	return out
}

// TestTokenNeverOnACommandLine runs the server in token mode (forced with --auth token)
// while its agent follows the nested-agent recipe of docs/browser.md verbatim: no
// process's command line ever shows the token, the recipe works, and the token appears
// in neither the server's log nor the pages. The token is new at every start, and the
// URL's token becomes a cookie of this port.
func TestTokenNeverOnACommandLine(t *testing.T) {
	needs.Proc(t)
	doc, err := os.ReadFile("../../docs/browser.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, _ := strings.Cut(string(doc), "### With curl")
	recipe, _, _ := strings.Cut(after[strings.Index(after, "```sh\n")+6:], "```")
	args, _ := json.Marshal(map[string]string{"command": recipe})
	fake := fakemodel.New(t,
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "recipe", Name: "bash", Args: string(args)}}},
		fakemodel.Turn{Text: "42"},
		fakemodel.Turn{Text: "Done: {{tool_result}}"})
	home := profileHome(t, "anthropic-messages", fake.URL, "")
	first, u, stderr := startServer(t, home, "--auth", "token")
	base, tok, ok := strings.Cut(u, "?token=")
	if !ok || len(tok) < 32 {
		t.Fatalf("token mode printed %q, want a URL with ?token=", u)
	}
	port := base[strings.LastIndex(base, ":")+1 : strings.Index(base, "/profiles/")]
	file, err := os.ReadFile(filepath.Join(home, "server-"+port+".token"))
	if err != nil || strings.TrimSpace(string(file)) != "Authorization: Bearer "+tok {
		t.Fatalf("token file = %q, %v", file, err)
	}

	// Watch every command line while the agent works.
	stop := make(chan struct{})
	var mu sync.Mutex
	var leaks []string
	curls := 0
	var watched sync.WaitGroup
	watched.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			procs, _ := os.ReadDir("/proc")
			for _, p := range procs {
				raw, err := os.ReadFile("/proc/" + p.Name() + "/cmdline")
				if err != nil || len(raw) == 0 {
					continue
				}
				line := strings.ReplaceAll(string(raw), "\x00", " ")
				mu.Lock()
				if strings.Contains(line, tok) {
					leaks = append(leaks, line)
				}
				if strings.HasPrefix(line, "curl ") && strings.Contains(line, "-H @") {
					curls++
				}
				mu.Unlock()
			}
			time.Sleep(2 * time.Millisecond)
		}
	})

	req := func(method, path, body string) (*http.Response, map[string]any) {
		r, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		return resp, out
	}
	if resp, err := http.Get(base + "api/sessions"); err != nil {
		t.Fatal(err)
	} else {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 403 || !strings.Contains(string(body), `"code": "token_required"`) {
			t.Errorf("a request without the token = %d %s, want 403 token_required", resp.StatusCode, body)
		}
	}
	_, created := req("POST", "api/sessions", `{"request_id":"top"}`)
	id, _ := created["session_id"].(string)
	req("POST", "api/sessions/"+id+"/actions", `{"request_id":"go","action":"submit","text":"Delegate."}`)
	var snap map[string]any
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, snap = req("GET", "api/sessions/"+id, ""); snap["busy"] == false && snap["last_turn"] != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the recipe never finished: %v\n%s", snap, stderr)
		}
	}
	close(stop)
	watched.Wait()
	if len(leaks) > 0 {
		t.Errorf("the token was on %d command lines, e.g. %q", len(leaks), leaks[0])
	}
	if curls == 0 {
		t.Error("no curl with -H @FILE was ever seen: the watch saw nothing of the recipe")
	}
	if answer, _ := snap["answer"].(string); !strings.Contains(answer, "42") {
		t.Errorf("the recipe's answer = %q, want the child's 42", answer)
	}
	resp, _ := req("GET", "s/"+id+"/", "")
	page, _ := io.ReadAll(resp.Body)
	if strings.Contains(string(page), tok) || strings.Contains(stderr.String(), tok) {
		t.Error("the token is in the page or the server's log")
	}
	if !strings.Contains(stderr.String(), "not safe on a machine shared") {
		t.Errorf("no warning about token mode on a shared machine:\n%s", stderr)
	}

	// The URL's token becomes a cookie of this port, and a new start has a new token.
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err = noRedirect.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cookie := resp.Header.Get("Set-Cookie")
	if resp.StatusCode != 303 || !strings.Contains(cookie, "myco_token_"+port+"=") || !strings.Contains(cookie, "HttpOnly") || !strings.Contains(cookie, "SameSite=Strict") {
		t.Errorf("the token URL = %d, Set-Cookie %q", resp.StatusCode, cookie)
	}
	// One server per MYCO_HOME: the next start comes after this one stopped.
	first.Process.Signal(syscall.SIGTERM)
	first.Wait()
	_, u2, _ := startServer(t, home, "--auth", "token")
	if _, tok2, _ := strings.Cut(u2, "?token="); tok2 == tok || tok2 == "" {
		t.Errorf("a second server's token %q, want a new one", tok2)
	}
}

// TestServerOnIPv6: --addr [::1]:0 prints a URL of the address bound, which answers, and
// the tools get it as MYCO_SERVER_URL.
func TestServerOnIPv6(t *testing.T) {
	if ln, err := net.Listen("tcp", "[::1]:0"); err != nil {
		needs.Missing(t, "no IPv6 loopback here: %v", err)
	} else {
		ln.Close()
	}
	args, _ := json.Marshal(map[string]string{"command": `curl -sf "$MYCO_SERVER_URL/api/sessions" >/dev/null && echo "reached $MYCO_SERVER_URL"`})
	fake := fakemodel.New(t,
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{Name: "bash", Args: string(args)}}},
		fakemodel.Turn{Text: "{{tool_result}}"})
	home := profileHome(t, "anthropic-messages", fake.URL, "")
	cmd := exec.Command(binary(t), "--addr", "[::1]:0")
	cmd.Env = append(os.Environ(), "MYCO_HOME="+home, "MYCO_PROFILE=", "MYCO_CONFIG=")
	out, stderr := startPiped(t, cmd)
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("no URL: %v\n%s", err, stderr)
	}
	u := strings.TrimSpace(line)
	if !strings.HasPrefix(u, "http://[::1]:") {
		t.Fatalf("printed %q, want http://[::1]:PORT/…", u)
	}
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("GET %s = %d", u, resp.StatusCode)
	}
	api := apiClient{t, strings.TrimSuffix(u, "/") + "/api"}
	_, snap := api.run("v6", "where are you?")
	if answer, _ := snap["answer"].(string); !strings.Contains(answer, "reached "+strings.TrimSuffix(u, "/")) {
		t.Errorf("the tool's MYCO_SERVER_URL: answer %q, want it to reach %s", answer, u)
	}
}

// TestWorkerChecksItsChannel: a profile worker serves only over the channel its parent
// passed it: started without one, or with one made by another process than its parent,
// it refuses to start and says why.
func TestWorkerChecksItsChannel(t *testing.T) {
	needs.Proc(t)
	home := profileHome(t, "anthropic-messages", "http://127.0.0.1:9/", "")
	run := func(args []string, extra []*os.File) string {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Env = append(os.Environ(), "MYCO_HOME="+home, "MYCO_PROFILE=default", "MYCO_SERVER_URL=http://127.0.0.1:1/profiles/default")
		cmd.ExtraFiles = extra
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Errorf("%q started: %s", args, out)
		}
		return string(out)
	}
	if out := run([]string{binary(t), "--mode", "profile-worker"}, nil); !strings.Contains(out, "descriptor 3") {
		t.Errorf("without a channel: %q, want it to name descriptor 3", out)
	}
	// A socket pair made by this process, handed to a worker whose parent is a shell.
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "ours"), os.NewFile(uintptr(fds[1]), "theirs")
	defer ours.Close()
	defer theirs.Close()
	out := run([]string{"/bin/sh", "-c", `"$0" --mode profile-worker; exit 1`, binary(t)}, []*os.File{theirs})
	if !strings.Contains(out, "not from the server that started this worker") {
		t.Errorf("with another process's channel: %q", out)
	}
}
