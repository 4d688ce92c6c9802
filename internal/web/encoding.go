package web

import (
	"net/http"
	"strconv"
	"strings"
)

// AcceptsGzip reports whether r's Accept-Encoding takes gzip: named with a quality above
// zero, or covered by * with one, as RFC 9110 §12.5.3 reads it. "gzip;q=0" refuses it, and
// so does "*;q=0" when gzip is not named.
func AcceptsGzip(r *http.Request) bool {
	star := -1.0
	for _, h := range r.Header.Values("Accept-Encoding") {
		for item := range strings.SplitSeq(h, ",") {
			name, params, _ := strings.Cut(item, ";")
			name = strings.ToLower(strings.TrimSpace(name))
			q := 1.0
			for p := range strings.SplitSeq(params, ";") {
				k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
				if ok && strings.EqualFold(strings.TrimSpace(k), "q") {
					if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
						q = f
					} else {
						q = 0
					}
				}
			}
			switch name {
			case "gzip", "x-gzip":
				return q > 0
			case "*":
				star = q
			}
		}
	}
	return star > 0
}
