package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// FuzzParse feeds arbitrary bytes to the decoder [Load] uses: it must not panic, every
// problem must be an [*Error] naming the file, and what it accepts must be a config that
// validates and resolves. The seeds are in testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	const file = "/fuzz/config.toml"
	f.Fuzz(func(t *testing.T, src []byte) {
		c, err := Parse(file, src)
		if err != nil {
			if c != nil {
				t.Fatalf("Parse returned a config and an error: %v", err)
			}
			checkErrorsNameFile(t, err, file)
			return
		}
		if c.File != file {
			t.Fatalf("Config.File = %q, want %q", c.File, file)
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("Validate of an accepted config: %v", err)
		}
		for key := range c.Models {
			m, err := c.Resolve(key)
			if err != nil || m.Key != key {
				t.Fatalf("Resolve(%q) = %+v, %v", key, m, err)
			}
			if m.ResponseHeaderTimeout < 0 || m.StreamIdleTimeout < 0 {
				t.Fatalf("model %q accepted with a negative timeout: %v, %v", key, m.ResponseHeaderTimeout, m.StreamIdleTimeout)
			}
		}
		if _, err := c.DefaultModel(""); err != nil && !strings.HasPrefix(err.Error(), file+": ") {
			t.Fatalf("DefaultModel error %q does not name the file", err)
		}
		vars := c.CredentialVars()
		if !slices.IsSorted(vars) || len(slices.Compact(slices.Clone(vars))) != len(vars) {
			t.Fatalf("CredentialVars() = %q, want sorted and unique", vars)
		}
		for _, v := range vars {
			if !isEnvName(v) || strings.HasPrefix(v, "MYCO_") {
				t.Fatalf("an accepted config reads the credential variable %q", v)
			}
		}
	})
}

// checkErrorsNameFile fails t unless every problem joined in err is an *Error for file.
func checkErrorsNameFile(t *testing.T, err error, file string) {
	t.Helper()
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	if len(errs) == 0 {
		t.Fatalf("Parse error %q joins no problems", err)
	}
	for _, e := range errs {
		var ce *Error
		if !errors.As(e, &ce) || ce.File != file || !strings.HasPrefix(e.Error(), file+":") {
			t.Fatalf("Parse problem %q (%T) does not name the file %s", e, e, file)
		}
	}
}
