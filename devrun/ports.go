package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// portTakenError says that an address one of devrun's processes needs is taken, and by which
// process when /proc tells: most often a fleet that an interrupted make run or go test left
// behind, which the user must stop before make run can start.
type portTakenError struct {
	owner  string      // the process devrun would start on addr
	addr   string      // host:port
	holder *portHolder // nil when the holder could not be found
}

func (e *portTakenError) Error() string {
	_, port, _ := net.SplitHostPort(e.addr)
	if e.holder == nil {
		return fmt.Sprintf("%s cannot listen on %s: port %s is held by another process; run `ss -ltnp 'sport = :%s'` to see which",
			e.owner, e.addr, port, port)
	}
	return fmt.Sprintf("%s cannot listen on %s: port %s is held by pid %d (%s); stop it and run again",
		e.owner, e.addr, port, e.holder.pid, e.holder.cmdline)
}

// checkPort listens on addr and closes it at once. When addr is taken, it returns a
// *portTakenError naming the holder.
func checkPort(ctx context.Context, owner, addr string) error {
	ln, err := new(net.ListenConfig).Listen(ctx, "tcp", addr)
	if err == nil {
		return ln.Close()
	}
	if !errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("%s cannot listen on %s: %w", owner, addr, err)
	}
	taken := &portTakenError{owner: owner, addr: addr}
	if h, ok := listenerOf(addr); ok {
		taken.holder = &h
	}
	return taken
}

// portHolder is a process with a listening socket.
type portHolder struct {
	pid     int
	cmdline string
}

// listenerOf finds the process listening on addr (host:port) from /proc: the inode of the
// listening socket in /proc/net/tcp or tcp6, then the process with a descriptor linked to that
// socket. It reports false when it finds none: nothing listens, there is no /proc (not Linux),
// or the holder is another user's process, whose descriptors only root may read.
func listenerOf(addr string) (portHolder, bool) {
	want, err := netip.ParseAddrPort(addr)
	if err != nil {
		return portHolder{}, false
	}
	inodes := map[string]bool{}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(table)
		if err != nil {
			continue
		}
		for inode := range listeningInodes(b, want) {
			inodes[inode] = true
		}
	}
	if len(inodes) == 0 {
		return portHolder{}, false
	}
	return socketOwner(inodes)
}

// tcpListen is the LISTEN state in /proc/net/tcp's st column.
const tcpListen = "0A"

// listeningInodes returns the inodes of the sockets in table (the text of /proc/net/tcp or tcp6)
// that listen on want's port at an address that collides with want's.
func listeningInodes(table []byte, want netip.AddrPort) map[string]bool {
	out := map[string]bool{}
	for line := range bytes.Lines(table) {
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
		f := strings.Fields(string(line))
		if len(f) < 10 || f[3] != tcpListen {
			continue
		}
		hexIP, hexPort, ok := strings.Cut(f[1], ":")
		if !ok {
			continue
		}
		port, err := strconv.ParseUint(hexPort, 16, 16)
		if err != nil || uint16(port) != want.Port() {
			continue
		}
		ip, ok := procIP(hexIP)
		if ok && (ip == want.Addr().Unmap() || ip.IsUnspecified() || want.Addr().IsUnspecified()) {
			out[f[9]] = true
		}
	}
	return out
}

// procIP decodes an address as /proc/net/tcp prints it: hex, each 32-bit word in host byte
// order (little-endian on the machines Drover runs on).
func procIP(s string) (netip.Addr, bool) {
	b, err := hex.DecodeString(s)
	if err != nil || (len(b) != 4 && len(b) != 16) {
		return netip.Addr{}, false
	}
	for w := 0; w < len(b); w += 4 {
		b[w], b[w+1], b[w+2], b[w+3] = b[w+3], b[w+2], b[w+1], b[w]
	}
	ip, _ := netip.AddrFromSlice(b)
	return ip.Unmap(), true
}

// socketOwner finds a process with a descriptor linked to one of the socket inodes.
func socketOwner(inodes map[string]bool) (portHolder, bool) {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return portHolder{}, false
	}
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		if err != nil {
			continue // gone, or another user's
		}
		for _, fd := range fds {
			link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
			inode, ok := strings.CutPrefix(link, "socket:[")
			if err == nil && ok && inodes[strings.TrimSuffix(inode, "]")] {
				return portHolder{pid: pid, cmdline: cmdline(pid)}, true
			}
		}
	}
	return portHolder{}, false
}

// maxCmdline bounds the command line an error shows: minersim's runs to many flags.
const maxCmdline = 200

// cmdline returns process pid's command line, its arguments separated by spaces.
func cmdline(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(bytes.Trim(b, "\x00")) == 0 {
		return "command line unknown"
	}
	s := strings.ReplaceAll(string(bytes.TrimRight(b, "\x00")), "\x00", " ")
	if r := []rune(s); len(r) > maxCmdline {
		s = string(r[:maxCmdline]) + "…"
	}
	return s
}
