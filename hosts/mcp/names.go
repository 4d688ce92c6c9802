package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// MaxNameLen is the longest tool name the providers accept (^[a-zA-Z0-9_-]{1,64}$).
const MaxNameLen = 64

// ExposedName returns the name the model sees for the tool named tool of server:
// mcp__SERVER__TOOL when that fits the providers' rule, ^[a-zA-Z0-9_-]{1,64}$. Otherwise
// each byte outside the rule becomes '_', the name is cut to leave room, and an '_' and 8
// hex digits of a hash of the server's and the tool's names are added; mapped reports
// that. The result depends only on the two names, so it is the same in every session and
// every myco. Two tools of a server get the same name only when one is named like the
// other's mapped name; [Set.Discover] then keeps the first in name order and logs the other.
func ExposedName(server, tool string) (name string, mapped bool) {
	name = "mcp__" + server + "__" + tool
	if validName(name) {
		return name, false
	}
	var b strings.Builder
	for _, c := range []byte(name) {
		if validNameByte(c) {
			b.WriteByte(c)
		} else {
			b.WriteByte('_')
		}
	}
	sum := sha256.Sum256([]byte(server + "\x00" + tool))
	suffix := "_" + hex.EncodeToString(sum[:4])
	name = b.String()
	if len(name) > MaxNameLen-len(suffix) {
		name = name[:MaxNameLen-len(suffix)]
	}
	return name + suffix, true
}

// ValidName reports whether s fits the providers' rule for a tool name,
// ^[a-zA-Z0-9_-]{1,64}$.
func ValidName(s string) bool { return validName(s) }

func validName(s string) bool {
	if s == "" || len(s) > MaxNameLen {
		return false
	}
	for _, c := range []byte(s) {
		if !validNameByte(c) {
			return false
		}
	}
	return true
}

func validNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}
