//go:build linux

package shim

import (
	"errors"
	"fmt"
	"io"
	"syscall"
	"unsafe"
)

// MaxMessage bounds one datagram of the job server's protocol: a start
// carries the harness's argv and environment, which exec itself caps at a
// quarter of the stack limit (2 MiB by default), JSON-escaped.
const MaxMessage = 16 << 20

// errTooLarge is a datagram over MaxMessage, or one with more descriptors
// than MaxFDs; it was consumed and dropped.
var errTooLarge = errors.New("message too large")

// recvMsg reads one datagram and the descriptors it carries (close-on-exec)
// from the blocking SOCK_SEQPACKET socket fd. io.EOF means the peer is gone.
func recvMsg(fd int) ([]byte, []int, error) {
	var peek [1]byte
	for {
		// MSG_TRUNC with MSG_PEEK returns the datagram's whole length.
		n, _, _, _, err := syscall.Recvmsg(fd, peek[:], nil, syscall.MSG_PEEK|syscall.MSG_TRUNC)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		if n == 0 {
			// The end, or an empty datagram: consume it (the end stays)
			// and ask whether the peer hung up.
			oob := make([]byte, syscall.CmsgSpace(4*MaxFDs))
			_, oobn, _, _, err := syscall.Recvmsg(fd, peek[:], oob, syscall.MSG_CMSG_CLOEXEC)
			if fds, _ := parseRights(oob[:oobn]); len(fds) > 0 {
				closeFDs(fds)
			}
			if err == syscall.EINTR {
				continue
			}
			if err != nil {
				return nil, nil, err
			}
			if hungUp(fd) {
				return nil, nil, io.EOF
			}
			return []byte{}, nil, nil
		}
		size := min(n, MaxMessage)
		buf := make([]byte, size)
		oob := make([]byte, syscall.CmsgSpace(4*MaxFDs))
		var flags, oobn int
		for {
			n, oobn, flags, _, err = syscall.Recvmsg(fd, buf, oob, syscall.MSG_CMSG_CLOEXEC)
			if err != syscall.EINTR {
				break
			}
		}
		if err != nil {
			return nil, nil, err
		}
		fds, ferr := parseRights(oob[:oobn])
		if flags&(syscall.MSG_TRUNC|syscall.MSG_CTRUNC) != 0 {
			closeFDs(fds)
			return nil, nil, errTooLarge
		}
		if ferr != nil {
			closeFDs(fds)
			return nil, nil, ferr
		}
		return buf[:n], fds, nil
	}
}

// hungUp reports whether the peer of socket fd has closed its end.
func hungUp(fd int) bool {
	pfd := struct {
		fd             int32
		events, revent int16
	}{fd: int32(fd), events: pollRdHup}
	var zero syscall.Timespec
	for {
		n, _, e := syscall.Syscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(&pfd)), 1, uintptr(unsafe.Pointer(&zero)), 0, 0, 0)
		if e == syscall.EINTR {
			continue
		}
		return e != 0 || n == 1 && pfd.revent&(pollRdHup|pollHup|pollErr|pollNval) != 0
	}
}

// poll(2) events.
const (
	pollErr   = 0x8
	pollHup   = 0x10
	pollNval  = 0x20
	pollRdHup = 0x2000
)

// parseRights returns the descriptors of the SCM_RIGHTS messages in oob.
func parseRights(oob []byte) ([]int, error) {
	if len(oob) == 0 {
		return nil, nil
	}
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, fmt.Errorf("parsing control messages: %w", err)
	}
	var fds []int
	for _, m := range msgs {
		if m.Header.Level != syscall.SOL_SOCKET || m.Header.Type != syscall.SCM_RIGHTS {
			continue
		}
		got, err := syscall.ParseUnixRights(&m)
		if err != nil {
			return fds, fmt.Errorf("parsing descriptors: %w", err)
		}
		fds = append(fds, got...)
	}
	return fds, nil
}

// closeFDs closes every descriptor of fds.
func closeFDs(fds []int) {
	for _, fd := range fds {
		_ = syscall.Close(fd)
	}
}

// sendMsg writes b as one datagram on fd (no SIGPIPE when the peer is gone).
func sendMsg(fd int, b []byte) error {
	for {
		err := syscall.Sendmsg(fd, b, nil, nil, syscall.MSG_NOSIGNAL)
		if err != syscall.EINTR {
			return err
		}
	}
}

// socketType returns the SO_TYPE of fd, or -1 when fd is not a socket.
func socketType(fd int) int {
	t, err := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_TYPE)
	if err != nil {
		return -1
	}
	return t
}
