package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// approvalKeyFile is the approval capability's file in MYCO_HOME (see docs/security.md):
// the person's browser gets it through `myco approve-link`, their API clients send it in
// the Myco-Approval header. No tool process is given it, and the sandbox cannot read
// MYCO_HOME.
func approvalKeyFile(home string) string { return filepath.Join(home, "approval.key") }

// approvalKey returns the approval capability of MYCO_HOME home, making it on first use
// (0600, 32 random bytes in hex).
func approvalKey(home string) (string, error) {
	path := approvalKeyFile(home)
	b, err := os.ReadFile(path)
	if err == nil && len(strings.TrimSpace(string(b))) >= 32 {
		return strings.TrimSpace(string(b)), nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("read the approval key: %w", err)
	}
	raw := make([]byte, 32)
	rand.Read(raw)
	key := hex.EncodeToString(raw)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return approvalKey(home) // another process made it meanwhile
	}
	if err != nil {
		return "", fmt.Errorf("make the approval key: %w", err)
	}
	if _, err := f.WriteString(key + "\n"); err != nil {
		f.Close()
		return "", fmt.Errorf("write the approval key: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("write the approval key: %w", err)
	}
	return key, nil
}

// approveLinkCmd is `myco approve-link`: it prints the link that gives a browser the
// approval capability, for the server running on MYCO_HOME (or, with none running, the
// link's path, to open on the server's address).
func (a *app) approveLinkCmd(args []string) int {
	if len(args) > 0 {
		fmt.Fprintln(a.stderr, "usage: myco approve-link")
		return exitUsage
	}
	paths, err := a.paths(options{})
	if err != nil {
		return a.fail(err)
	}
	key, err := approvalKey(paths.Home)
	if err != nil {
		return a.fail(err)
	}
	base := "http://127.0.0.1:PORT/profiles/" + paths.Profile + "/"
	if b, err := os.ReadFile(filepath.Join(paths.Home, "server.lock")); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 && strings.HasPrefix(f[1], "http://") {
			base = f[1]
		}
	}
	fmt.Fprintln(a.stdout, base+"approve?key="+key)
	fmt.Fprintln(a.stderr, "myco: open this link once in the browser you answer approvals from; it keeps the key in a cookie. Anyone with the link can answer approvals: do not paste it where a command could read it.")
	return exitOK
}
