package mcp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFilesystem runs @modelcontextprotocol/server-filesystem with one allowed directory:
// a read inside it returns the file, a read outside it is the server's refusal, an
// error the model sees.
func TestFilesystem(t *testing.T) {
	bin := npmServer(t, "mcp-server-filesystem")
	root, outside := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte("inside the root\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("outside the root\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := newSet(t, Options{Servers: []Server{{Name: "fs", Command: bin, Args: []string{root}}}})
	s.Discover(t.Context())

	wantText(t, "read inside the root", call(t, s, "o", "mcp__fs__read_text_file", `{"path":"`+filepath.Join(root, "notes.txt")+`"}`), "inside the root")
	res := call(t, s, "o", "mcp__fs__read_text_file", `{"path":"`+secret+`"}`)
	wantError(t, "read outside the root", res, "Access denied")
	if strings.Contains(res.Text, "outside the root\n") {
		t.Errorf("the refused read returned the file: %q", res.Text)
	}
	// The client offers no roots, so the server keeps the directory it was given.
	wantText(t, "list_allowed_directories", call(t, s, "o", "mcp__fs__list_allowed_directories", `{}`), root)
}
