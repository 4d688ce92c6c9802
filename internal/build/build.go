// Package build tells which build of myco is running: the release version it was given,
// the module version and VCS revision the go command stamped, whether the tree had
// uncommitted changes, and an identity that differs between any two builds, so that two
// builds never share a host daemon. It imports only the standard library.
package build

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"io"
	"os"
	"regexp"
	"runtime/debug"
	"strings"
)

// Info describes a build.
type Info struct {
	Version string // the release version: set with -ldflags "-X main.version=…", else [Release]'s
	// Module is the main module's version as the go command stamped it: a pseudo-version
	// that carries the revision, or "(devel)"; empty when the binary has no build
	// information.
	Module string
	// Revision is the VCS revision the binary was built from, and Modified whether the tree
	// had uncommitted changes; Revision is empty when the build had no VCS information
	// (go build -buildvcs=false, or a tree the go command does not recognise, such as a
	// git worktree).
	Revision string
	Modified bool
	// ID is the build's identity: 12 hex digits of a hash of the Go build ID (which the
	// go command derives from the inputs, flags and linked content), else of the
	// executable's bytes. Two different builds have different IDs, whatever their version.
	ID string
}

// Read returns the Info of the running binary, whose release version is version and
// whose executable is at exe ("/proc/self/exe" on Linux names it even after an upgrade
// replaced the file).
func Read(version, exe string) Info {
	i := Info{Version: version, ID: ID(exe)}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		i.Version = Release(version, "")
		return i
	}
	i.Module = bi.Main.Version
	i.Version = Release(version, i.Module)
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			i.Revision = s.Value
		case "vcs.modified":
			i.Modified = s.Value == "true"
		}
	}
	return i
}

// Release is the release version of a build: version when the build set it (make build
// passes git describe's), else the main module's version when the go command stamped a
// release tag (v0.2.0, from a tree at that tag, or go install myco.dev/cmd/myco@v0.2.0),
// without its v; else "dev".
func Release(version, module string) string {
	switch {
	case version != "":
		return version
	case pseudo.MatchString(module) || !release.MatchString(module):
		return "dev"
	}
	return strings.TrimPrefix(strings.TrimSuffix(module, "+dirty"), "v")
}

var (
	// release is a semantic version, as a git tag names it.
	release = regexp.MustCompile(`^v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+dirty)?$`)
	// pseudo is a pseudo-version's tail: the commit's time and hash, not a tag.
	pseudo = regexp.MustCompile(`\d{14}-[0-9a-f]{12}`)
)

// String names the build for --version and the host hello, for example
// "0.1.0-dev (module v0.0.0-20261204173755-00964be86f35, revision 00964be86f35, build
// 3f2a9c0d1e4b)" or, without VCS information, "0.1.0-dev (module (devel), no VCS
// revision, build 3f2a9c0d1e4b)".
func (i Info) String() string {
	var parts []string
	if i.Module != "" {
		parts = append(parts, "module "+i.Module)
	}
	switch {
	case i.Revision == "":
		parts = append(parts, "no VCS revision")
	case i.Modified:
		parts = append(parts, "revision "+short(i.Revision)+", modified")
	default:
		parts = append(parts, "revision "+short(i.Revision))
	}
	parts = append(parts, "build "+i.ID)
	return i.Version + " (" + strings.Join(parts, ", ") + ")"
}

func short(rev string) string { return rev[:min(len(rev), 12)] }

// prefix is how much of an executable ID reads for the Go build ID: the Go linker puts
// the ELF note that carries it in the first page, and `go tool buildid` reads this much.
const prefix = 32 << 10

// ID returns the identity of the executable at exe: 12 hex digits of the SHA-256 of its
// Go build ID when its first 32 KiB carry one (an ELF binary of the Go linker), else of
// its whole content; "unknown" when it cannot be read.
func ID(exe string) string {
	f, err := os.Open(exe)
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	head := make([]byte, prefix)
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.ErrUnexpectedEOF {
		return "unknown"
	}
	h := sha256.New()
	if id := elfBuildID(head[:n]); id != "" {
		h.Write([]byte("go build id " + id))
	} else {
		h.Write(head[:n])
		if _, err := io.Copy(h, f); err != nil {
			return "unknown"
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// elfBuildID returns the Go build ID of the little-endian ELF note in head (owner "Go",
// type 4), or "" when head holds none: a note is the owner's size (4), the description's
// size, the type, the owner "Go\x00\x00" and the description, the build ID.
func elfBuildID(head []byte) string {
	if !bytes.HasPrefix(head, []byte("\x7fELF")) {
		return ""
	}
	const goNote = "\x04\x00\x00\x00Go\x00\x00" // the type, then the owner
	for off := 0; ; {
		i := bytes.Index(head[off:], []byte(goNote))
		if i < 0 {
			return ""
		}
		i += off
		off = i + 1
		if i < 8 || binary.LittleEndian.Uint32(head[i-8:]) != 4 {
			continue
		}
		size := int(binary.LittleEndian.Uint32(head[i-4:]))
		start := i + len(goNote)
		if size <= 0 || start+size > len(head) {
			continue
		}
		return string(head[start : start+size])
	}
}
