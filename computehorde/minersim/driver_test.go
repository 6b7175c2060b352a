package minersim

import (
	"crypto/rand"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"

	"drover.dev/computehorde/hotkey"
	"drover.dev/computehorde/protocol"
	"drover.dev/computehorde/receipts"
	"drover.dev/computehorde/synthetic"
)

// validator is the minimal validator side the tests drive a simulated miner with: it signs
// what a real validator signs and decodes what the miner sends with the protocol decoder.
type validator struct {
	t     testing.TB
	key   *hotkey.Keypair
	ws    *websocket.Conn
	miner MinerInfo
}

func aliceKey(t testing.TB) *hotkey.Keypair {
	t.Helper()
	key, err := hotkey.FromURI("//Alice")
	require.NoError(t, err)
	return key
}

// dialMiner connects to a miner as key, naming urlKey in the URL.
func dialMiner(t testing.TB, miner MinerInfo, key *hotkey.Keypair, urlKey string) *validator {
	t.Helper()
	ws, resp, err := websocket.DefaultDialer.Dial(miner.URL(urlKey), nil)
	closeBody(resp)
	require.NoError(t, err)
	t.Cleanup(func() { ws.Close() })
	return &validator{t: t, key: key, ws: ws, miner: miner}
}

func (v *validator) send(msg protocol.Message) {
	v.t.Helper()
	data, err := protocol.Encode(msg)
	require.NoError(v.t, err)
	v.sendRaw(data)
}

func (v *validator) sendRaw(data []byte) {
	v.t.Helper()
	require.NoError(v.t, v.ws.SetWriteDeadline(time.Now().Add(5*time.Second)))
	require.NoError(v.t, v.ws.WriteMessage(websocket.TextMessage, data))
}

func (v *validator) auth() {
	v.t.Helper()
	v.send(protocol.NewValidatorAuth(v.key, v.miner.Hotkey, time.Now()))
}

// readFrame returns the next frame, or the read error after at most wait.
func (v *validator) readFrame(wait time.Duration) ([]byte, error) {
	require.NoError(v.t, v.ws.SetReadDeadline(time.Now().Add(wait)))
	_, data, err := v.ws.ReadMessage()
	return data, err
}

// read returns the next message, which must decode.
func (v *validator) read() protocol.Message {
	v.t.Helper()
	data, err := v.readFrame(5 * time.Second)
	require.NoError(v.t, err)
	msg, err := protocol.DecodeFromMiner(data)
	require.NoError(v.t, err, "frame %s", data)
	return msg
}

// expect reads the next message and requires its type.
func expect[M protocol.Message](v *validator) M {
	v.t.Helper()
	msg := v.read()
	m, ok := msg.(M)
	require.True(v.t, ok, "got %s %+v", msg.MessageType(), msg)
	return m
}

// closeBody closes a handshake response's body; after an upgrade it is empty.
func closeBody(resp *http.Response) {
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
}

// requireSilence requires that nothing arrives for d and the connection stays open. A timed
// out read ends a gorilla connection, so this is a test's last read.
func (v *validator) requireSilence(d time.Duration) {
	v.t.Helper()
	data, err := v.readFrame(d)
	var ne net.Error
	require.True(v.t, errors.As(err, &ne) && ne.Timeout(), "want silence, got frame %q err %v", data, err)
}

// requireClosed requires the miner to close the connection within 5 s, skipping frames.
func (v *validator) requireClosed() {
	v.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := v.readFrame(time.Until(deadline))
		if err == nil {
			continue
		}
		var ne net.Error
		require.False(v.t, errors.As(err, &ne) && ne.Timeout(), "miner did not close the connection")
		return
	}
}

// testJob is a proof-of-work job and the messages that offer it.
type testJob struct {
	uuid    string
	job     synthetic.Job
	started receipts.JobStarted
}

func (v *validator) newJob(class string) testJob {
	v.t.Helper()
	job, err := synthetic.PoWGenerator{}.Generate(v.miner.Hotkey, class, rand.Reader)
	require.NoError(v.t, err)
	uuid := newUUID()
	return testJob{uuid: uuid, job: job, started: receipts.JobStarted{
		Header: receipts.Header{
			JobUUID: uuid, MinerHotkey: v.miner.Hotkey, ValidatorHotkey: v.key.Address(),
			Timestamp: time.Now().UTC(),
		},
		ExecutorClass: class, TTL: receipts.StartedTTL(3*time.Second, job.TimeLimit),
	}}
}

func (v *validator) sendInitial(j testJob) {
	v.t.Helper()
	image, timeout := j.job.Initial.DockerImage, int(j.job.TimeLimit.Seconds())
	v.send(&protocol.V0InitialJobRequest{
		JobUUID: j.uuid, ExecutorClass: j.job.ExecutorClass, DockerImage: &image, TimeoutSeconds: &timeout,
		JobStartedReceiptPayload: j.started, JobStartedReceiptSignature: receipts.Sign(&j.started, v.key),
	})
}

func (v *validator) sendAcceptedReceipt(j testJob) {
	v.t.Helper()
	now := time.Now().UTC()
	p := receipts.JobAccepted{Header: j.started.Header, TimeAccepted: now, TTL: receipts.AcceptedTTL}
	p.Timestamp = now
	v.send(&protocol.V0JobAcceptedReceiptRequest{Payload: p, Signature: receipts.Sign(&p, v.key)})
}

func (v *validator) sendJobRequest(j testJob) {
	v.t.Helper()
	r := j.job.Request
	v.send(&protocol.V0JobRequest{
		JobUUID: j.uuid, ExecutorClass: j.job.ExecutorClass, DockerImage: r.DockerImage, RawScript: &r.RawScript,
		DockerRunOptionsPreset: protocol.DockerRunOptionsPreset(r.DockerRunOptionsPreset),
		DockerRunCmd:           r.DockerRunCmd, Env: r.Env,
	})
}

func (v *validator) sendFinishedReceipt(j testJob, score string) {
	v.t.Helper()
	now := time.Now().UTC()
	p := receipts.JobFinished{
		Header: j.started.Header, TimeStarted: now.Add(-time.Second), TimeTookUS: 1000, ScoreStr: score,
	}
	p.Timestamp = now
	v.send(&protocol.V0JobFinishedReceiptRequest{Payload: p, Signature: receipts.Sign(&p, v.key)})
}

// waitJob polls the fleet until the job's record passes ok.
func waitJob(t testing.TB, f *Fleet, uuid string, ok func(JobRecord) bool) JobRecord {
	t.Helper()
	var last JobRecord
	require.Eventually(t, func() bool {
		for _, r := range f.Jobs() {
			if r.JobUUID == uuid {
				last = r
				return ok(r)
			}
		}
		return false
	}, 5*time.Second, 5*time.Millisecond, "job %s: last record %+v", uuid, last)
	return last
}
