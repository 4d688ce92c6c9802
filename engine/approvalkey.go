package engine

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

// ApprovalKeyFile is the approval capability's file in MYCO_HOME (see docs/security.md):
// the person's browser gets it through `myco approve-link`, their API clients send it in
// the Myco-Approval header. No tool process is given it, and the sandbox cannot read
// MYCO_HOME.
func ApprovalKeyFile(home string) string { return filepath.Join(home, "approval.key") }

// ApprovalKey returns the approval capability of MYCO_HOME home, making it on first use
// (0600, 32 random bytes in hex).
func ApprovalKey(home string) (string, error) {
	path := ApprovalKeyFile(home)
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
		return ApprovalKey(home) // another process made it meanwhile
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
