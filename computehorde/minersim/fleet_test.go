package minersim

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/computehorde/protocol"
	"drover.dev/computehorde/receipts"
)

const testClass = "always_on.test"

// startFleet starts a fleet of quick miners and closes it when the test ends.
func startFleet(t *testing.T, cfg Config) *Fleet {
	t.Helper()
	if cfg.Miners == 0 {
		cfg.Miners = 1
	}
	if cfg.SpinUp == 0 {
		cfg.SpinUp = 10 * time.Millisecond
	}
	f, err := Start(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, f.Close()) })
	return f
}

func TestFleetHappyPath(t *testing.T) {
	t.Parallel()

	manifest := protocol.Manifest{{Class: testClass, Count: 2}, {Class: protocol.DefaultExecutorClass, Count: 1}}
	f := startFleet(t, Config{Manifest: manifest})
	v := dialMiner(t, f.Miners()[0], aliceKey(t), aliceKey(t).Address())

	v.auth()
	got := expect[*protocol.V0ExecutorManifestRequest](v)
	require.Equal(t, manifest, got.Manifest)

	j := v.newJob(testClass)
	v.sendInitial(j)
	require.Equal(t, j.uuid, expect[*protocol.V0AcceptJobRequest](v).JobUUID)
	v.sendAcceptedReceipt(j)
	require.Equal(t, j.uuid, expect[*protocol.V0ExecutorReadyRequest](v).JobUUID)

	v.sendJobRequest(j)
	expect[*protocol.V0VolumesReadyRequest](v)
	expect[*protocol.V0ExecutionDoneRequest](v)
	expect[*protocol.V0MachineSpecsRequest](v)
	finished := expect[*protocol.V0JobFinishedRequest](v)
	require.Equal(t, j.uuid, finished.JobUUID)
	require.True(t, j.job.Verify(finished.DockerProcessStdout), "stdout %q, answer %q", finished.DockerProcessStdout, j.job.Answer)

	v.sendFinishedReceipt(j, receipts.FormatScore(1))
	rec := waitJob(t, f, j.uuid, func(r JobRecord) bool { return r.FinishedReceipt != "" })
	requestArrival := f.ArrivalsWhere(ArrivalFilter{MessageType: "V0JobRequest"})[0].UnixNano
	require.Greater(t, rec.AnswerSentUnixNano, requestArrival, "answer sent after the request arrived")
	rec.AnswerSentUnixNano = 0
	require.Equal(t, JobRecord{
		Miner: 0, MinerHotkey: v.miner.Hotkey, Validator: v.key.Address(), JobUUID: j.uuid,
		ExecutorClass: testClass, Executor: testClass + "/0", Response: "accepted",
		StartedReceipt: ReceiptValid, AcceptedReceipt: ReceiptValid, FinishedReceipt: ReceiptValid,
		Ready: true, Answer: "V0JobFinishedRequest", Stdout: finished.DockerProcessStdout,
	}, rec)

	var types []string
	for _, a := range f.Arrivals() {
		types = append(types, a.MessageType)
		require.Empty(t, a.DecodeError)
		require.NotZero(t, a.UnixNano)
		if a.MessageType != "ValidatorAuthForMiner" {
			require.Equal(t, j.uuid, a.JobUUID)
			require.Equal(t, testClass+"/0", a.Executor)
		}
	}
	require.Equal(t, []string{
		"ValidatorAuthForMiner", "V0InitialJobRequest", "V0JobAcceptedReceiptRequest", "V0JobRequest",
		"V0JobFinishedReceiptRequest",
	}, types)
	require.Zero(t, f.Stats()[0].DecodeErrors)
	require.Equal(t, 0, f.Stats()[0].BusyExecutors)
}
