package engine

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"myco.dev/config"
	"myco.dev/internal/peercred"
)

// PortTaken says what to do when the port of addr is taken, in a sentence a newcomer
// can follow; the technical error follows it. A port that another user holds is named
// with that user: the owner's browser and port-forward would reach their server.
func PortTaken(addr string) string {
	host, port, _ := net.SplitHostPort(addr)
	if uid, err := portHolder(host, port); err == nil && uid != os.Getuid() {
		holder := config.Who(uid)
		if !strings.HasPrefix(holder, "uid ") {
			holder = "user " + holder
		}
		return fmt.Sprintf("port %s on %s is held by %s, another user of this machine: your browser and your port-forward "+
			"(ssh -L %s:%s) would reach their server, not yours. Start myco on a port of your own with --addr %s "+
			"(or set MYCO_ADDR=%s) and forward that one, or on any free port with --addr %s.",
			port, host, holder, port, net.JoinHostPort(host, port), net.JoinHostPort(host, "PORT"), net.JoinHostPort(host, "PORT"),
			net.JoinHostPort(host, "0"))
	}
	return fmt.Sprintf("port %s is already in use on %s, by another program or another myco. "+
		"Start myco on any free port with --addr %s, or on one you choose with --addr %s "+
		"(or set MYCO_ADDR=%s, which make demo reads too).",
		port, host, net.JoinHostPort(host, "0"), net.JoinHostPort(host, "PORT"), net.JoinHostPort(host, "PORT"))
}

// portHolder returns the uid that listens on port of host, a loopback address or
// localhost, where the system tells it.
func portHolder(host, port string) (int, error) {
	ip := net.ParseIP(host)
	if ip == nil {
		ip = net.IPv4(127, 0, 0, 1) // localhost, as net.Listen resolves it first
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		return 0, err
	}
	return peercred.Listener(&net.TCPAddr{IP: ip, Port: n})
}
