package peercred

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// Listener returns the uid that owns the TCP socket listening on addr's port, at addr's
// address or at every address (0.0.0.0, ::): who holds a port that a listen found taken.
// It reads the kernel's socket tables (/proc/net/tcp and tcp6); [ErrUnavailable] where
// they do not exist.
func Listener(addr *net.TCPAddr) (int, error) {
	found, wildcard := -1, -1
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			if table == "/proc/net/tcp" {
				return 0, fmt.Errorf("%w: %w", ErrUnavailable, err)
			}
			continue // no IPv6 here
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid …
			fields := strings.Fields(sc.Text())
			if len(fields) < 8 || fields[3] != "0A" { // TCP_LISTEN
				continue
			}
			ip, port, ok := parseHexAddr(fields[1])
			uid, err := strconv.Atoi(fields[7])
			if !ok || port != addr.Port || err != nil {
				continue
			}
			switch {
			case ip.Equal(addr.IP):
				found = uid
			case ip.IsUnspecified():
				wildcard = uid
			}
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return 0, fmt.Errorf("read %s: %w", table, err)
		}
	}
	switch {
	case found >= 0:
		return found, nil
	case wildcard >= 0:
		return wildcard, nil
	}
	return 0, fmt.Errorf("no socket listens on %s in /proc/net/tcp or tcp6", addr)
}

// parseHexAddr reads an address as /proc/net/tcp and tcp6 write it: the address in
// 32-bit little-endian words, a colon, the port, all in hex (see [hexAddr4], [hexAddr6]).
func parseHexAddr(s string) (net.IP, int, bool) {
	a, p, ok := strings.Cut(s, ":")
	b, err := hex.DecodeString(a)
	port, perr := strconv.ParseUint(p, 16, 16)
	if !ok || err != nil || perr != nil || len(b) != 4 && len(b) != 16 {
		return nil, 0, false
	}
	ip := make(net.IP, len(b))
	for w := 0; w < len(b); w += 4 {
		for i := 0; i < 4; i++ {
			ip[w+i] = b[w+3-i]
		}
	}
	return ip, int(port), true
}
