package minersim

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"

	"drover.dev/computehorde/protocol"
)

// toJob authenticates, offers a job and waits for its executor to be ready.
func (v *validator) toJob() testJob {
	v.t.Helper()
	v.auth()
	expect[*protocol.V0ExecutorManifestRequest](v)
	j := v.newJob(testClass)
	v.sendInitial(j)
	expect[*protocol.V0AcceptJobRequest](v)
	v.sendAcceptedReceipt(j)
	expect[*protocol.V0ExecutorReadyRequest](v)
	return j
}

// readAnswer skips the progress messages and returns the final answer.
func (v *validator) readAnswer() protocol.Message {
	v.t.Helper()
	for {
		switch msg := v.read().(type) {
		case *protocol.V0VolumesReadyRequest, *protocol.V0ExecutionDoneRequest, *protocol.V0MachineSpecsRequest:
		default:
			return msg
		}
	}
}

// TestFleetBehaviours runs one miner per scripted behaviour and checks, from the validator's
// side, that the miner does what the behaviour promises.
func TestFleetBehaviours(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name  string
		b     Behaviour
		drive func(t *testing.T, v *validator)
	}{
		{"silent manifest", Behaviour{Silent: StageManifest}, func(t *testing.T, v *validator) {
			v.auth()
			v.requireSilence(200 * time.Millisecond)
		}},
		{"silent accept", Behaviour{Silent: StageAccept}, func(t *testing.T, v *validator) {
			v.auth()
			expect[*protocol.V0ExecutorManifestRequest](v)
			v.sendInitial(v.newJob(testClass))
			v.requireSilence(200 * time.Millisecond)
		}},
		{"silent ready", Behaviour{Silent: StageReady}, func(t *testing.T, v *validator) {
			v.auth()
			expect[*protocol.V0ExecutorManifestRequest](v)
			v.sendInitial(v.newJob(testClass))
			expect[*protocol.V0AcceptJobRequest](v)
			v.requireSilence(200 * time.Millisecond)
		}},
		{"silent answer", Behaviour{Silent: StageAnswer}, func(t *testing.T, v *validator) {
			v.sendJobRequest(v.toJob())
			v.requireSilence(200 * time.Millisecond)
		}},
		{"wrong answer", Behaviour{Answer: AnswerWrong}, func(t *testing.T, v *validator) {
			j := v.toJob()
			v.sendJobRequest(j)
			got := v.readAnswer().(*protocol.V0JobFinishedRequest)
			require.False(t, j.job.Verify(got.DockerProcessStdout))
		}},
		{"fail", Behaviour{Answer: AnswerFail}, func(t *testing.T, v *validator) {
			j := v.toJob()
			v.sendJobRequest(j)
			got := v.readAnswer().(*protocol.V0JobFailedRequest)
			require.Equal(t, protocol.FailureNonzeroReturnCode, got.Reason)
		}},
		{"horde failed", Behaviour{Answer: AnswerHordeFailed}, func(t *testing.T, v *validator) {
			v.auth()
			expect[*protocol.V0ExecutorManifestRequest](v)
			v.sendInitial(v.newJob(testClass))
			expect[*protocol.V0AcceptJobRequest](v)
			got := expect[*protocol.V0HordeFailedRequest](v)
			require.Equal(t, protocol.HordeExecutorSpinupFailed, got.Reason)
			require.Equal(t, protocol.ParticipantMiner, got.ReportedBy)
		}},
		{"scripted", Behaviour{Answer: AnswerScripted, Stdout: "42\n"}, func(t *testing.T, v *validator) {
			v.sendJobRequest(v.toJob())
			require.Equal(t, "42\n", v.readAnswer().(*protocol.V0JobFinishedRequest).DockerProcessStdout)
		}},
		{"non-pow job fails", Behaviour{}, func(t *testing.T, v *validator) {
			j := v.toJob()
			j.job.Request.RawScript = "print('hashcat')"
			v.sendJobRequest(j)
			expect[*protocol.V0JobFailedRequest](v)
		}},
		{"non-pow job scripted", Behaviour{NonPoW: AnswerScripted, Stdout: "abc"}, func(t *testing.T, v *validator) {
			j := v.toJob()
			j.job.Request.RawScript = "print('hashcat')"
			v.sendJobRequest(j)
			require.Equal(t, "abc", v.readAnswer().(*protocol.V0JobFinishedRequest).DockerProcessStdout)
		}},
		{"late answer", Behaviour{AnswerDelay: Duration(300 * time.Millisecond)}, func(t *testing.T, v *validator) {
			j := v.toJob()
			sent := time.Now()
			v.sendJobRequest(j)
			got := v.readAnswer().(*protocol.V0JobFinishedRequest)
			require.GreaterOrEqual(t, time.Since(sent), 300*time.Millisecond)
			require.True(t, j.job.Verify(got.DockerProcessStdout))
		}},
		{"disconnect mid-job", Behaviour{Disconnect: StageAnswer}, func(t *testing.T, v *validator) {
			v.sendJobRequest(v.toJob())
			v.requireClosed()
		}},
		{"malformed before accept", Behaviour{Malformed: StageAccept}, func(t *testing.T, v *validator) {
			v.auth()
			expect[*protocol.V0ExecutorManifestRequest](v)
			v.sendInitial(v.newJob(testClass))
			data, err := v.readFrame(5 * time.Second)
			require.NoError(t, err)
			_, err = protocol.DecodeFromMiner(data)
			var de *protocol.DecodeError
			require.ErrorAs(t, err, &de)
			require.Equal(t, protocol.KindMalformedJSON, de.Kind)
			expect[*protocol.V0AcceptJobRequest](v)
		}},
		{"oversize before manifest", Behaviour{Oversize: StageManifest}, func(t *testing.T, v *validator) {
			v.auth()
			data, err := v.readFrame(5 * time.Second)
			require.NoError(t, err)
			require.Len(t, data, testOversize)
			_, err = protocol.Decoder{MaxFrameSize: testOversize - 1}.DecodeFromMiner(data)
			var de *protocol.DecodeError
			require.ErrorAs(t, err, &de)
			require.Equal(t, protocol.KindFrameTooLarge, de.Kind)
			expect[*protocol.V0ExecutorManifestRequest](v)
		}},
		{"unknown job before ready", Behaviour{UnknownJob: StageReady}, func(t *testing.T, v *validator) {
			v.auth()
			expect[*protocol.V0ExecutorManifestRequest](v)
			j := v.newJob(testClass)
			v.sendInitial(j)
			expect[*protocol.V0AcceptJobRequest](v)
			require.NotEqual(t, j.uuid, expect[*protocol.V0ExecutorReadyRequest](v).JobUUID)
			require.Equal(t, j.uuid, expect[*protocol.V0ExecutorReadyRequest](v).JobUUID)
		}},
		{"duplicate answer", Behaviour{Duplicate: StageAnswer}, func(t *testing.T, v *validator) {
			j := v.toJob()
			v.sendJobRequest(j)
			require.Equal(t, j.uuid, v.readAnswer().(*protocol.V0JobFinishedRequest).JobUUID)
			require.Equal(t, j.uuid, expect[*protocol.V0JobFinishedRequest](v).JobUUID)
		}},
		{"slowloris manifest", Behaviour{Slowloris: StageManifest, DribbleEvery: Duration(2 * time.Millisecond)}, func(t *testing.T, v *validator) {
			start := time.Now()
			v.auth()
			expect[*protocol.V0ExecutorManifestRequest](v)
			// The manifest frame is about 60 bytes, so dribbling takes over 100 ms.
			require.Greater(t, time.Since(start), 100*time.Millisecond)
		}},
		{"stop reading", Behaviour{StopReading: StageManifest}, func(t *testing.T, v *validator) {
			v.auth()
			expect[*protocol.V0ExecutorManifestRequest](v)
			requireWritesBlock(t, v.ws)
		}},
	}

	scenario := Scenario{Miners: map[int]Behaviour{}}
	for i, tt := range tests {
		require.NoError(t, tt.b.Validate(), tt.name)
		scenario.Miners[i] = tt.b
	}
	f := startFleet(t, Config{Miners: len(tests), Scenario: scenario, OversizeBytes: testOversize})
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			v := dialSmallBuffer(t, f.Miners()[i])
			tt.drive(t, v)
		})
	}
}

const testOversize = 64 << 10

// dialSmallBuffer connects as //Alice with a small send buffer, so that a miner that stops
// reading blocks the test's writes quickly.
func dialSmallBuffer(t *testing.T, miner MinerInfo) *validator {
	t.Helper()
	d := websocket.Dialer{NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetWriteBuffer(4096)
		}
		return c, err
	}}
	key := aliceKey(t)
	ws, resp, err := d.Dial(miner.URL(key.Address()), nil)
	closeBody(resp)
	require.NoError(t, err)
	t.Cleanup(func() { ws.Close() })
	return &validator{t: t, key: key, ws: ws, miner: miner}
}

// requireWritesBlock writes 64 KiB frames until one times out, which must happen well before
// 64 MiB have been written.
func requireWritesBlock(t *testing.T, ws *websocket.Conn) {
	t.Helper()
	frame := oversizeFrame(64 << 10)
	for range 1024 {
		require.NoError(t, ws.SetWriteDeadline(time.Now().Add(300*time.Millisecond)))
		if err := ws.WriteMessage(websocket.TextMessage, frame); err != nil {
			var ne net.Error
			require.True(t, errors.As(err, &ne) && ne.Timeout(), "write ended with %v", err)
			return
		}
	}
	t.Fatal("64 MiB written to a miner that stopped reading")
}
