package minersim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/computehorde/protocol"
)

// TestFleetAnswerAt offers three jobs whose requests arrive tens of milliseconds apart to
// executors answering at one instant, and requires all three answers to be written in the same
// system call, at the first request's arrival plus answer_at.
func TestFleetAnswerAt(t *testing.T) {
	t.Parallel()

	// Wide enough for the third request, sent ~60 ms after the first, to be handled and its
	// answer held before the round's instant on a loaded machine: the instant counts from the
	// kernel's arrival stamp of the first request, not from when its reader got a core.
	const answerAt = 300 * time.Millisecond
	f := startFleet(t, Config{
		Manifest: protocol.Manifest{{Class: testClass, Count: 3}},
		Scenario: Scenario{Default: Behaviour{Answer: AnswerScripted, Stdout: "x", AnswerAt: Duration(answerAt)}},
	})
	v := dialMiner(t, f.Miners()[0], aliceKey(t), aliceKey(t).Address())
	v.auth()
	expect[*protocol.V0ExecutorManifestRequest](v)
	jobs := []testJob{v.newJob(testClass), v.newJob(testClass), v.newJob(testClass)}
	for _, j := range jobs {
		v.sendInitial(j)
		expect[*protocol.V0AcceptJobRequest](v)
		v.sendAcceptedReceipt(j)
		expect[*protocol.V0ExecutorReadyRequest](v)
	}
	for _, j := range jobs {
		v.sendJobRequest(j)
		time.Sleep(30 * time.Millisecond)
	}
	for range jobs {
		_, ok := v.readAnswer().(*protocol.V0JobFinishedRequest)
		require.True(t, ok)
	}

	first := f.ArrivalsWhere(ArrivalFilter{MessageType: "V0JobRequest"})[0].UnixNano
	var sent []int64
	for _, j := range jobs {
		rec := waitJob(t, f, j.uuid, func(r JobRecord) bool { return r.AnswerSentUnixNano != 0 })
		require.Equal(t, "V0JobFinishedRequest", rec.Answer)
		sent = append(sent, rec.AnswerSentUnixNano)
	}
	require.Equal(t, []int64{sent[0], sent[0], sent[0]}, sent, "one write for the three answers")
	require.GreaterOrEqual(t, sent[0], first+answerAt.Nanoseconds(), "not before the round's instant")
	require.Equal(t, 0, f.Stats()[0].BusyExecutors, "slots freed once the answers were written")
}

// TestAnswerRoundsJoinUntilTheInstant: a request that arrives before the round's instant joins
// the round (its gate), one that arrives at or after the instant opens the next; a gate stays
// shut until its instant and opens at it.
func TestAnswerRoundsJoinUntilTheInstant(t *testing.T) {
	t.Parallel()
	var r answerRounds
	now := time.Now().UnixNano()
	g := r.gate(now, time.Hour)
	require.Equal(t, g, r.gate(now+time.Minute.Nanoseconds(), time.Minute), "arrived before the instant: joins, whatever its own AnswerAt")
	next := r.gate(now+time.Hour.Nanoseconds(), time.Hour)
	require.NotEqual(t, g, next, "arrived at the instant: opens the next round")
	require.Equal(t, next, r.gate(now+time.Hour.Nanoseconds()+1, time.Hour))
	select {
	case <-g:
		t.Fatal("a gate opened an hour before its instant")
	default:
	}

	var past answerRounds
	gone := past.gate(now-time.Second.Nanoseconds(), time.Millisecond) // its instant is past
	require.Eventually(t, func() bool {
		select {
		case <-gone:
			return true
		default:
			return false
		}
	}, 10*time.Second, time.Millisecond, "a gate opens at its instant")
}

func TestBehaviourAnswerAtExcludesDelay(t *testing.T) {
	t.Parallel()

	b := Behaviour{AnswerAt: Duration(time.Second), AnswerDelay: Duration(time.Second)}
	require.ErrorContains(t, b.Validate(), "exclude each other")
	require.NoError(t, Behaviour{AnswerAt: Duration(time.Second)}.Validate())
}
