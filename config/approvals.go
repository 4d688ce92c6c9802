package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"myco.dev/internal/atomicfile"
)

// MCPApproval is the person's approval of what a directory's .mcp.json offers: of that
// directory's file with that content. It is kept in the profile, never in the project, so
// that a repository cannot approve itself; a file whose content changed needs approving
// again.
type MCPApproval struct {
	Dir string `json:"dir"`    // the directory, absolute
	Sum string `json:"sha256"` // the file's SHA-256, hex ([ProjectMCP.Sum])
	// Servers are the names the file offered when it was approved, for the person who
	// reads the record; the digest is what counts.
	Servers []string  `json:"servers"`
	At      time.Time `json:"approved_at"`
}

// approvalsFile is the shape of the approvals file.
type approvalsFile struct {
	Approvals []MCPApproval `json:"approvals"`
}

// maxApprovalsBytes bounds the approvals file that is read.
const maxApprovalsBytes = 4 << 20

// MCPApprovalsFile is where the profile keeps the approvals of projects' MCP servers.
func (p Paths) MCPApprovalsFile() string { return filepath.Join(p.ProfileDir, "mcp-approvals.json") }

// LoadMCPApprovals reads the approvals file at path; a missing file is none. The file must
// be a regular file that no other user could have written, as config.toml.
func LoadMCPApprovals(path string) ([]MCPApproval, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the MCP approvals: %w", err)
	}
	defer f.Close()
	info, err := checkFile("MCP approvals file", path, f, os.Getuid())
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("the MCP approvals file %s is %s, not a regular file", path, fileKind(info))
	}
	src, err := io.ReadAll(io.LimitReader(f, maxApprovalsBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read the MCP approvals: %w", err)
	}
	if len(src) > maxApprovalsBytes {
		return nil, fmt.Errorf("the MCP approvals file %s is larger than %d MiB", path, maxApprovalsBytes>>20)
	}
	var af approvalsFile
	if err := json.Unmarshal(src, &af); err != nil {
		return nil, fmt.Errorf("the MCP approvals file %s does not decode: %w", path, err)
	}
	return af.Approvals, nil
}

// ApprovalFor returns the approval of dir among as, or nil.
func ApprovalFor(as []MCPApproval, dir string) *MCPApproval {
	dir = filepath.Clean(dir)
	for i := range as {
		if filepath.Clean(as[i].Dir) == dir {
			return &as[i]
		}
	}
	return nil
}

// ApproveProjectMCP records a in the approvals file at path, in place of the approval its
// directory had; the file is written atomically, private.
func ApproveProjectMCP(path string, a MCPApproval) error {
	a.Dir = filepath.Clean(a.Dir)
	return editApprovals(path, func(as []MCPApproval) []MCPApproval {
		as = slices.DeleteFunc(as, func(x MCPApproval) bool { return filepath.Clean(x.Dir) == a.Dir })
		return append(as, a)
	})
}

// RevokeProjectMCP removes the approval of dir from the approvals file at path; found
// reports whether it had one.
func RevokeProjectMCP(path, dir string) (found bool, err error) {
	dir = filepath.Clean(dir)
	err = editApprovals(path, func(as []MCPApproval) []MCPApproval {
		n := len(as)
		as = slices.DeleteFunc(as, func(x MCPApproval) bool { return filepath.Clean(x.Dir) == dir })
		found = len(as) != n
		return as
	})
	return found, err
}

func editApprovals(path string, edit func([]MCPApproval) []MCPApproval) error {
	as, err := LoadMCPApprovals(path)
	if err != nil {
		return err
	}
	as = edit(as)
	slices.SortFunc(as, func(a, b MCPApproval) int {
		switch {
		case a.Dir < b.Dir:
			return -1
		case a.Dir > b.Dir:
			return 1
		}
		return 0
	})
	if as == nil {
		as = []MCPApproval{}
	}
	b, err := json.MarshalIndent(approvalsFile{Approvals: as}, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("write the MCP approvals: %w", err)
	}
	return nil
}
