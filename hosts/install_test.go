package hosts

import "testing"

func TestUnamePlatform(t *testing.T) {
	for _, tt := range []struct {
		in, goos, goarch string
		ok               bool
	}{
		{"Linux x86_64", "linux", "amd64", true},
		{"Linux aarch64\n", "linux", "arm64", true},
		{"Darwin arm64", "darwin", "arm64", true},
		{"FreeBSD amd64", "freebsd", "amd64", true},
		{"Linux armv7l", "linux", "arm", true},
		{"SunOS i86pc", "", "", false},
		{"Linux", "", "", false},
		{"", "", "", false},
	} {
		goos, goarch, ok := unamePlatform(tt.in)
		if goos != tt.goos || goarch != tt.goarch || ok != tt.ok {
			t.Errorf("unamePlatform(%q) = %q, %q, %v, want %q, %q, %v", tt.in, goos, goarch, ok, tt.goos, tt.goarch, tt.ok)
		}
	}
}
