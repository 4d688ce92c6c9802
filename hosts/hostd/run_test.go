package hostd

import (
	"slices"
	"testing"
)

func TestHostEnv(t *testing.T) {
	in := []string{"PATH=/bin", "SSH_CLIENT=1.2.3.4 5 22", "SSH2_CLIENT=x", "SSH_CONNECTION=1 2 3 4", "SSH_TTY=/dev/pts/1", "SSH_AUTH_SOCK=/tmp/a", "HOME=/h"}
	got := hostEnv(in)
	if want := []string{"PATH=/bin", "SSH_AUTH_SOCK=/tmp/a", "HOME=/h"}; !slices.Equal(got, want) {
		t.Errorf("hostEnv = %q, want %q", got, want)
	}
	if len(in) != 7 || in[1] != "SSH_CLIENT=1.2.3.4 5 22" {
		t.Errorf("hostEnv changed its input: %q", in)
	}
}
