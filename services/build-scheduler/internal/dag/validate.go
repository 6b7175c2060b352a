package dag

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"drover.dev/shared/problem"
)

// targetPattern keeps build_<target> a valid River queue name: lowercase letters and digits in
// runs separated by single underscores or hyphens, 58 characters at most (River allows 64).
var targetPattern = regexp.MustCompile(`^[a-z0-9]+(?:[_-][a-z0-9]+)*$`)

const maxTargetLen = 58

// ValidTarget reports whether target names a build target (and so a valid River queue).
func ValidTarget(target string) bool {
	return len(target) <= maxTargetLen && targetPattern.MatchString(target)
}

// Validate checks sub against lim and returns its plan, or a problem.Error (422) naming the field
// at fault and what is wrong with it.
func Validate(sub Submission, lim Limits) (Plan, error) {
	if strings.TrimSpace(sub.Name) == "" {
		return Plan{}, problem.Unprocessablef("name", "a group needs a name")
	}
	if len(sub.Jobs) == 0 {
		return Plan{}, problem.Unprocessablef("jobs", "the group is empty; submit at least one job")
	}
	if len(sub.Jobs) > lim.MaxJobs {
		return Plan{}, problem.Unprocessablef("jobs", "%d jobs exceed the limit of %d per group", len(sub.Jobs), lim.MaxJobs)
	}
	index := make(map[string]int, len(sub.Jobs))
	plan := Plan{Name: sub.Name, Jobs: make([]PlannedJob, len(sub.Jobs))}
	for i, j := range sub.Jobs {
		field := fmt.Sprintf("jobs[%d]", i)
		if prev, dup := index[j.Name]; dup {
			return Plan{}, problem.Unprocessablef(field+".name", "duplicate job name %q (also jobs[%d])", j.Name, prev)
		}
		pj, err := checkJob(field, j, lim)
		if err != nil {
			return Plan{}, err
		}
		index[j.Name], plan.Jobs[i] = i, pj
	}
	if err := resolve(plan, index); err != nil {
		return Plan{}, err
	}
	order, cycle := sortTopologically(plan)
	if cycle != nil {
		return Plan{}, problem.Unprocessablef("jobs", "dependency cycle: %s", strings.Join(cycle, " → "))
	}
	plan.Order = order
	return plan, nil
}

// checkJob validates one job on its own, without looking at the others.
func checkJob(field string, j JobSpec, lim Limits) (PlannedJob, error) {
	switch {
	case strings.TrimSpace(j.Name) == "":
		return PlannedJob{}, problem.Unprocessablef(field+".name", "every job needs a name")
	case len(j.Name) > 200:
		return PlannedJob{}, problem.Unprocessablef(field+".name", "names are at most 200 characters")
	case j.Target == "":
		return PlannedJob{}, problem.Unprocessablef(field+".target", "job %q has no target", j.Name)
	case !ValidTarget(j.Target):
		return PlannedJob{}, problem.Unprocessablef(field+".target",
			"target %q must be lowercase letters and digits separated by single '_' or '-', at most %d characters", j.Target, maxTargetLen)
	case len(j.Command) == 0 || j.Command[0] == "":
		return PlannedJob{}, problem.Unprocessablef(field+".command", "job %q has no command", j.Name)
	case len(j.DependsOn) > lim.MaxDeps:
		return PlannedJob{}, problem.Unprocessablef(field+".depends_on", "%d dependencies exceed the limit of %d per job", len(j.DependsOn), lim.MaxDeps)
	case j.Priority < MinPriority || j.Priority > MaxPriority:
		return PlannedJob{}, problem.Unprocessablef(field+".priority", "must be an integer from %d to %d", MinPriority, MaxPriority)
	}
	if n := jobBytes(j); n > lim.MaxJobBytes {
		return PlannedJob{}, problem.Unprocessablef(field, "command, payload and env take %d bytes, over the limit of %d", n, lim.MaxJobBytes)
	}
	timeout, err := jobTimeout(field+".timeout_seconds", j.TimeoutSeconds, lim)
	if err != nil {
		return PlannedJob{}, err
	}
	return PlannedJob{JobSpec: j, Timeout: timeout}, nil
}

// jobTimeout is the timeout a job asks for in seconds (0: the default), compared with the limit
// before it is converted, so that no number of seconds can overflow into a small duration.
func jobTimeout(field string, seconds Integer, lim Limits) (time.Duration, error) {
	maxSeconds := Integer(lim.MaxTimeout / time.Second)
	switch {
	case seconds < 0:
		return 0, problem.Unprocessablef(field, "must not be negative; give 1 to %d seconds, or 0 for the default", maxSeconds)
	case seconds > maxSeconds:
		return 0, problem.Unprocessablef(field, "must be at most %d seconds: longer timeouts exceed the limit of %s", maxSeconds, lim.MaxTimeout)
	case seconds == 0:
		return lim.DefaultTimeout, nil
	}
	return time.Duration(seconds) * time.Second, nil
}

func jobBytes(j JobSpec) int {
	n := len(j.Payload)
	for _, c := range j.Command {
		n += len(c)
	}
	for k, v := range j.Env {
		n += len(k) + len(v)
	}
	return n
}

// resolve turns dependency names into indexes, rejecting unknown and repeated names.
func resolve(plan Plan, index map[string]int) error {
	for i := range plan.Jobs {
		j := &plan.Jobs[i]
		seen := make(map[string]bool, len(j.DependsOn))
		for k, dep := range j.DependsOn {
			field := fmt.Sprintf("jobs[%d].depends_on[%d]", i, k)
			at, ok := index[dep]
			switch {
			case !ok:
				return problem.Unprocessablef(field, "job %q depends on unknown job %q", j.Name, dep)
			case seen[dep]:
				return problem.Unprocessablef(field, "job %q lists dependency %q twice", j.Name, dep)
			}
			seen[dep] = true
			j.Deps = append(j.Deps, at)
		}
	}
	return nil
}
