package web

import (
	"net/http"
	"strings"
)

// Redirect answers r with a redirect (code) to target, a path of this server with its
// query, through [LocalPath]: no answer of myco sends a browser to another site, whatever
// path a request named. Every redirect of the servers goes through it.
func Redirect(w http.ResponseWriter, r *http.Request, target string, code int) {
	http.Redirect(w, r, LocalPath(target), code)
}

// LocalPath returns target, a path of this server with its query, in a form that no
// browser reads as another host: the slashes and backslashes it starts with become one
// slash (a browser reads //evil/x, and /\evil/x, as the host evil), and ASCII tabs and
// line breaks, which a browser drops from a URL (so that /<TAB>/evil is //evil), are
// percent-encoded. A target that is not a path (https://evil/, evil/x) becomes "/".
func LocalPath(target string) string {
	target = strings.NewReplacer("\t", "%09", "\n", "%0A", "\r", "%0D").Replace(target)
	if !strings.HasPrefix(target, "/") && !strings.HasPrefix(target, `\`) {
		return "/"
	}
	return "/" + strings.TrimLeft(target, `/\`)
}
