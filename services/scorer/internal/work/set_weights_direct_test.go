package work

import (
	"context"
	"encoding/hex"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/stretchr/testify/require"

	"drover.dev/computehorde/hotkey"
	"drover.dev/computehorde/subtensor"
	"drover.dev/computehorde/subtensor/subtensortest"
	"drover.dev/queue"
	"drover.dev/services/scorer/internal/direct"
	"drover.dev/services/scorer/internal/scoring"
	"drover.dev/services/scorer/internal/store"
)

// newFakeChain serves subnet 12 on a fake node: //Alice is the validator at uid 0 (last_update
// 10), miners A and B are registered at uids 3 and 7, C is not; the head is at block 1000.
func newFakeChain(t *testing.T) *fakeChain {
	t.Helper()
	key, err := hotkey.FromURI("//Alice")
	require.NoError(t, err)
	c := &fakeChain{Subnet: subtensortest.NewSubnet(subtensortest.NewNode(t), 12), key: key}
	for i := range c.miner {
		c.miner[i] = subtensortest.Key(i+1, 'm').Address()
	}
	c.Signer, c.Nonce = key.Address(), 5
	c.setValidatorLastUpdate(10)
	c.At(t, 1000)
	return c
}

type fakeChain struct {
	*subtensortest.Subnet
	key   *hotkey.Keypair
	miner [3]string // SS58 of A, B, C
}

func (c *fakeChain) setValidatorLastUpdate(lu uint64) {
	c.Neurons = []subtensortest.Neuron{
		{Hot: c.key.PublicKey(), Cold: subtensortest.Key(0, 'c'), UID: 0, Netuid: 12, Permit: true, LastUpdate: lu},
		{Hot: subtensortest.Key(1, 'm'), Cold: subtensortest.Key(1, 'c'), UID: 3, Netuid: 12, LastUpdate: 1},
		{Hot: subtensortest.Key(2, 'm'), Cold: subtensortest.Key(2, 'c'), UID: 7, Netuid: 12, LastUpdate: 1},
	}
}

// directBundle is weightsBundle with a fake subtensor node in place of Pylon.
type directBundle struct {
	*weightsBundle
	chain   *fakeChain
	metrics *Metrics
}

func setupDirect(t *testing.T) *directBundle {
	t.Helper()
	tx := signerTx(t)
	chain := newFakeChain(t)
	logger := slog.New(slog.DiscardHandler)
	m := NewMetrics(prometheus.NewRegistry())
	setter := &SetWeightsWorker{DB: tx, Logger: logger, Metrics: m, Validator: chain.key.Address(), Direct: &direct.Client{
		URL: chain.Node.URL(), Netuid: 12, Key: chain.key, Timeout: 5 * time.Second,
	}}
	scorer := &ScoreBatchWorker{DB: tx, Params: scoring.DefaultParams(), Logger: logger, SetWeights: true}
	b := &directBundle{chain: chain, metrics: m, weightsBundle: &weightsBundle{
		tx: tx, weights: setter,
		scorer: rivertest.NewWorker(t, riverpgxv5.New(nil), &river.Config{}, scorer),
		setter: rivertest.NewWorker(t, riverpgxv5.New(nil), &river.Config{}, setter),
	}}
	_, err := b.scorer.Work(context.Background(), t, tx, args(1, true,
		queue.MinerClassResult{Hotkey: chain.miner[0], ExecutorClass: llm, Executors: 2, Completed: 2},
		queue.MinerClassResult{Hotkey: chain.miner[1], ExecutorClass: llm, Executors: 1, Completed: 1},
		queue.MinerClassResult{Hotkey: chain.miner[2], ExecutorClass: llm, Executors: 1, Completed: 1}), nil)
	require.NoError(t, err)
	return b
}

// checkExtrinsic takes the extrinsic apart and checks every field against what was meant, and
// the signature: length ‖ 0x84 ‖ 0x00 ‖ signer ‖ 0x01 ‖ signature ‖ era ‖ nonce ‖ tip ‖ mode ‖ call.
func checkExtrinsic(t *testing.T, key *hotkey.Keypair, genesis string, ext []byte, block uint64, wantCall []byte) {
	t.Helper()
	prefix := len(subtensor.AppendCompact(nil, uint64(len(ext))))
	require.Equal(t, subtensor.AppendCompact(nil, uint64(len(ext)-prefix)), ext[:prefix])
	body := ext[prefix:]
	pub := key.PublicKey()
	require.Equal(t, []byte{0x84, 0}, body[:2])
	require.Equal(t, pub[:], body[2:34])
	require.Equal(t, byte(1), body[34])
	era, err := subtensor.MortalEra(block, direct.EraPeriod)
	require.NoError(t, err)
	extra := append(append([]byte{}, era...), 5<<2, 0, 0) // nonce 5, tip 0, mode 0
	require.Equal(t, extra, body[99:104])
	require.Equal(t, wantCall, body[104:])
	g, err := hex.DecodeString(strings.TrimPrefix(genesis, "0x"))
	require.NoError(t, err)
	eraHash, err := hex.DecodeString(hashOf(int64(block))[2:])
	require.NoError(t, err)
	payload := append(append(append([]byte{}, wantCall...), extra...), 0x57, 1, 0, 0, 1, 0, 0, 0)
	payload = append(append(append(payload, g...), eraHash...), 0)
	if len(payload) > 256 {
		payload = subtensor.Blake2b256(payload)
	}
	require.NoError(t, pub.Verify(payload, "0x"+hex.EncodeToString(body[35:99])))
}

func TestSetWeightsDirect(t *testing.T) {
	t.Parallel()

	t.Run("CommitRevealOffSubmitsSetWeights", func(t *testing.T) {
		t.Parallel()
		b := setupDirect(t)
		sub := b.set(t)
		require.Equal(t, store.SubmissionSent, sub.Outcome, "error: %v", sub.Error)
		require.Equal(t, store.ViaSubtensor, sub.Via)
		require.Equal(t, int64(1000), *sub.Block)
		require.Equal(t, hashOf(1000), *sub.BlockHash)
		require.Equal(t, 1, sub.Unregistered, "C is not registered")
		require.Len(t, sub.Weights, 2)
		require.Equal(t, []int{3, 7}, []int{sub.Weights[0].UID, sub.Weights[1].UID})

		exts := b.chain.Submitted()
		require.Len(t, exts, 1)
		require.Equal(t, "0x"+hex.EncodeToString(exts[0]), *sub.Extrinsic)
		require.Equal(t, subtensor.ExtrinsicHash(exts[0]), *sub.ExtrinsicHash)
		uids, weights, err := subtensor.NormalizeWeights([]subtensor.UIDWeight{{UID: 3, Weight: sub.Weights[0].Weight}, {UID: 7, Weight: sub.Weights[1].Weight}})
		require.NoError(t, err)
		require.Equal(t, []uint16{65535, 32768}, weights, "A earned twice B's weight")
		m, err := subtensor.DecodeMetadata(subtensortest.Metadata(subtensortest.DefaultMetadataSpec()))
		require.NoError(t, err)
		call, err := m.SetWeightsCall(12, uids, weights, 0)
		require.NoError(t, err)
		checkExtrinsic(t, b.chain.key, b.chain.Genesis, exts[0], 1000, call)
		require.InDelta(t, 1, testutil.ToFloat64(b.metrics.submissions.WithLabelValues(store.SubmissionSent)), 0)
	})

	// The Done-when check: polkadot.js, an independent implementation, decodes the extrinsic the
	// worker submitted to the fake node and verifies its signature (skipped without Node and the
	// polkadot.js packages; the committed vectors of computehorde/subtensor are checked always).
	t.Run("IndependentImplementationDecodesAndVerifiesIt", func(t *testing.T) {
		t.Parallel()
		b := setupDirect(t)
		sub := b.set(t)
		require.Equal(t, store.SubmissionSent, sub.Outcome, "error: %v", sub.Error)
		uids, weights, err := subtensor.NormalizeWeights([]subtensor.UIDWeight{{UID: 3, Weight: sub.Weights[0].Weight}, {UID: 7, Weight: sub.Weights[1].Weight}})
		require.NoError(t, err)
		m, err := subtensor.DecodeMetadata(subtensortest.Metadata(subtensortest.DefaultMetadataSpec()))
		require.NoError(t, err)
		call, err := m.SetWeightsCall(12, uids, weights, 0)
		require.NoError(t, err)
		v := subtensortest.RunPolkadotJS(t, subtensortest.PolkadotInput{
			Metadata: "0x" + hex.EncodeToString(subtensortest.Metadata(subtensortest.DefaultMetadataSpec())), URI: "//Alice",
			Netuid: 12, UIDs: uids, Weights: weights, SpecVersion: 343, TxVersion: 1, Genesis: b.chain.Genesis,
			EraBlock: 1000, EraHash: hashOf(1000), EraPeriod: direct.EraPeriod, Nonce: 5,
			Call: "0x" + hex.EncodeToString(call), Extrinsic: *sub.Extrinsic,
		})
		require.True(t, v.Decoded.SignatureValid, "polkadot.js did not verify the signature")
		require.True(t, v.Decoded.ExtrinsicCallEqual)
		require.Equal(t, "subtensorModule", v.Decoded.Section)
		require.Equal(t, "setWeights", v.Decoded.Method)
		require.Equal(t, []any{float64(3), float64(7)}, v.Decoded.Args["dests"])
		require.Equal(t, b.chain.key.Address(), v.Decoded.Signer)
		require.Equal(t, *sub.ExtrinsicHash, v.Decoded.Hash)
	})

	t.Run("CommitRevealOnRefused", func(t *testing.T) {
		t.Parallel()
		b := setupDirect(t)
		b.chain.CommitReveal = true
		b.chain.At(t, 1000)
		sub := b.set(t)
		require.Equal(t, store.SubmissionRefused, sub.Outcome)
		require.Contains(t, *sub.Error, "subnet 12 has commit-reveal on")
		require.Contains(t, *sub.Error, "PYLON_ADDRESS")
		require.Empty(t, b.chain.Submitted())
		require.InDelta(t, 1, testutil.ToFloat64(b.metrics.submissions.WithLabelValues(store.SubmissionRefused)), 0)
	})

	t.Run("RateLimitAgainstTheValidatorsLastUpdate", func(t *testing.T) {
		t.Parallel()
		b := setupDirect(t)
		b.chain.setValidatorLastUpdate(950)
		b.chain.At(t, 1000)
		sub := b.set(t)
		require.Equal(t, store.SubmissionSkipped, sub.Outcome)
		require.Contains(t, *sub.Error, "the next may be set from block 1050")
		require.Empty(t, b.chain.Submitted())
	})

	t.Run("ConfirmedByTheValidatorsLastUpdateThenRateLimited", func(t *testing.T) {
		t.Parallel()
		b := setupDirect(t)
		sent := b.set(t)
		require.Equal(t, store.SubmissionSent, sent.Outcome)
		b.chain.setValidatorLastUpdate(1003)
		b.chain.At(t, 1010)
		skipped := b.set(t)
		require.Equal(t, store.SubmissionSkipped, skipped.Outcome)
		subs, err := store.SubmissionList(context.Background(), b.tx, 0, 2)
		require.NoError(t, err)
		require.Equal(t, sent.ID, subs[1].ID)
		require.Equal(t, int64(1003), *subs[1].ConfirmedBlock)
		b.chain.At(t, 1103)
		require.Equal(t, store.SubmissionSent, b.set(t).Outcome)
		require.Len(t, b.chain.Submitted(), 2)
	})

	t.Run("UnknownSignedExtensionRefusesToSign", func(t *testing.T) {
		t.Parallel()
		b := setupDirect(t)
		b.chain.Spec.Extensions = append(append([]string{}, b.chain.Spec.Extensions...), "CheckNewThing")
		b.chain.At(t, 1000)
		sub := b.set(t)
		require.Equal(t, store.SubmissionFailed, sub.Outcome)
		require.Contains(t, *sub.Error, "signed extensions this signer does not know: CheckNewThing")
		require.Nil(t, sub.Extrinsic)
		require.Empty(t, b.chain.Submitted())
	})

	t.Run("NodeRefusalRecordedWithTheExtrinsic", func(t *testing.T) {
		t.Parallel()
		b := setupDirect(t)
		b.chain.Refuse("Custom error: 7")
		sub := b.set(t)
		require.Equal(t, store.SubmissionFailed, sub.Outcome)
		require.Contains(t, *sub.Error, "the node refused set_weights")
		require.Contains(t, *sub.Error, "Custom error: 7")
		require.Contains(t, *sub.Error, "node error 1010: Invalid Transaction")
		require.NotNil(t, sub.Extrinsic)
		b.chain.Refuse("")
		require.Equal(t, store.SubmissionSent, b.set(t).Outcome, "a failed attempt does not count for the rate limit")
	})

	t.Run("BadAnswersAreClearErrors", func(t *testing.T) {
		t.Parallel()
		b := setupDirect(t)
		for _, tc := range []struct {
			method string
			params []any
			answer any
			want   string
		}{
			{"state_getMetadata", []any{hashOf(1000)}, "0x6d657461", "decode metadata"},
			{"state_getMetadata", []any{hashOf(1000)}, 42, "not a 0x-hex string"},
			{"state_getRuntimeVersion", []any{hashOf(1000)}, map[string]any{}, "has no specVersion"},
			{"system_accountNextIndex", []any{b.chain.key.Address()}, "many", "is not a u32"},
		} {
			b.chain.At(t, 1000)
			b.chain.Node.Record(tc.method, tc.params, tc.answer)
			sub := b.set(t)
			require.Equal(t, store.SubmissionFailed, sub.Outcome, tc.method)
			require.Contains(t, *sub.Error, tc.want, tc.method)
		}
		require.Empty(t, b.chain.Submitted())
	})

	t.Run("ValidatorNotRegistered", func(t *testing.T) {
		t.Parallel()
		b := setupDirect(t)
		other, err := hotkey.FromURI("//Bob")
		require.NoError(t, err)
		b.chain.Node.Record("system_accountNextIndex", []any{other.Address()}, 0)
		w := &SetWeightsWorker{DB: b.tx, Logger: slog.New(slog.DiscardHandler), Validator: other.Address(), Direct: &direct.Client{
			URL: b.chain.Node.URL(), Netuid: 12, Key: other, Timeout: 5 * time.Second,
		}}
		_, err = rivertest.NewWorker(t, riverpgxv5.New(nil), &river.Config{}, w).Work(context.Background(), t, b.tx, queue.SetWeightsArgs{Reason: "periodic"}, nil)
		require.NoError(t, err)
		subs, err := store.SubmissionList(context.Background(), b.tx, 0, 1)
		require.NoError(t, err)
		require.Equal(t, store.SubmissionFailed, subs[0].Outcome)
		require.Contains(t, *subs[0].Error, "is not registered on subnet 12 at block 1000")
	})

	t.Run("NodeUnreachable", func(t *testing.T) {
		t.Parallel()
		b := setupDirect(t)
		b.chain.Node.SetDelay(2 * time.Second)
		w := &SetWeightsWorker{DB: b.tx, Logger: slog.New(slog.DiscardHandler), Validator: b.chain.key.Address(), Direct: &direct.Client{
			URL: b.chain.Node.URL(), Netuid: 12, Key: b.chain.key, Timeout: 200 * time.Millisecond,
		}}
		// The node answers after 2 s and would be read: the client's own timeout fails the
		// submission, and the error says so.
		_, err := rivertest.NewWorker(t, riverpgxv5.New(nil), &river.Config{}, w).Work(context.Background(), t, b.tx, queue.SetWeightsArgs{Reason: "periodic"}, nil)
		require.NoError(t, err)
		subs, err := store.SubmissionList(context.Background(), b.tx, 0, 1)
		require.NoError(t, err)
		require.Equal(t, store.SubmissionFailed, subs[0].Outcome)
		require.Contains(t, *subs[0].Error, "read the subnet from the node")
		require.Contains(t, *subs[0].Error, "timeout")
	})
}
