package api

// ChangedFile is one file a turn (or the session) changed.
type ChangedFile struct {
	// Path is the file's path, relative to the directory captured (absolute for a file
	// outside it that the editor wrote).
	Path string `json:"path"`
	// Status is how it changed.
	Status string `json:"status" enum:"added,modified,deleted,renamed"`
	// OldPath is where a renamed file was.
	OldPath string `json:"old_path,omitempty"`
	// Added and Deleted count the lines of a text file's change.
	Added   int `json:"added"`
	Deleted int `json:"deleted"`
	// Binary marks a file with a NUL byte: its sizes say what changed, not its lines.
	Binary bool `json:"binary,omitempty"`
	// Type is what the path is after the change (before, for a deleted one).
	Type string `json:"type,omitempty" enum:"file,symlink,dir"`
	// SizeBefore and SizeAfter are the file's sizes in bytes.
	SizeBefore int64 `json:"size_before,omitempty"`
	SizeAfter  int64 `json:"size_after,omitempty"`
	// ModeBefore and ModeAfter are the permission bits, octal, when they changed.
	ModeBefore string `json:"mode_before,omitempty"`
	ModeAfter  string `json:"mode_after,omitempty"`
	// NotStored says that a version of the file was over the size cap: it is known to
	// have changed, and cannot be shown or put back.
	NotStored bool `json:"not_stored,omitempty"`
	// Untracked says that one side's capture did not see the file (the .gitignore files
	// left it out there): the change is only that the capture began or stopped seeing it.
	Untracked bool `json:"untracked,omitempty"`
	// Patch is the unified diff's hunks, from the first "@@" line; left out for a binary
	// file, a symlink, a file not stored, or when changes was asked without patches.
	Patch string `json:"patch,omitempty"`
	// Cut says that the patch stops before its end (a large diff), or was left out.
	Cut bool `json:"cut,omitempty"`
}

// HostChanges is what changed on one host's directory.
type HostChanges struct {
	Host string `json:"host"` // "local", or a remote's name
	Dir  string `json:"dir,omitempty"`
	// Files are the changed files, by path.
	Files []ChangedFile `json:"files"`
	// Added and Deleted sum the files' lines.
	Added   int `json:"added"`
	Deleted int `json:"deleted"`
	// Cut says that a patch was cut or left out: ask again with a larger max_bytes.
	Cut bool `json:"cut,omitempty"`
	// Error says why the changes of this host are not known (not captured, pruned, the
	// host unreachable).
	Error string `json:"error,omitempty"`
}

// ChangesAnswer answers GET /api/sessions/{id}/changes: what a turn changed (thread and
// turn set), or what the whole session changed, from before its first captured turn to
// the files as they are now.
type ChangesAnswer struct {
	SessionID string `json:"session_id"`
	// Thread and Turn name the turn (its input's entry in the thread); left out for the
	// whole session.
	Thread string `json:"thread,omitempty"`
	Turn   *int   `json:"turn,omitempty"`
	// Undone says that the turn's changes were undone (a redo puts them back).
	Undone bool `json:"undone,omitempty"`
	// Running says that the turn runs: its changes grow.
	Running bool          `json:"running,omitempty"`
	Hosts   []HostChanges `json:"hosts"`
}

// ChangesEvent says that a tool batch of a turn changed files (or that an undo, redo or
// revert did): the files of that batch, without patches. GET …/changes has the diffs.
type ChangesEvent struct {
	EventInfo
	Thread string `json:"thread,omitempty"`
	Index  int    `json:"index,omitempty"` // the turn's input entry in the thread; left out for 0
	Host   string `json:"host,omitempty"`
	// Files are the changed files (at most 200; Cut says there were more).
	Files []ChangedFile `json:"files,omitempty"`
	Cut   bool          `json:"cut,omitempty"`
	// Text says what an undo, redo or revert did; empty after a tool batch.
	Text string `json:"text,omitempty"`
}
