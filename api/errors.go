package api

// ErrorAnswer is the body of every error answer of the API, and of the server in front of
// the profiles: {"error": {"code": "busy", "message": "…"}}.
type ErrorAnswer struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is the inside of an [ErrorAnswer]: a stable code to branch on and a sentence
// to show.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Files are the files of a conflict (an undo_turn, redo_turn or revert_file refused
	// because they changed since the turn): send them in overwrite to overwrite them.
	Files []ConflictFile `json:"files,omitempty"`
}

// ConflictFile is a file an undo, redo or revert would overwrite although it changed since
// the turn.
type ConflictFile struct {
	Path   string `json:"path"`
	Host   string `json:"host,omitempty"`
	Reason string `json:"reason" enum:"changed,untracked"`
}

// ErrorCode is a code of the error envelope: its status and when it comes.
type ErrorCode struct {
	Code   string
	Status int
	When   string
}

// ErrorCodes returns every code the error envelope carries, the server in front of the
// profiles' included, in the order docs/browser.md lists them. A code may come with more
// than one status (unknown_model: 400 for a request that names a model the catalog does
// not have, 409 for a session whose model is gone). A later myco may add codes: a client
// treats one it does not know by its status.
func ErrorCodes() []ErrorCode {
	return []ErrorCode{
		{"missing_field", 400, "a required field is missing or empty (the message names it)"},
		{"unknown_field", 400, "a field or query parameter the endpoint (or the action) does not take, or one spelt otherwise than documented"},
		{"duplicate_field", 400, "a field, or a query parameter, given twice"},
		{"invalid_field", 400, "a field or query parameter of the wrong type, out of range, or not valid UTF-8; a cwd that is not an absolute path of a readable directory"},
		{"invalid_json", 400, "not one JSON object (empty, malformed, several values)"},
		{"unknown_model", 400, "the request names a model the catalog does not have"},
		{"unknown_action", 400, "an action that does not exist"},
		{"bad_attachment", 400, "an attachment cannot be attached (too big, binary and not an image, too many)"},
		{"forbidden_origin", 403, "the request comes from another site's page"},
		{"not_owner", 403, "the connection comes from another user of the machine than the server's, or its owner cannot be told (the connection is closed)"},
		{"token_required", 403, "the server runs with a token (its owner cannot be told by the socket) and the request lacks it (the connection is closed)"},
		{"approval_refused", 403, "approve, deny or set_mode without the approval capability (the Myco-Approval header or the browser's cookie): only the person may answer an approval or change a mode"},
		{"not_found", 404, "no such session, endpoint or profile"},
		{"no_approval", 404, "approve or deny of an approval that is not pending: answered already, or never asked"},
		{"parent_not_found", 404, "parent_session does not exist"},
		{"method_not_allowed", 405, "the endpoint does not take this method (Allow lists those it takes)"},
		{"busy", 409, "the session runs a job (nothing was queued); or a cancel stopped the request before it started"},
		{"conflict", 409, "an undo_turn, redo_turn or revert_file would overwrite files changed since the turn: error.files names them; nothing was written"},
		{"not_undoable", 409, "an undo of a turn that changed no captured file or is undone already, a redo of one that is not undone"},
		{"not_retryable", 409, "a retry of a session whose last turn answered (or that has had none): there is nothing to send again"},
		{"not_editable", 409, "(pages) an edit of something other than a message a user sent in the active thread"},
		{"not_queued", 409, "(pages) the queued message was sent or withdrawn already"},
		{"queue_full", 409, "(pages) 16 messages wait already for the running turn"},
		{"budget_reached", 409, "the session tree has cost its budget (max_cost): no child is created in it until the budget is raised (the retry action's max_cost)"},
		{"request_id_conflict", 409, "the request_id was used before for a different request"},
		{"unknown_model", 409, "the session's model is no longer in the catalog: choose one with select_model (the message lists the models)"},
		{"unsupported_schema", 409, "the session's file is of a newer schema: it needs a newer myco"},
		{"damaged", 409, "the session's file is damaged (the message names the file and line)"},
		{"too_large", 413, "the body is over its limit (1 MiB; 32 MiB for actions), or a message's text over 1 MiB"},
		{"unsupported_media_type", 415, "the body is not application/json"},
		{"misdirected_request", 421, "the Host header is not the server's loopback name and port"},
		{"internal", 500, "the server failed; its log says why"},
		{"worker_failed", 502, "the profile's worker stopped while answering"},
		{"shutting_down", 503, "the server is stopping"},
		{"config_invalid", 503, "the profile's config is invalid (the message says why and where): fix it"},
		{"unavailable", 503, "the profile's worker does not start, or pauses after crashes (Retry-After says how long)"},
		{"save_failed", 507, "the session could not be saved (a full disk): free space and send it again"},
	}
}
