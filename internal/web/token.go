package web

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"strings"
)

// TokenCookie names the cookie of the token fallback, per port so that two servers on one
// machine keep theirs apart.
func TokenCookie(port string) string { return "myco_token_" + port }

// TokenCheck admits a request that carries the server's secret: in the cookie, in an
// Authorization: Bearer header (agents' tools send the token file's header), or once in
// the URL (?token=), which is swapped for an HttpOnly SameSite=Strict cookie and a
// redirect to the clean URL so the secret leaves the address bar and the history. It is
// used only where the connecting socket's owner cannot be told.
func TokenCheck(token, port string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, err := r.Cookie(TokenCookie(port)); err == nil && subtle.ConstantTimeCompare([]byte(c.Value), []byte(token)) == 1 {
			next.ServeHTTP(w, r)
			return
		}
		// Agents' tools send the token file's header (curl -H @$MYCO_SERVER_TOKEN_FILE).
		if b, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && subtle.ConstantTimeCompare([]byte(b), []byte(token)) == 1 {
			next.ServeHTTP(w, r)
			return
		}
		if t := r.URL.Query().Get("token"); t != "" && subtle.ConstantTimeCompare([]byte(t), []byte(token)) == 1 && r.Method == http.MethodGet {
			http.SetCookie(w, &http.Cookie{Name: TokenCookie(port), Value: token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			q := r.URL.Query()
			q.Del("token")
			u := *r.URL
			u.RawQuery = q.Encode()
			Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
			return
		}
		Forbid(w, "token_required", "this myco server needs the token it printed at start (open the URL it printed once)")
	})
}

// TokenHeader is how a token file holds the secret: the one header line that carries it,
// so that a tool sends it with curl -H @FILE and it never reaches a command line.
const TokenHeader = "Authorization: Bearer "

// NewTokenFile writes a fresh secret to path, readable only by the user, and returns it. A
// file left there is replaced, never written through: a link or another user's file in its
// place is removed first, and the new one is made exclusively.
func NewTokenFile(path string) (string, error) {
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	t := hex.EncodeToString(b[:])
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("replace the server token: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("write the server token: %w", err)
	}
	_, err = f.WriteString(TokenHeader + t + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("write the server token: %w", err)
	}
	return t, nil
}

// ReadTokenFile reads the secret from the token file at path.
func ReadTokenFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read the server token: %w", err)
	}
	t, ok := strings.CutPrefix(strings.TrimSpace(string(b)), TokenHeader)
	if !ok || t == "" {
		return "", fmt.Errorf("read the server token: %s does not hold an %q line", path, strings.TrimSpace(TokenHeader))
	}
	return t, nil
}
