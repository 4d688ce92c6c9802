package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"testing"
	"time"

	"myco.dev/internal/otheruser"
)

// TestServerPortTaken: a port another program holds is refused with a sentence that names
// the port and says what to do, then the technical error, and exit status 1, whether the
// port came from --addr or MYCO_ADDR.
func TestServerPortTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	home := profileHome(t, "anthropic-messages", "http://127.0.0.1:9", "")
	for _, tt := range []struct {
		name string
		args []string
		env  string
	}{
		{"--addr", []string{"--addr", addr}, "MYCO_ADDR="},
		{"MYCO_ADDR", nil, "MYCO_ADDR=" + addr},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(binary(t), tt.args...)
			cmd.Env = append(os.Environ(), "MYCO_HOME="+home, "MYCO_PROFILE=", "MYCO_CONFIG=", tt.env)
			var stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = io.Discard, &stderr
			err := runBounded(t, cmd)
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 {
				t.Fatalf("myco on a taken port = %v, want exit status 1; stderr:\n%s", err, &stderr)
			}
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			sentence, technical := lines[0], lines[len(lines)-1]
			for _, want := range []string{"port " + port + " is already in use on 127.0.0.1", "--addr 127.0.0.1:0", "--addr 127.0.0.1:PORT", "MYCO_ADDR=127.0.0.1:PORT"} {
				if !strings.Contains(sentence, want) {
					t.Errorf("the first line does not say %q:\n%s", want, &stderr)
				}
			}
			if len(lines) < 2 || !strings.Contains(technical, "address already in use") {
				t.Errorf("the technical error does not follow the sentence:\n%s", &stderr)
			}
		})
	}
}

// TestServerPortTakenByAnotherUser: a port another user of the machine holds (a
// listener opened as uid otheruser.UID) is refused naming that user, since the owner's
// browser and port-forward would reach their server, and saying how to take a port of
// one's own; exit status 1, the system's error after it.
func TestServerPortTakenByAnotherUser(t *testing.T) {
	var ln net.Listener
	var err error
	otheruser.Do(t, otheruser.UID, func() { ln, err = net.Listen("tcp", "127.0.0.1:0") })
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	holder := fmt.Sprintf("uid %d", otheruser.UID)
	if u, err := user.LookupId(strconv.Itoa(otheruser.UID)); err == nil {
		holder = "user " + u.Username + " (uid " + strconv.Itoa(otheruser.UID) + ")"
	}
	home := profileHome(t, "anthropic-messages", "http://127.0.0.1:9", "")
	cmd := exec.Command(binary(t), "--addr", addr)
	cmd.Env = append(os.Environ(), "MYCO_HOME="+home, "MYCO_PROFILE=", "MYCO_CONFIG=", "MYCO_ADDR=")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	err = runBounded(t, cmd)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("myco on another user's port = %v, want exit status 1; stderr:\n%s", err, &stderr)
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	for _, want := range []string{"port " + port + " on 127.0.0.1 is held by " + holder + ", another user", "would reach their server",
		"ssh -L " + port + ":127.0.0.1:" + port, "--addr 127.0.0.1:PORT", "MYCO_ADDR=127.0.0.1:PORT", "--addr 127.0.0.1:0"} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("the first line does not say %q:\n%s", want, &stderr)
		}
	}
	if len(lines) < 2 || !strings.Contains(lines[len(lines)-1], "address already in use") {
		t.Errorf("the technical error does not follow the sentence:\n%s", &stderr)
	}
}

// TestServerForwardHint: the port-forward the server suggests names the port it bound,
// the one the system picked for port 0, whether --addr or MYCO_ADDR asked for it.
func TestServerForwardHint(t *testing.T) {
	home := profileHome(t, "anthropic-messages", "http://127.0.0.1:9", "")
	for _, tt := range []struct {
		name string
		args []string
		env  string
	}{
		{"--addr", []string{"--addr", "127.0.0.1:0"}, "MYCO_ADDR="},
		{"MYCO_ADDR", nil, "MYCO_ADDR=127.0.0.1:0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(binary(t), tt.args...)
			cmd.Env = append(os.Environ(), "MYCO_HOME="+home, "MYCO_PROFILE=", "MYCO_CONFIG=", tt.env)
			out, stderr := startPiped(t, cmd)
			line, err := bufio.NewReader(out).ReadString('\n')
			if err != nil {
				t.Fatalf("no URL on stdout: %v; stderr:\n%s", err, stderr)
			}
			u, err := url.Parse(strings.TrimSpace(line))
			if err != nil || u.Port() == "" || u.Port() == "0" {
				t.Fatalf("first line %q: want the URL with the port bound", line)
			}
			want := "ssh -L " + u.Port() + ":127.0.0.1:" + u.Port() + " THIS-HOST"
			deadline := time.Now().Add(10 * time.Second)
			for !strings.Contains(stderr.String(), want) {
				if time.Now().After(deadline) {
					t.Fatalf("stderr does not suggest %q:\n%s", want, stderr)
				}
				time.Sleep(20 * time.Millisecond)
			}
			if u.Port() != "8080" && strings.Contains(stderr.String(), "ssh -L 8080:") {
				t.Errorf("stderr suggests forwarding port 8080, which the server did not bind:\n%s", stderr)
			}
		})
	}
}

// runBounded runs cmd and kills it if it has not ended within a minute.
func runBounded(t *testing.T, cmd *exec.Cmd) error {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(time.Minute, func() { cmd.Process.Kill() })
	defer timer.Stop()
	return cmd.Wait()
}
