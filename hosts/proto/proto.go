// Package proto is the NDJSON host protocol spoken between the controller (the myco server
// or -p process) and a host runtime (myco --mode host) over ssh's stdin and stdout: one
// JSON object per line, both ways. See docs/host-protocol.md.
//
// It imports only the standard library, the tool result type and the snapshot types.
package proto

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"myco.dev/hosts/snapshot"
	"myco.dev/hosts/tools"
)

// Version is the protocol version. Both sides send it in their hello; a mismatch fails
// the attach.
//
// Changelog, one line per bump:
//
//	1: hello, call/result, error, ping/pong, inventory, release.
//	2: the per-user host daemon: hello.instance, hello.pid and hello.grace_secs; call.key;
//	   fetch (a call's result by key after a drop); proxy (proxy to daemon, first frame).
//	3: call.progress and progress frames (a running call's newest output, host to controller).
//	4: hello.without_env (variables the host's tool processes must not get) and
//	   hello.no_daemon (the host serves without its daemon, and why); error.fatal; a
//	   controller-to-host line is at most MaxRequestLine.
//	5: MCP servers on the host: mcp_list and mcp_tools (list the tools of the servers
//	   the controller configures, starting them), call.mcp (call one by its exposed name),
//	   resources.mcp (an owner's servers), result.unknown for a call of a server that
//	   ended while it ran.
//	6: snapshots of a directory in the host's store: capture/captured, diff/diffed,
//	   restore/restored, prune/pruned and size/sized; error.code.
const Version = 6

// MaxLine bounds one host-to-controller line, its newline included: a result can carry an
// image of the controller's max_image_base64_bytes and more.
const MaxLine = 64 << 20

// MaxRequestLine bounds one controller-to-host line, its newline included. Requests are
// small: the largest is an editor call carrying a file's text, which a model writes. The
// host reads a frame into memory several times over while it decodes it, so this bound,
// times the connections a daemon serves, bounds its memory.
const MaxRequestLine = 2 << 20

// Msg is the one frame type. Exactly one payload pointer is set; ID pairs a request with
// its response and is 0 for the hellos.
type Msg struct {
	ID        uint64           `json:"id,omitempty"`
	Hello     *Hello           `json:"hello,omitempty"`
	Call      *Call            `json:"call,omitempty"`
	Result    *tools.Result    `json:"result,omitempty"`
	Err       *Error           `json:"error,omitempty"`
	Ping      *struct{}        `json:"ping,omitempty"`
	Pong      *struct{}        `json:"pong,omitempty"`
	Inventory *InventoryQuery  `json:"inventory,omitempty"`
	Resources *json.RawMessage `json:"resources,omitempty"`
	Release   *Release         `json:"release,omitempty"`
	Released  *struct{}        `json:"released,omitempty"`
	Fetch     *Fetch           `json:"fetch,omitempty"`
	Proxy     *Proxy           `json:"proxy,omitempty"`
	Progress  *Progress        `json:"progress,omitempty"`
	MCPList   *MCPList         `json:"mcp_list,omitempty"`
	MCPTools  *MCPTools        `json:"mcp_tools,omitempty"`

	// Snapshots (see [snapshot.Store]): each request is answered by its own response
	// frame, or by an error (with a [Error.Code] for the conditions a caller tells apart).
	Capture  *snapshot.CaptureRequest `json:"capture,omitempty"`
	Captured *snapshot.CaptureResult  `json:"captured,omitempty"`
	Diff     *Diff                    `json:"diff,omitempty"`
	Diffed   *snapshot.Diff           `json:"diffed,omitempty"`
	Restore  *snapshot.RestoreRequest `json:"restore,omitempty"`
	Restored *Restored                `json:"restored,omitempty"`
	Prune    *Prune                   `json:"prune,omitempty"`
	Pruned   *Pruned                  `json:"pruned,omitempty"`
	Size     *struct{}                `json:"size,omitempty"`
	Sized    *Sized                   `json:"sized,omitempty"`
}

// Diff asks for what changed from snapshot From to snapshot To of the host's store.
type Diff struct {
	From    snapshot.ID          `json:"from"`
	To      snapshot.ID          `json:"to"`
	Options snapshot.DiffOptions `json:"options"`
}

// Restored answers a restore: what it did, and Error when it stopped midway (it still
// lists what it did, which the controller journals).
type Restored struct {
	snapshot.RestoreResult
	Error string `json:"error,omitempty"`
}

// Prune makes Owner keep only the snapshots Keep in the host's store.
type Prune struct {
	Owner string        `json:"owner"`
	Keep  []snapshot.ID `json:"keep"`
}

// Pruned answers a prune. Busy: the owner's list was rewritten, but another process had
// the store open, so nothing was removed yet.
type Pruned struct {
	snapshot.PruneResult
	Busy bool `json:"busy,omitempty"`
}

// Sized answers a size: the bytes the host's store takes.
type Sized struct {
	Bytes int64 `json:"bytes"`
}

// The codes of an [Error] that a caller branches on.
const (
	CodeNotFound = "not_found" // a snapshot the store does not hold ([snapshot.ErrNotFound])
	CodeTooLarge = "too_large" // a capture over its MaxFiles ([snapshot.ErrTooLarge])
	// CodeNoStore: the host keeps no snapshot store (its state directory cannot be used).
	CodeNoStore = "no_store"
)

// Hello is the first frame each way.
type Hello struct {
	Protocol int    `json:"protocol"`
	Version  string `json:"version"` // the binary's version
	OS       string `json:"os,omitempty"`
	Arch     string `json:"arch,omitempty"`
	Shell    string `json:"shell,omitempty"` // the login shell
	Dir      string `json:"dir,omitempty"`   // the working directory
	// MaxImageBase64Bytes is the image cap the host enforces: the largest of the controller's
	// catalog, while the controller holds each call to its session model's own cap.
	MaxImageBase64Bytes int `json:"max_image_base64_bytes,omitempty"`
	// Instance names the host daemon that answers; a different instance after a
	// re-attach means the earlier daemon, and everything it held, is gone. PID is its
	// process id. GraceSecs is how long it keeps a dropped owner's resources.
	Instance  string `json:"instance,omitempty"`
	PID       int    `json:"pid,omitempty"`
	GraceSecs int    `json:"grace_secs,omitempty"`
	// NoDaemon, in the host's hello, says why the host serves in the process ssh started
	// rather than in its daemon: its bash sessions and calls in flight then end when the
	// connection drops. Empty when a daemon serves.
	NoDaemon string `json:"no_daemon,omitempty"`
	// WithoutEnv, in the controller's hello, names the environment variables (the
	// controller's credentials) that the processes of this connection's calls must not
	// get.
	WithoutEnv []string `json:"without_env,omitempty"`
	// Sandbox, in the host's hello, says what its sandbox can do ("Landlock ABI 7, …", or
	// "no sandbox: …"), and Fences that it fences the calls that ask ([Call.Sandbox]). A
	// controller never sends a fenced call to a host whose hello lacks Fences: an older
	// host would ignore the request and run the command unfenced.
	Sandbox string `json:"sandbox,omitempty"`
	Fences  bool   `json:"fences,omitempty"`
}

// Call runs one tool on behalf of Owner. Key, chosen by the controller and unique among
// Owner's calls, lets the controller [Fetch] the result after a drop.
type Call struct {
	Owner string          `json:"owner"`
	Tool  string          `json:"tool"`
	Input json.RawMessage `json:"input"`
	Key   string          `json:"key,omitempty"`
	// Progress asks for [Progress] frames while the call runs.
	Progress bool `json:"progress,omitempty"`
	// MCP, when set, makes this a call of the MCP server it configures, run on the host:
	// Tool is then the tool's exposed name (mcp__SERVER__TOOL, as [MCPTools] listed it)
	// and Input its arguments. The host starts the owner's instance of the server when it
	// has none.
	MCP *MCPServer `json:"mcp,omitempty"`
	// Sandbox, when set, asks the host to run the call's processes in its sandbox (see
	// hosts/sandbox): writes only in its working directory (none with ReadOnly) and a
	// private temporary directory, .git/hooks and .git/config read-only, myco's files there
	// unreadable, no network unless Network. A host that cannot fence answers an error
	// result and runs nothing.
	Sandbox *Sandbox `json:"sandbox,omitempty"`
}

// Sandbox is how a fenced call's processes are fenced in.
type Sandbox struct {
	ReadOnly bool `json:"read_only,omitempty"`
	Network  bool `json:"network,omitempty"`
}

// MCPServer is an MCP server the controller's configuration runs on the host, over
// stdio: the host starts Command with Args in Dir (empty: the host daemon's directory; a
// leading ~/ is the host's home) and gives it PATH, HOME and LANG of its own environment
// and Env. Its timeouts are in milliseconds; zero means the defaults (10 s to start and
// list its tools, 120 s for a call). The host keeps one set of servers per distinct
// configuration, shared by the controllers that send the same one.
type MCPServer struct {
	Name             string            `json:"name"`
	Command          string            `json:"command"`
	Args             []string          `json:"args,omitempty"`
	Env              map[string]string `json:"env,omitempty"`
	Dir              string            `json:"dir,omitempty"`
	StartupTimeoutMS int64             `json:"startup_timeout_ms,omitempty"`
	ToolTimeoutMS    int64             `json:"tool_timeout_ms,omitempty"`
}

// MCPList asks the host for the tools of Servers: it starts each one whose tools it does
// not know yet (in parallel, each bounded by its startup timeout) and answers with
// [MCPTools].
type MCPList struct {
	Servers []MCPServer `json:"servers"`
}

// MCPTools answers an [MCPList]: one entry per server, in the order asked.
type MCPTools struct {
	Servers []MCPListed `json:"servers"`
}

// MCPListed is one server's tools, in name order, or why they could not be listed.
type MCPListed struct {
	Name  string    `json:"name"`
	Tools []MCPTool `json:"tools,omitempty"`
	Err   string    `json:"error,omitempty"`
}

// MCPTool is one tool of an MCP server as the model sees it: its exposed name, the name
// its server knows it by (they differ when Mapped), its description and input schema.
type MCPTool struct {
	Name        string          `json:"name"`
	Remote      string          `json:"remote"`
	Mapped      bool            `json:"mapped,omitempty"`
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
}

// Progress is the newest output of a running call (at most [tools.ProgressBytes], cut at a
// UTF-8 boundary), sent with the call's id when the call asked for it: at most one a second
// per call, and the newest one not yet sent just before the result, never after it.
type Progress struct {
	Tail string `json:"tail"`
}

// Fetch asks the host daemon for the result of Owner's call Key, made on an earlier
// connection: it is answered with that call's result once the call ends, or with an
// error when the daemon does not hold it.
type Fetch struct {
	Owner string `json:"owner"`
	Key   string `json:"key"`
}

// Proxy is the first frame a `myco --mode host` proxy sends the daemon on a new socket
// connection: the settings of the controller that spawned it.
type Proxy struct {
	MaxImageBase64Bytes int `json:"max_image_base64_bytes"`
}

// InventoryQuery asks for the tool resources Owner holds.
type InventoryQuery struct {
	Owner string `json:"owner"`
}

// Release ends every resource Owner holds.
type Release struct {
	Owner string `json:"owner"`
}

// Error is a request that could not be served: a malformed line, an unknown tool, a frame
// of the wrong kind. A Fatal error (sent without an id) is the host's last frame: it ends
// the connection, as after a protocol mismatch or a line over [MaxRequestLine].
type Error struct {
	Message string `json:"message"`
	Fatal   bool   `json:"fatal,omitempty"`
	// Code names a condition the controller tells apart (CodeNotFound, …); empty for
	// the others.
	Code string `json:"code,omitempty"`
}

// Mismatch reports hellos whose protocol versions differ. Both sides build the same
// message, naming the controller (the myco server or -p process) and the host.
type Mismatch struct {
	Controller, Host       int    // protocol versions
	ControllerBin, HostBin string // binary versions
}

func (e *Mismatch) Error() string {
	return fmt.Sprintf("host protocol mismatch: the controller's myco %s speaks host protocol %d, the host's myco %s speaks %d; install the same myco version on both sides (on the host where its non-interactive PATH finds it, for example ~/.local/bin/myco)",
		e.ControllerBin, e.Controller, e.HostBin, e.Host)
}

// Check compares the controller's hello with the host's.
func Check(controller, host Hello) error {
	if controller.Protocol != host.Protocol {
		return &Mismatch{Controller: controller.Protocol, Host: host.Protocol, ControllerBin: controller.Version, HostBin: host.Version}
	}
	return nil
}

// ErrLineTooLong is a frame over the line limit of its stream. A [Writer] returns it
// without writing anything, so the stream stays usable; a [Reader] returns it for good,
// since the rest of the stream cannot be framed.
var ErrLineTooLong = errors.New("frame line too long")

// Writer writes frames, each as one line of at most its limit. It is safe for concurrent
// use.
type Writer struct {
	max int

	mu sync.Mutex // serializes the writes to w
	w  io.Writer
}

// NewWriter returns a frame writer over w for host-to-controller frames ([MaxLine]).
func NewWriter(w io.Writer) *Writer { return NewWriterSize(w, MaxLine) }

// NewWriterSize returns a frame writer over w whose lines, newline included, are at most
// max bytes: [MaxRequestLine] for a controller.
func NewWriterSize(w io.Writer, max int) *Writer { return &Writer{w: w, max: max} }

// Write sends one frame as one line. A frame over the writer's limit is not sent: the
// error wraps [ErrLineTooLong].
func (w *Writer) Write(m Msg) error {
	// Marshalled anew each time rather than through a kept json.Encoder buffer, which
	// would hold on to the largest frame's memory for the connection's life.
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if len(b)+1 > w.max {
		return fmt.Errorf("%w: the frame is %d bytes, and a line of this stream may have at most %d", ErrLineTooLong, len(b)+1, w.max)
	}
	b = append(b, '\n')
	w.mu.Lock()
	defer w.mu.Unlock()
	_, err = w.w.Write(b)
	return err
}

// Reader reads frames. It is not safe for concurrent use.
type Reader struct {
	sc      *bufio.Scanner
	max     int
	tooLong error // set for good once a line was over max
}

// NewReader returns a frame reader over r for host-to-controller frames ([MaxLine]).
func NewReader(r io.Reader) *Reader { return NewReaderSize(r, MaxLine) }

// NewReaderSize returns a frame reader over r whose lines, newline included, are at most
// max bytes: [MaxRequestLine] for a host. It holds at most max bytes of r at a time.
func NewReaderSize(r io.Reader, max int) *Reader {
	sc := bufio.NewScanner(r)
	// The scanner's limit is the larger of max and the first buffer's size.
	sc.Buffer(make([]byte, 0, min(64<<10, max)), max)
	return &Reader{sc: sc, max: max}
}

// ErrMalformed wraps a line that is not a valid frame; the stream stays usable.
var ErrMalformed = errors.New("malformed frame")

// Read returns the next frame. A line that is not one JSON object is an error wrapping
// ErrMalformed, after which reading can go on; a line over the reader's limit is an error
// wrapping [ErrLineTooLong], after which every Read fails; io.EOF means the peer closed. A
// failure after ctx ended returns ctx.Err().
func (r *Reader) Read(ctx context.Context) (Msg, error) {
	if r.tooLong != nil {
		// The scanner would go on with the rest of the long line as if it were a line.
		return Msg{}, r.tooLong
	}
	for {
		if !r.sc.Scan() {
			if ctx.Err() != nil {
				return Msg{}, ctx.Err()
			}
			err := r.sc.Err()
			if errors.Is(err, bufio.ErrTooLong) {
				r.tooLong = fmt.Errorf("%w: a line is over the %d bytes a frame of this stream may have", ErrLineTooLong, r.max)
				return Msg{}, r.tooLong
			}
			if err != nil {
				return Msg{}, err
			}
			return Msg{}, io.EOF
		}
		line := r.sc.Bytes()
		if len(line) == 0 {
			continue
		}
		var m Msg
		if err := json.Unmarshal(line, &m); err != nil {
			return Msg{}, fmt.Errorf("%w: %v", ErrMalformed, err)
		}
		if n := m.payloads(); n != 1 {
			return m, fmt.Errorf("%w: a frame carries exactly one payload, this one has %d", ErrMalformed, n)
		}
		return m, nil
	}
}

func (m Msg) payloads() int {
	n := 0
	for _, set := range []bool{m.Hello != nil, m.Call != nil, m.Result != nil, m.Err != nil, m.Ping != nil,
		m.Pong != nil, m.Inventory != nil, m.Resources != nil, m.Release != nil, m.Released != nil,
		m.Fetch != nil, m.Proxy != nil, m.Progress != nil, m.MCPList != nil, m.MCPTools != nil,
		m.Capture != nil, m.Captured != nil, m.Diff != nil, m.Diffed != nil, m.Restore != nil, m.Restored != nil,
		m.Prune != nil, m.Pruned != nil, m.Size != nil, m.Sized != nil} {
		if set {
			n++
		}
	}
	return n
}
