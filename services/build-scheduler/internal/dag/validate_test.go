package dag

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/shared/problem"
)

func job(name string, deps ...string) JobSpec {
	return JobSpec{Name: name, Target: "x86_64-linux", Command: []string{"true"}, DependsOn: deps}
}

func TestValidateRejectsBadSubmissions(t *testing.T) {
	t.Parallel()

	small := DefaultLimits
	small.MaxJobs, small.MaxDeps, small.MaxJobBytes = 3, 1, 32
	tests := []struct {
		name   string
		sub    Submission
		field  string
		detail string
	}{
		{"NoName", Submission{Jobs: []JobSpec{job("a")}}, "name", "needs a name"},
		{"Empty", Submission{Name: "g"}, "jobs", "empty"},
		{"TooManyJobs", Submission{Name: "g", Jobs: []JobSpec{job("a"), job("b"), job("c"), job("d")}}, "jobs", "limit of 3"},
		{"DuplicateName", Submission{Name: "g", Jobs: []JobSpec{job("a"), job("a")}}, "jobs[1].name", `duplicate job name "a"`},
		{"NoTarget", Submission{Name: "g", Jobs: []JobSpec{{Name: "a", Command: []string{"true"}}}}, "jobs[0].target", "no target"},
		{"BadTarget", Submission{Name: "g", Jobs: []JobSpec{{Name: "a", Target: "X86.linux", Command: []string{"true"}}}}, "jobs[0].target", "lowercase"},
		{"NoCommand", Submission{Name: "g", Jobs: []JobSpec{{Name: "a", Target: "linux"}}}, "jobs[0].command", "no command"},
		{"UnknownDependency", Submission{Name: "g", Jobs: []JobSpec{job("a", "zz")}}, "jobs[0].depends_on[0]", `unknown job "zz"`},
		{"TooManyDeps", Submission{Name: "g", Jobs: []JobSpec{job("a"), job("b"), job("c", "a", "b")}}, "jobs[2].depends_on", "limit of 1"},
		{"TooLarge", Submission{Name: "g", Jobs: []JobSpec{{Name: "a", Target: "l", Command: []string{"true"}, Payload: json.RawMessage(`"` + strings.Repeat("x", 40) + `"`)}}}, "jobs[0]", "over the limit of 32"},
		{"TimeoutTooLong", Submission{Name: "g", Jobs: []JobSpec{{Name: "a", Target: "l", Command: []string{"true"}, TimeoutSeconds: 90000}}}, "jobs[0].timeout_seconds", "exceed the limit of 24h"},
		{"TimeoutOverflows", Submission{Name: "g", Jobs: []JobSpec{{Name: "a", Target: "l", Command: []string{"true"}, TimeoutSeconds: math.MaxInt64}}}, "jobs[0].timeout_seconds", "exceed"},
		{"TimeoutNegative", Submission{Name: "g", Jobs: []JobSpec{{Name: "a", Target: "l", Command: []string{"true"}, TimeoutSeconds: -1}}}, "jobs[0].timeout_seconds", "negative"},
		{"PriorityPast32Bits", Submission{Name: "g", Jobs: []JobSpec{job("a"), {Name: "b", Target: "l", Command: []string{"true"}, Priority: math.MaxInt32 + 1}}}, "jobs[1].priority", "from -2147483648 to 2147483647"},
		{"PriorityMax64", Submission{Name: "g", Jobs: []JobSpec{{Name: "a", Target: "l", Command: []string{"true"}, Priority: math.MaxInt64}}}, "jobs[0].priority", "from -2147483648 to 2147483647"},
		{"PriorityBelow32Bits", Submission{Name: "g", Jobs: []JobSpec{{Name: "a", Target: "l", Command: []string{"true"}, Priority: math.MinInt32 - 1}}}, "jobs[0].priority", "from -2147483648 to 2147483647"},
		{"SelfCycle", Submission{Name: "g", Jobs: []JobSpec{job("a", "a")}}, "jobs", "cycle: a → a"},
		{"Cycle", Submission{Name: "g", Jobs: []JobSpec{job("root"), job("a", "root", "c"), job("b", "a"), job("c", "b")}}, "jobs", "cycle: a → c → b → a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			lim := DefaultLimits
			if tt.name == "TooManyJobs" || tt.name == "TooManyDeps" || tt.name == "TooLarge" {
				lim = small
			}
			_, err := Validate(tt.sub, lim)
			var pe *problem.Error
			require.ErrorAs(t, err, &pe)
			require.Equal(t, problem.Unprocessable, pe.Code)
			require.Equal(t, tt.field, pe.Field)
			require.Contains(t, pe.Detail, tt.detail)
		})
	}
}

func TestValidateResolvesDependencies(t *testing.T) {
	t.Parallel()

	plan, err := Validate(Submission{Name: "diamond", Jobs: []JobSpec{
		job("bottom", "left", "right"), job("left", "top"), job("right", "top"), job("top"),
	}}, DefaultLimits)
	require.NoError(t, err)
	require.Equal(t, []int{1, 2}, plan.Jobs[0].Deps)
	require.Equal(t, []int{3}, plan.Jobs[1].Deps)
	require.Empty(t, plan.Jobs[3].Deps)
	require.Equal(t, DefaultLimits.DefaultTimeout, plan.Jobs[3].Timeout)
}

func TestValidateHandlesDeepChains(t *testing.T) {
	t.Parallel()

	jobs := []JobSpec{job("j0")}
	for i := 1; i < 10000; i++ {
		jobs = append(jobs, job(fmt.Sprintf("j%d", i), fmt.Sprintf("j%d", i-1)))
	}
	_, err := Validate(Submission{Name: "chain", Jobs: jobs}, DefaultLimits)
	require.NoError(t, err)

	jobs[0].DependsOn = []string{"j9999"}
	_, err = Validate(Submission{Name: "ring", Jobs: jobs}, DefaultLimits)
	require.ErrorContains(t, err, "dependency cycle: j0 → j9999")
}

func TestValidateOrdersJobsAfterTheirDependencies(t *testing.T) {
	t.Parallel()
	// Listed dependents first, so submission order is not an order of the graph.
	plan, err := Validate(Submission{Name: "g", Jobs: []JobSpec{
		job("bottom", "left", "right"), job("left", "top"), job("right", "top"), job("top"), job("alone"),
	}}, DefaultLimits)
	require.NoError(t, err)
	require.Len(t, plan.Order, len(plan.Jobs))
	rank := map[int]int{}
	for r, i := range plan.Order {
		rank[i] = r
	}
	require.Len(t, rank, len(plan.Jobs), "every job once")
	for i, j := range plan.Jobs {
		for _, d := range j.Deps {
			require.Less(t, rank[d], rank[i], "%s comes after its dependency %s", j.Name, plan.Jobs[d].Name)
		}
	}
}

func TestValidateKeepsBoundaryNumbers(t *testing.T) {
	t.Parallel()

	plan, err := Validate(Submission{Name: "g", Jobs: []JobSpec{
		{Name: "low", Target: "l", Command: []string{"true"}, Priority: math.MinInt32, TimeoutSeconds: 1},
		{Name: "high", Target: "l", Command: []string{"true"}, Priority: math.MaxInt32, TimeoutSeconds: Integer(DefaultLimits.MaxTimeout / time.Second)},
	}}, DefaultLimits)
	require.NoError(t, err)
	require.Equal(t, time.Second, plan.Jobs[0].Timeout)
	require.Equal(t, DefaultLimits.MaxTimeout, plan.Jobs[1].Timeout)
	require.Equal(t, Integer(math.MaxInt32), plan.Jobs[1].Priority)
}

func TestLimitsCheckRefusesRangesThatCannotBeStored(t *testing.T) {
	t.Parallel()

	require.NoError(t, DefaultLimits.Check())
	tests := map[string]func(*Limits){
		"NoJobs":          func(l *Limits) { l.MaxJobs = 0 },
		"JobsPast32Bits":  func(l *Limits) { l.MaxJobs = math.MaxInt32 + 1 },
		"NegativeDeps":    func(l *Limits) { l.MaxDeps = -1 },
		"NoBytes":         func(l *Limits) { l.MaxJobBytes = 0 },
		"NoMaxTimeout":    func(l *Limits) { l.MaxTimeout = 0 },
		"DefaultPastMax":  func(l *Limits) { l.DefaultTimeout = l.MaxTimeout + time.Second },
		"NegativeDefault": func(l *Limits) { l.DefaultTimeout = -time.Second },
	}
	for name, breakIt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			lim := DefaultLimits
			breakIt(&lim)
			require.Error(t, lim.Check())
		})
	}
}
