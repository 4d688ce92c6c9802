package config

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestAuthKey(t *testing.T) {
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".keys"), 0o700); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"k": "  sk-file\n", "empty": "\n \n"} {
		if err := os.WriteFile(filepath.Join(home, ".keys", name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	e := fakeEnv{"SET": "sk-env", "BLANK": ""}
	for _, tt := range []struct {
		name    string
		auth    Auth
		home    string
		want    string
		wantErr string
	}{
		{name: "zero is none", auth: Auth{}, want: ""},
		{name: "none", auth: Auth{Source: AuthNone}, want: ""},
		{name: "inline", auth: Auth{Source: AuthInline, Value: "sk-inline"}, want: "sk-inline"},
		{name: "env", auth: Auth{Source: AuthEnv, VarName: "SET"}, want: "sk-env"},
		{name: "env unset", auth: Auth{Source: AuthEnv, VarName: "NOPE"}, wantErr: "environment variable NOPE is not set"},
		{name: "env empty", auth: Auth{Source: AuthEnv, VarName: "BLANK"}, wantErr: "environment variable BLANK is empty"},
		{name: "file under ~", auth: Auth{Source: AuthFile, Path: "~/.keys/k"}, home: home, want: "sk-file"},
		{name: "absolute file", auth: Auth{Source: AuthFile, Path: filepath.Join(home, ".keys", "k")}, want: "sk-file"},
		{name: "missing file", auth: Auth{Source: AuthFile, Path: "~/.keys/nope"}, home: home, wantErr: filepath.Join(home, ".keys", "nope")},
		{name: "empty file", auth: Auth{Source: AuthFile, Path: "~/.keys/empty"}, home: home, wantErr: filepath.Join(home, ".keys", "empty") + " is empty"},
		{name: "~ without home", auth: Auth{Source: AuthFile, Path: "~/.keys/k"}, wantErr: "~/.keys/k: home directory unknown"},
		{name: "unknown source", auth: Auth{Source: "vault"}, wantErr: `unknown auth source "vault"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.auth.Key(e.lookup, tt.home)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Key() = %q, %v; want an error containing %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Key() = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestCredentialVars(t *testing.T) {
	c, err := Parse("config.toml", []byte(catalog+`
[gateways.dup]
protocol = "openai-responses"
base_url = "https://h"
auth = { source = "env", var_name = "XAI_API_KEY" }
`))
	if err != nil {
		t.Fatal(err)
	}
	// A gateway's and a model's (grok-4.5-build, which is not the default), each once;
	// not the file, inline or none sources.
	got, want := c.CredentialVars(), []string{"ANTHROPIC_API_KEY", "XAI_API_KEY"}
	if !slices.Equal(got, want) {
		t.Errorf("CredentialVars() = %q, want %q", got, want)
	}
	if got := defaults("c.toml").CredentialVars(); len(got) != 0 {
		t.Errorf("CredentialVars() of an empty catalog = %q, want none", got)
	}
}

func TestAuthStringHidesInlineCredential(t *testing.T) {
	m := Model{Key: "m", Auth: Auth{Source: AuthInline, Value: "sk-secret"}}
	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		if s := fmt.Sprintf(format, m); strings.Contains(s, "sk-secret") {
			t.Errorf("Sprintf(%q, model) = %s: it reveals the credential", format, s)
		}
	}
}

func TestExpandHome(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"~", "/h"},
		{"~/a/b", "/h/a/b"},
		{"/abs", "/abs"},
		{"rel/~/x", "rel/~/x"},
		{"~user/x", "~user/x"},
	} {
		if got := ExpandHome(tt.in, "/h"); got != tt.want {
			t.Errorf("ExpandHome(%q, /h) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
