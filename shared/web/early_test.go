package web

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRewriteEarlyErrorLeavesOtherWritesAlone(t *testing.T) {
	t.Parallel()

	tests := map[string]string{
		"HandlerPlainText400": "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nDate: Sat, 28 Nov 2026 14:00:00 GMT\r\n\r\nno",
		"SwitchingProtocols":  "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
		"BodyAlone":           "HTTP/1.1 400 Bad Request: invalid header value" + earlyErrorHeaders[2:],
		"WebsocketFrame":      "\x81\x05hello",
		"Short":               "HTTP/1.1 4",
	}
	for name, p := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, ok := rewriteEarlyError([]byte(p))
			require.False(t, ok)
		})
	}
}

func TestRewriteEarlyError(t *testing.T) {
	t.Parallel()
	got, ok := rewriteEarlyError([]byte("HTTP/1.1 400 Bad Request: invalid header value" + earlyErrorHeaders + "400 Bad Request: invalid header value"))
	require.True(t, ok)
	require.Equal(t, "HTTP/1.1 400 Bad Request\r\nContent-Type: application/problem+json\r\nConnection: close\r\n"+
		"Content-Length: 130\r\n\r\n"+
		`{"type":"https://drover.dev/problems/invalid","title":"Bad Request","status":400,"detail":"400 Bad Request: invalid header value"}`,
		string(got))
}
