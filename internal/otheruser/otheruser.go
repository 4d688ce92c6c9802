// Package otheruser plays another user of the machine in tests: a second uid, not an
// account, since the kernel needs no passwd entry to own a file or a socket. Files are
// given to it with chown; sockets are opened as it by [Do], from a thread whose effective
// uid is changed. Both need root, which CI has (see internal/needs).
//
// It imports only the standard library and myco.dev/internal/needs.
package otheruser

// UID is the other user: nobody on Debian, unused by anything the tests run.
const UID = 65534
