package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"

	"myco.dev/hosts/sandbox"
)

// proc is a process group leader that bash started: with [exec.Cmd.Start], or through
// the helper of a [sandbox.Runner].
type proc struct {
	pid int
	// wait waits for the process to exit and returns its wait status; an error means
	// there is none (the helper ended, or the wait itself failed).
	wait func() (syscall.WaitStatus, error)
}

// ownerRunner is an owner's runner of fenced commands for one spec.
type ownerRunner struct {
	r      *sandbox.Runner
	warned atomic.Bool // the fallback to Wrap was logged
}

// startProc starts cmd (built with ctx, or without a context) in a process group of its
// own, fenced in as ctx says: through owner's runner for the sandbox's spec, whose helper
// pays the fence's start once for many commands; with [sandbox.Fence.Wrap] where no helper
// can be had; as it is without a sandbox. When ctx ends, the group is killed. The error's
// text says whether the command was not run or failed to start.
func (b *Bash) startProc(ctx context.Context, owner string, cmd *exec.Cmd) (*proc, error) {
	f, fenced := SandboxFrom(ctx)
	if !fenced {
		b.prepare()
	} else {
		if f.Fence == nil {
			return nil, errors.New("not run: this command must run in a sandbox, and this host has none")
		}
		if f.TmpDir != "" {
			cmd.Env = setEnv(cmd.Env, "TMPDIR", f.TmpDir)
		}
		or, err := b.runner(owner, f)
		if err != nil {
			return nil, fmt.Errorf("not run: %w", err)
		}
		c, err := commandOf(cmd)
		if err != nil {
			return nil, fmt.Errorf("not run: %w", err)
		}
		// The first command of a session waits for two starts, the reaper's (which is
		// myco's own) and the helper's: one at a time they cost it 10-40 ms more.
		var warm sync.WaitGroup
		warm.Go(func() { or.r.Warm() }) // an error comes again from Start
		b.prepare()
		warm.Wait()
		p, err := or.r.Start(ctx, c)
		switch {
		case err == nil:
			return &proc{pid: p.Pid, wait: p.Wait}, nil
		case errors.Is(err, sandbox.ErrUnsupported):
			return nil, fmt.Errorf("not run: %w", err)
		case !errors.Is(err, sandbox.ErrNoHelper):
			return nil, fmt.Errorf("run %s: %w", b.opts.Shell, err)
		}
		if !or.warned.Swap(true) {
			b.opts.Log.Warn("bash: no sandbox helper; each command starts the fence", "owner", owner, "err", err)
		}
		if err := f.Fence.Wrap(cmd, f.Spec); err != nil {
			return nil, fmt.Errorf("not run: %w", err)
		}
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("run %s: %w", b.opts.Shell, err)
	}
	return &proc{pid: cmd.Process.Pid, wait: func() (syscall.WaitStatus, error) { return waitCmd(cmd) }}, nil
}

// waitCmd waits for cmd and returns its wait status; an exit status other than 0 is no
// error.
func waitCmd(cmd *exec.Cmd) (syscall.WaitStatus, error) {
	err := cmd.Wait()
	if cmd.ProcessState == nil {
		return 0, err
	}
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		err = nil
	}
	return ws, err
}

// runner returns owner's runner for f's spec, made at its first use. It is closed when
// owner's resources are released.
func (b *Bash) runner(owner string, f Fenced) (*ownerRunner, error) {
	spec, err := json.Marshal(f.Spec)
	if err != nil {
		return nil, fmt.Errorf("encode the sandbox's spec: %w", err)
	}
	key := fmt.Sprintf("%p %s", f.Fence, spec)
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, errors.New("bash is shut down on this host")
	}
	if or := b.ownerLocked(owner).runners[key]; or != nil {
		b.mu.Unlock()
		return or, nil
	}
	b.mu.Unlock()
	r, err := f.Fence.Runner(f.Spec) // probes the kernel the first time: not under b.mu
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	o := b.ownerLocked(owner)
	if or := o.runners[key]; or != nil || b.closed { // made meanwhile, or too late
		r.Close()
		if b.closed {
			return nil, errors.New("bash is shut down on this host")
		}
		return or, nil
	}
	or := &ownerRunner{r: r}
	o.runners[key] = or
	return or, nil
}

// commandOf is what cmd says, for a runner: its standard streams must be files.
func commandOf(cmd *exec.Cmd) (sandbox.Command, error) {
	if cmd.Err != nil {
		return sandbox.Command{}, cmd.Err
	}
	files := make([]*os.File, 3, 3+len(cmd.ExtraFiles))
	for i, s := range []any{cmd.Stdin, cmd.Stdout, cmd.Stderr} {
		if s == nil {
			continue
		}
		f, ok := s.(*os.File)
		if !ok {
			return sandbox.Command{}, fmt.Errorf("descriptor %d is a %T, not a file", i, s)
		}
		files[i] = f
	}
	files = append(files, cmd.ExtraFiles...)
	return sandbox.Command{Path: cmd.Path, Args: cmd.Args, Env: cmd.Environ(), Dir: cmd.Dir, Files: files, WaitDelay: cmd.WaitDelay}, nil
}
