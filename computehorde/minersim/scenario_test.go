package minersim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestScenarioApply(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name  string
		specs []string
		check func(t *testing.T, s Scenario)
		err   string
	}{
		{"default", []string{"*:answer=wrong"}, func(t *testing.T, s Scenario) {
			require.Equal(t, AnswerWrong, s.ForMiner(7).Answer)
		}, ""},
		{"miner range", []string{"2-4:decline=busy_valid"}, func(t *testing.T, s Scenario) {
			require.Equal(t, DeclineBusyValid, s.ForMiner(3).Decline)
			require.Empty(t, s.ForMiner(5).Decline)
		}, ""},
		{"executor overrides miner", []string{"1:silent=ready", "1/always_on.test/0:answer_delay=2s,duplicate=answer"}, func(t *testing.T, s Scenario) {
			b := s.ForExecutor(1, "always_on.test", 0)
			require.Equal(t, Behaviour{AnswerDelay: Duration(2 * time.Second), Duplicate: StageAnswer}, b)
			require.Equal(t, StageReady, s.ForExecutor(1, "always_on.test", 1).Silent)
		}, ""},
		{"class with dots and dashes", []string{"0/spin_up-4min.gpu-24gb/3:answer=fail"}, func(t *testing.T, s Scenario) {
			require.Equal(t, AnswerFail, s.ForExecutor(0, "spin_up-4min.gpu-24gb", 3).Answer)
		}, ""},
		{"unknown key", []string{"1:sleepy=yes"}, nil, "unknown field"},
		{"unknown stage", []string{"1:silent=later"}, nil, "unknown stage"},
		{"unknown decline", []string{"1:decline=tired"}, nil, "unknown decline"},
		{"bad duration", []string{"1:answer_delay=soon"}, nil, "parse duration"},
		{"no target", []string{"answer=wrong"}, nil, "want TARGET"},
		{"bad range", []string{"5-2:answer=wrong"}, nil, "want *, N"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			var s Scenario
			var err error
			for _, spec := range tt.specs {
				if err = s.Apply(spec); err != nil {
					break
				}
			}
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			tt.check(t, s)
		})
	}
}

func TestParseScenario(t *testing.T) {
	t.Parallel()

	s, err := ParseScenario([]byte(`{
		"default": {"answer_delay": "50ms"},
		"miners": {"3": {"decline": "busy_expired"}},
		"executors": {"4/always_on.test/0": {"answer": "wrong", "slowloris": "answer", "dribble_every": "10ms"}}
	}`))
	require.NoError(t, err)
	require.Equal(t, Duration(50*time.Millisecond), s.ForMiner(0).AnswerDelay)
	require.Equal(t, DeclineBusyExpired, s.ForExecutor(3, "always_on.test", 0).Decline)
	require.Equal(t, Behaviour{Answer: AnswerWrong, Slowloris: StageAnswer, DribbleEvery: Duration(10 * time.Millisecond)},
		s.ForExecutor(4, "always_on.test", 0))

	_, err = ParseScenario([]byte(`{"miners": {"1": {"anwser": "wrong"}}}`))
	require.ErrorContains(t, err, "unknown field")
	_, err = ParseScenario([]byte(`{"executors": {"4": {}}}`))
	require.ErrorContains(t, err, "want <miner>/<class>/<slot>")
}
