package hosts

import (
	"debug/elf"
	"debug/macho"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Binary is a myco executable that this machine could install on a remote: its platform,
// read from its header, and whether it starts without this machine's C library.
type Binary struct {
	Path         string
	GOOS, GOARCH string
	// Static is an ELF executable without a dynamic loader (a CGO_ENABLED=0 build): it
	// starts on any Linux of its architecture, whatever C library the remote has, or none.
	// A build linked against glibc needs a glibc at least as new as the one it was built
	// with, which an older or a musl remote does not have.
	Static bool
}

// ReadBinary reads the platform of the executable at path from its ELF or Mach-O header.
func ReadBinary(path string) (Binary, error) {
	b := Binary{Path: path}
	if f, err := elf.Open(path); err == nil {
		defer f.Close()
		arches := map[elf.Machine]string{elf.EM_X86_64: "amd64", elf.EM_AARCH64: "arm64", elf.EM_386: "386", elf.EM_ARM: "arm",
			elf.EM_RISCV: "riscv64", elf.EM_PPC64: "ppc64le", elf.EM_S390: "s390x"}
		oses := map[elf.OSABI]string{elf.ELFOSABI_NONE: "linux", elf.ELFOSABI_LINUX: "linux", elf.ELFOSABI_FREEBSD: "freebsd",
			elf.ELFOSABI_OPENBSD: "openbsd", elf.ELFOSABI_NETBSD: "netbsd"}
		b.GOOS, b.GOARCH = oses[f.OSABI], arches[f.Machine]
		b.Static = true
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				b.Static = false
			}
		}
		if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN || b.GOOS == "" || b.GOARCH == "" {
			return b, fmt.Errorf("%s: an ELF file of no platform myco builds for (%s, %s)", path, f.OSABI, f.Machine)
		}
		return b, nil
	}
	if f, err := macho.Open(path); err == nil {
		defer f.Close()
		arches := map[macho.Cpu]string{macho.CpuAmd64: "amd64", macho.CpuArm64: "arm64"}
		b.GOOS, b.GOARCH = "darwin", arches[f.Cpu]
		if b.GOARCH == "" || f.Type != macho.TypeExec {
			return b, fmt.Errorf("%s: a Mach-O file of no platform myco builds for (%s)", path, f.Cpu)
		}
		return b, nil
	}
	return b, fmt.Errorf("%s is not an executable of a platform myco knows (ELF or Mach-O)", path)
}

// Binaries returns the myco executables that this machine could install: self (the
// running one) and the release binaries beside it, named myco-GOOS-GOARCH as make release
// names them; the ones whose header cannot be read are left out.
func Binaries(self string) []Binary {
	var out []Binary
	if b, err := ReadBinary(self); err == nil {
		out = append(out, b)
	}
	names, _ := filepath.Glob(filepath.Join(filepath.Dir(self), "myco-*-*"))
	for _, n := range names {
		if strings.HasSuffix(n, ".sha256") || n == self {
			continue
		}
		if info, err := os.Stat(n); err != nil || !info.Mode().IsRegular() {
			continue
		}
		if b, err := ReadBinary(n); err == nil {
			out = append(out, b)
		}
	}
	return out
}

// PickBinary returns the binary of bins that runs on goos/goarch: of its platform and, on
// Linux, static. None is an error that says which there are and how to make the one
// wanted; self names the running binary, beside which a release binary is looked for.
func PickBinary(bins []Binary, self, goos, goarch string) (Binary, error) {
	var dynamic *Binary
	for i, b := range bins {
		if b.GOOS != goos || b.GOARCH != goarch {
			continue
		}
		if b.Static || b.GOOS == "darwin" {
			return b, nil
		}
		dynamic = &bins[i]
	}
	name := "myco-" + goos + "-" + goarch
	howTo := fmt.Sprintf("build one with make release and put dist/%s beside %s (or: CGO_ENABLED=0 GOOS=%s GOARCH=%s go build -o %s ./cmd/myco)",
		name, self, goos, goarch, filepath.Join(filepath.Dir(self), name))
	if dynamic != nil {
		return Binary{}, fmt.Errorf("%s is built for %s/%s but linked against this machine's C library (a cgo build), which the remote may not have, or have older; %s",
			dynamic.Path, goos, goarch, howTo)
	}
	var have []string
	for _, b := range bins {
		have = append(have, b.GOOS+"/"+b.GOARCH)
	}
	if len(have) == 0 {
		have = []string{"none"}
	}
	return Binary{}, fmt.Errorf("no myco here is built for %s/%s (here: %s); %s", goos, goarch, strings.Join(have, ", "), howTo)
}
