// Package lineedit reads the lines a user types at a terminal, for the terminal chat: cursor
// movement, a history recalled with ↑ and kept across runs, and bracketed paste, on
// golang.org/x/term's [term.Terminal] (the editing itself is x/term's, not ours).
//
// It owns the terminal's mode from the first read to Close: raw while a line is read; in
// between, as it was but without echo, so that Ctrl-C is the terminal's interrupt again and
// keys typed ahead wait, unseen, for the next prompt; as it was after Close. What it adds to
// x/term is small: a filter on the input that keeps a pasted block on one line (its line
// breaks shown as ␤ and its tabs as ⇥, given back as newlines and tabs) and drops the control characters of a paste
// (x/term echoes the line as it is), tells Ctrl-C from Ctrl-D (x/term reports both as
// io.EOF), and a history that is saved to a file.
//
// It imports only the standard library, golang.org/x/term, golang.org/x/sys (for the
// mode between reads) and internal/termtext.
package lineedit
