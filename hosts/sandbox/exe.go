package sandbox

import (
	"os"
	"path/filepath"
)

// FenceExe is the executable that fences sandboxed commands in: myco-fence beside this
// one (make build puts it there), which starts in a few milliseconds, else this one, whose
// run calls [Main] first but whose start takes tens of milliseconds more. ""
// (no sandbox) when neither can be found.
func FenceExe() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	if f := filepath.Join(filepath.Dir(exe), "myco-fence"); isExecutable(f) {
		return f
	}
	return exe
}

func isExecutable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}
