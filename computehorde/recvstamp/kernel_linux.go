//go:build linux

package recvstamp

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// kernelStamped turns on SO_TIMESTAMPNS for nc and returns a read function that takes each
// read's receive instant from the kernel: Linux stamps every packet as it comes in (in the
// softirq that receives it, whoever holds the cores), and TCP's recvmsg hands back, as an
// SCM_TIMESTAMPNS control message, the stamp of the last packet that read consumed. That is
// when the answer reached this machine, however long our reader then waited for a core; with
// minersim (or anything else) busy on the same cores, the instant our read returns can be
// milliseconds later. A read that takes in several packets gets the last one's stamp, so every
// frame of that read shares it, as every frame of a read shares the read's instant without it.
// Linux stamps packets machine-wide while any socket asks, turning stamping on from a work queue
// a moment after the first one does: a read of packets that came before is unstamped, and such
// a read is stamped when it returns.
//
// It returns nil, and the connection stamps reads with time.Now() as on other platforms, when
// nc is not a TCP connection or the kernel refuses the option. The reads go through
// syscall.RawConn, so the runtime's poller still parks the reader while the socket is empty,
// and deadlines and Close wake it as they wake a plain Read.
func kernelStamped(nc net.Conn) func([]byte) (int, time.Time, bool, error) {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return nil
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nil
	}
	var optErr error
	err = rc.Control(func(fd uintptr) {
		optErr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
	})
	if err != nil || optErr != nil {
		return nil
	}
	r := &kernelReader{conn: tc, rc: rc, opened: time.Now(), oob: make([]byte, unix.CmsgSpace(16))}
	r.recvFn = r.recvmsg // bound once: a method value made per read would allocate per read
	return r.read
}

// kernelReader reads one TCP socket with recvmsg. Only the connection's reader calls read, so
// the fields recvmsg fills need no lock.
type kernelReader struct {
	conn   *net.TCPConn
	rc     syscall.RawConn
	opened time.Time // no data of this connection arrived before it
	recvFn func(fd uintptr) bool

	oob     []byte
	p       []byte
	n, oobn int
	err     error
}

func (r *kernelReader) read(p []byte) (int, time.Time, bool, error) {
	if len(p) == 0 {
		return 0, time.Time{}, false, nil // recvmsg would read a byte into a dummy buffer
	}
	r.p = p
	rawErr := r.rc.Read(r.recvFn)
	now := time.Now()
	r.p = nil
	n, err := r.result(rawErr)
	if n == 0 {
		return 0, now, false, err
	}
	stamp, ok := receiveStamp(r.oob[:r.oobn])
	if !ok {
		return n, now, false, nil
	}
	return n, receivedAt(stamp, now, r.opened), true, nil
}

// recvmsg is called by RawConn.Read with the socket; returning false parks the reader until the
// socket is readable.
func (r *kernelReader) recvmsg(fd uintptr) bool {
	for {
		r.n, r.oobn, _, _, r.err = unix.Recvmsg(int(fd), r.p, r.oob, 0)
		if !errors.Is(r.err, unix.EINTR) {
			return !errors.Is(r.err, unix.EAGAIN)
		}
	}
}

// result gives the read's outcome as net.TCPConn.Read would: io.EOF at the end of the stream,
// other errors as a *net.OpError with Op "read", so the reader sees the same deadlines
// (os.ErrDeadlineExceeded), net.ErrClosed after Close, and messages as before.
func (r *kernelReader) result(rawErr error) (int, error) {
	switch {
	case rawErr != nil:
		return 0, r.readError(rawErr)
	case r.err != nil:
		return 0, r.readError(os.NewSyscallError("recvmsg", r.err))
	case r.n == 0:
		return 0, io.EOF
	}
	return r.n, nil
}

func (r *kernelReader) readError(err error) error {
	var op *net.OpError
	if errors.As(err, &op) {
		err = op.Err // RawConn.Read reports its errors as Op "raw-read"
	}
	local := r.conn.LocalAddr()
	return &net.OpError{Op: "read", Net: local.Network(), Source: local, Addr: r.conn.RemoteAddr(), Err: err}
}

// receiveStamp finds the SCM_TIMESTAMPNS message among the control messages of a recvmsg. The
// kernel leaves it out when no packet read carried a stamp (those that arrived before the
// kernel started stamping, for one).
func receiveStamp(oob []byte) (time.Time, bool) {
	for len(oob) >= unix.SizeofCmsghdr {
		h, data, rest, err := unix.ParseOneSocketControlMessage(oob)
		if err != nil {
			return time.Time{}, false
		}
		if h.Level == unix.SOL_SOCKET && h.Type == unix.SCM_TIMESTAMPNS {
			return timespec(data)
		}
		oob = rest
	}
	return time.Time{}, false
}

// timespec decodes a struct timespec of this platform: two longs, 64 or 32 bits.
func timespec(b []byte) (time.Time, bool) {
	switch len(b) {
	case 16:
		return time.Unix(int64(binary.NativeEndian.Uint64(b)), int64(binary.NativeEndian.Uint64(b[8:]))), true
	case 8:
		return time.Unix(int64(int32(binary.NativeEndian.Uint32(b))), int64(int32(binary.NativeEndian.Uint32(b[4:])))), true
	}
	return time.Time{}, false
}

// receivedAt places the kernel's stamp on the clock the rest of the batch uses. The stamp is
// CLOCK_REALTIME, a wall-clock reading with no monotonic one, while the send instants it is
// subtracted from come from time.Now() and carry Go's monotonic reading; Go's Sub falls back to
// the wall clocks when either side lacks a monotonic reading, so an NTP step anywhere between
// the send and the answer would go straight into time_took. Instead the stamp becomes an offset
// back from now, taken right after the recvmsg: now minus (now's wall − stamp) reads the
// stamp's wall-clock time and carries now's monotonic reading moved back by the same amount, so
// durations against the send instants are monotonic except for the microseconds between the
// packet's arrival and our read. A stamp after now (the wall clock was stepped back in between)
// is taken as now; one before opened (stepped forward), as opened: no data of this connection
// arrived before the connection existed.
func receivedAt(stamp, now, opened time.Time) time.Time {
	lag := now.Sub(stamp) // stamp has no monotonic reading: wall clock against wall clock
	if lag <= 0 {
		return now
	}
	at := now.Add(-lag)
	if at.Before(opened) {
		return opened
	}
	return at
}
