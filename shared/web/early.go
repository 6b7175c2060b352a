package web

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"strconv"

	"drover.dev/shared/problem"
)

// net/http's server answers some malformed requests itself, before any handler runs: a header
// value holding a control byte (a NUL in Authorization), a malformed header name or Host, headers
// past the size limit, an unsupported transfer encoding. It writes those answers as plain text
// straight to the connection, with no hook to change them (an ErrorLog sees nothing). So every
// connection the server accepts is wrapped, and an answer of exactly that form, which no handler
// can produce (it has no Date header and its status line carries the reason), is rewritten as
// problem+json before it leaves.

// earlyErrorHeaders is what net/http writes between the status line and the body of such an
// answer.
const earlyErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// problemListener wraps every connection it accepts in a problemConn.
type problemListener struct{ net.Listener }

func (l problemListener) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &problemConn{Conn: conn}, nil
}

// problemConn rewrites net/http's own plain-text error answers as problem+json.
type problemConn struct{ net.Conn }

func (c *problemConn) Write(p []byte) (int, error) {
	rewritten, ok := rewriteEarlyError(p)
	if !ok {
		return c.Conn.Write(p)
	}
	if _, err := c.Conn.Write(rewritten); err != nil {
		return 0, err
	}
	return len(p), nil
}

// CloseWrite lets net/http half-close the connection after an error answer, as it does with a
// bare TCP connection.
func (c *problemConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// rewriteEarlyError turns p, when it is one of net/http's own error answers, into the same answer
// as problem+json.
func rewriteEarlyError(p []byte) ([]byte, bool) {
	const proto = "HTTP/1.1 "
	if !bytes.HasPrefix(p, []byte(proto)) || len(p) < len(proto)+3 {
		return nil, false
	}
	// The status line, then exactly those headers: a handler's answer always has a Date.
	end := bytes.Index(p[:min(len(p), 512)], []byte("\r\n"))
	if end < 0 || !bytes.HasPrefix(p[end:], []byte(earlyErrorHeaders)) {
		return nil, false
	}
	status, err := strconv.Atoi(string(p[len(proto) : len(proto)+3]))
	if err != nil || status < 400 {
		return nil, false
	}
	code, ok := codeOfStatus[status]
	switch {
	case status == http.StatusRequestHeaderFieldsTooLarge:
		code = problem.TooLarge
	case !ok:
		code = problem.Invalid // all of them are the client's doing, 501 for a transfer coding too
	}
	body, err := json.Marshal(Problem{
		Type:   problemTypeBase + string(code),
		Title:  http.StatusText(status),
		Status: status,
		Detail: string(p[end+len(earlyErrorHeaders):]),
	})
	if err != nil {
		return nil, false
	}
	var b bytes.Buffer
	b.WriteString(proto + strconv.Itoa(status) + " " + http.StatusText(status) + "\r\n")
	b.WriteString("Content-Type: application/problem+json\r\nConnection: close\r\n")
	b.WriteString("Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n")
	b.Write(body)
	return b.Bytes(), true
}
