package hostd

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"myco.dev/hosts/proto"
	"myco.dev/hosts/sandbox"
	"myco.dev/hosts/tools"
)

// fenced returns ctx under which call's processes run in this host's sandbox, as the
// controller asked (call.Sandbox): writes only in the daemon's working directory (none
// when read-only) and the owner's private temporary directory, the git repository's hooks
// and config read-only, the daemon's directory and myco's home hidden. It fails when the
// host cannot fence so; then nothing may run.
func (d *Daemon) fenced(ctx context.Context, call proto.Call) (context.Context, error) {
	if d.o.Fence == nil {
		return ctx, errors.New("this host daemon has no sandbox")
	}
	root := d.o.TmpRoot
	if root == "" {
		root = os.TempDir()
	}
	sum := sha256.Sum256([]byte(call.Owner))
	tmp := filepath.Join(root, "myco-sandbox-"+hex.EncodeToString(sum[:8]))
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return ctx, fmt.Errorf("make the private temporary directory: %w", err)
	}
	spec := sandbox.Spec{Writable: []string{tmp}, Hidden: d.o.Hidden, Network: call.Sandbox.Network}
	if dir := d.hello.Dir; dir != "" && !call.Sandbox.ReadOnly {
		spec.Writable = append(spec.Writable, dir)
		spec.Protected = sandbox.GitProtected(dir)
	}
	if err := d.o.Fence.Support().Check(spec); err != nil {
		return ctx, err
	}
	mode := "workspace"
	if call.Sandbox.ReadOnly {
		mode = "read-only"
	}
	return tools.WithSandbox(ctx, tools.Fenced{Fence: d.o.Fence, Spec: spec, TmpDir: tmp, Mode: mode}), nil
}
