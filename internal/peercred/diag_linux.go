package peercred

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// diagSock asks the kernel (NETLINK_SOCK_DIAG) about the TCP socket at local connected to
// remote: one exact lookup, where reading /proc/net/tcp walks every socket of the machine
// (milliseconds on a busy one).
func diagSock(local, remote *net.TCPAddr) (Sock, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return Sock{}, err
	}
	defer unix.Close(fd)
	family, src, dst := uint8(unix.AF_INET), local.IP.To4(), remote.IP.To4()
	if src == nil || dst == nil {
		family, src, dst = unix.AF_INET6, local.IP.To16(), remote.IP.To16()
	}
	// nlmsghdr (16) + inet_diag_req_v2 (56)
	req := make([]byte, 16+56)
	binary.NativeEndian.PutUint32(req[0:], uint32(len(req)))
	binary.NativeEndian.PutUint16(req[4:], 20) // SOCK_DIAG_BY_FAMILY
	binary.NativeEndian.PutUint16(req[6:], unix.NLM_F_REQUEST)
	binary.NativeEndian.PutUint32(req[8:], 1)
	r := req[16:]
	r[0], r[1] = family, unix.IPPROTO_TCP
	binary.NativeEndian.PutUint32(r[4:], 0xffffffff) // every state
	id := r[8:]
	binary.BigEndian.PutUint16(id[0:], uint16(local.Port))
	binary.BigEndian.PutUint16(id[2:], uint16(remote.Port))
	copy(id[4:20], src)
	copy(id[20:36], dst)
	binary.NativeEndian.PutUint32(id[40:], 0xffffffff) // INET_DIAG_NOCOOKIE
	binary.NativeEndian.PutUint32(id[44:], 0xffffffff)
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return Sock{}, err
	}
	buf := make([]byte, 8192)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return Sock{}, err
	}
	msgs, err := syscall.ParseNetlinkMessage(buf[:n])
	if err != nil {
		return Sock{}, err
	}
	for _, m := range msgs {
		switch m.Header.Type {
		case unix.NLMSG_ERROR:
			if len(m.Data) >= 4 {
				if e := int32(binary.NativeEndian.Uint32(m.Data)); e != 0 {
					return Sock{}, fmt.Errorf("sock_diag: %w", unix.Errno(-e))
				}
			}
			return Sock{}, errors.New("sock_diag: an error without a code")
		case 20:
			// inet_diag_msg: family, state, timer, retrans (4), id (48), expires,
			// rqueue, wqueue (12), uid (4), inode (4)
			if len(m.Data) < 72 {
				return Sock{}, errors.New("sock_diag: a short answer")
			}
			return Sock{
				UID:    int(binary.NativeEndian.Uint32(m.Data[64:])),
				Unread: int(binary.NativeEndian.Uint32(m.Data[56:])),
			}, nil
		}
	}
	return Sock{}, os.ErrNotExist
}
