package cli

import (
	"flag"
	"io"
	"testing"
)

func TestDidYouMean(t *testing.T) {
	fs := flag.NewFlagSet("myco", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.String("profile", "", "")
	fs.String("model", "", "")
	for _, tt := range []struct{ arg, want string }{
		{"--profil", "; did you mean --profile?"},
		{"--modle", "; did you mean --model?"},
		{"--zzzzzz", ""},
	} {
		err := fs.Parse([]string{tt.arg})
		if got := DidYouMean(fs, err); got != tt.want {
			t.Errorf("DidYouMean(%s) = %q, want %q", tt.arg, got, tt.want)
		}
	}
}
