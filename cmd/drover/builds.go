package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"drover.dev/shared/yamljson"
)

var groupColumns = cols("id", "id", "name", "name", "state", "state", "jobs", "total", "by state", "counts",
	"created", "created_at", "finished", "finished_at")

var groupFields = cols("id", "id", "name", "name", "state", "state", "cancel requested", "cancel_requested",
	"jobs", "total", "by state", "counts", "created", "created_at", "finished", "finished_at")

var buildJobColumns = cols("id", "id", "name", "name", "target", "target", "state", "state", "attempt", "attempt",
	"exit", "exit_code", "started", "started_at", "finished", "finished_at", "error", "error")

// groupEnded says whether a group's state is final.
func groupEnded(state string) bool {
	return state == "complete" || state == "failed" || state == "canceled"
}

func (a *app) buildsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "builds",
		Short: "Submit, follow, cancel and retry build groups; show jobs, logs and graphs (build-scheduler)",
		Example: `  drover builds submit examples/group.yaml --env REPO="$PWD" --env HOME="$HOME" --follow
  drover builds list --state failed
  drover builds show 7
  drover builds log 31 -f
  drover builds graph 7 --format mermaid`,
	}
	cmd.AddCommand(a.buildsSubmitCmd(), a.buildsListCmd(), a.buildsShowCmd(), a.buildsFollowCmd(), a.buildsLogCmd(),
		a.groupActionCmd("cancel", opCancelGroup, "Cancel a group: unstarted jobs at once, running ones told to stop"),
		a.groupActionCmd("retry", opRetryGroup, "Re-run the failed, dependency-failed and cancelled jobs of a failed or canceled group"),
		a.buildsGraphCmd())
	return cmd
}

func (a *app) buildsSubmitCmd() *cobra.Command {
	var follow bool
	var env []string
	c := &cobra.Command{
		Use:   "submit FILE",
		Short: "Submit a group of jobs with dependencies, from a JSON or YAML file (- for stdin)",
		Long: `submit posts the group in FILE, JSON or YAML, as POST /v1/groups takes it. A build worker serving
a job's target runs its command in an empty work directory of its own, which is also its HOME and
TMPDIR, with the worker's PATH and the job's env:

  name: hello
  jobs:
    - {name: greet, target: x86_64-linux, command: [sh, -c, 'echo hello from $(uname -n)']}
    - {name: after, target: x86_64-linux, command: [sh, -c, 'echo after greet'], depends_on: [greet]}

examples/group.yaml, in Drover's repository, checks, tests and builds drover from your checkout
on make run's build worker (target x86_64-linux, on this machine). From the repository's root:

  drover builds submit examples/group.yaml --env REPO="$PWD" --env HOME="$HOME" --follow

--env NAME=VALUE sets NAME in every job's env, over the file's: here REPO names the checkout,
and your HOME lets go find your module and build caches.

A group that is not a DAG, names an unknown dependency or breaks a limit is refused (exit 4),
naming the problem. With --follow it then follows the group as builds follow does: a group that
fails ends with its failed jobs, their exit codes and errors, and the commands that show their
output.`,
		Example: "  drover builds submit group.yaml\n  drover builds submit group.json --follow\n" +
			"  drover builds submit examples/group.yaml --env REPO=\"$PWD\" --env HOME=\"$HOME\" --follow",
		Args: exactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			body, err := readGroup(args[0])
			if err == nil {
				body, err = withEnv(body, env)
			}
			if err != nil {
				return &exitError{code: exitUsage, err: err}
			}
			raw, err := a.api.call(a.ctx, request{op: opCreateGroup, body: body})
			if err != nil {
				return err
			}
			if !follow {
				return a.out.record(raw, groupFields)
			}
			var g struct {
				ID int64 `json:"id"`
			}
			if err := json.Unmarshal(raw, &g); err != nil {
				return err
			}
			fmt.Fprintf(a.progress(), "group %d submitted\n", g.ID)
			return a.followGroup(strconv.FormatInt(g.ID, 10))
		},
	}
	c.Flags().BoolVarP(&follow, "follow", "f", false, "follow the group until it ends")
	c.Flags().StringArrayVarP(&env, "env", "e", nil, "NAME=VALUE set in every job's env, over the file's (repeatable)")
	return c
}

// readGroup reads a group file, JSON or YAML, into the JSON body to post.
func readGroup(path string) (json.RawMessage, error) { return readJSONOrYAML(path) }

// readJSONOrYAML reads the file at path (stdin for "-"), JSON or YAML, as JSON.
func readJSONOrYAML(path string) (json.RawMessage, error) {
	var raw []byte
	var err error
	if path == "-" {
		raw, err = io.ReadAll(os.Stdin)
	} else {
		raw, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, err
	}
	body, err := yamljson.ToJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("%s is neither JSON nor YAML: %w", path, err)
	}
	return body, nil
}

// withEnv sets each NAME=VALUE of pairs in the env of every job of body, over the file's own: a
// group file names what a job needs (the checkout it builds), the command line what it is on this
// machine. Numbers keep their digits, for the scheduler to judge; a job or env that is not an
// object is left for the scheduler to refuse by name.
func withEnv(body json.RawMessage, pairs []string) (json.RawMessage, error) {
	if len(pairs) == 0 {
		return body, nil
	}
	env := make(map[string]any, len(pairs))
	for _, p := range pairs {
		name, value, ok := strings.Cut(p, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("--env %q: must be NAME=VALUE", p)
		}
		env[name] = value
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var group map[string]any
	if err := dec.Decode(&group); err != nil {
		return nil, fmt.Errorf("--env needs the group to be an object with jobs: %w", err)
	}
	jobs, _ := group["jobs"].([]any)
	for _, j := range jobs {
		job, ok := j.(map[string]any)
		if !ok {
			continue
		}
		own, ok := job["env"].(map[string]any)
		switch {
		case job["env"] == nil:
			own = map[string]any{}
		case !ok:
			continue
		}
		maps.Copy(own, env)
		job["env"] = own
	}
	return json.Marshal(group)
}

func (a *app) buildsListCmd() *cobra.Command {
	var limit int
	var state string
	c := &cobra.Command{
		Use: "list", Short: "Build groups, newest first", Args: exactArgs(0),
		Example: "  drover builds list\n  drover builds list --state failed -o json",
		RunE: func(*cobra.Command, []string) error {
			q := limitQuery(limit)
			if state != "" {
				q.Set("state", state)
			}
			raw, err := a.api.call(a.ctx, request{op: opListGroups, query: q})
			if err != nil {
				return err
			}
			return a.out.list(raw, groupColumns)
		},
	}
	c.Flags().IntVar(&limit, "limit", 20, "most groups to list (1 to 1000)")
	c.Flags().StringVar(&state, "state", "", "only groups in this state: queued, dispatching, complete, failed, canceled")
	return c
}

func (a *app) buildsShowCmd() *cobra.Command {
	return &cobra.Command{
		Use: "show ID", Short: "A group, its counts by state and its jobs", Args: exactArgs(1),
		Example: "  drover builds show 7",
		RunE: func(_ *cobra.Command, args []string) error {
			group, err := a.api.call(a.ctx, request{op: opGetGroup, params: args})
			if err != nil {
				return err
			}
			jobs, err := a.api.call(a.ctx, request{op: opListGroupJobs, params: args, query: limitQuery(1000)})
			if err != nil {
				return err
			}
			if a.out.json {
				return a.out.value(map[string]json.RawMessage{"group": group, "jobs": jobs})
			}
			if err := a.out.record(group, groupFields); err != nil {
				return err
			}
			fmt.Fprintln(a.out.w)
			return a.out.list(jobs, buildJobColumns)
		},
	}
}

func (a *app) buildsFollowCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "follow ID",
		Short: "Follow a group's counts live until it ends",
		Long: "follow prints the group's jobs by state whenever they change, until the group ends; it exits 7 when the group failed or was canceled.\n" +
			"A group that failed ends with its failed jobs, their exit codes and errors, and the drover builds log command of each.",
		Args: exactArgs(1), Example: "  drover builds follow 7",
		RunE: func(_ *cobra.Command, args []string) error { return a.followGroup(args[0]) },
	}
}

// followGroup prints the group's counts when they change until it ends, then the group.
func (a *app) followGroup(id string) error {
	w := a.progress()
	last := ""
	for {
		raw, err := a.api.call(a.ctx, request{op: opGetGroup, params: []string{id}})
		if err != nil {
			return err
		}
		var g map[string]any
		if err := json.Unmarshal(raw, &g); err != nil {
			return err
		}
		state, _ := g["state"].(string)
		line := fmt.Sprintf("group %s %s: %s", id, state, format(g["counts"]))
		if line != last {
			fmt.Fprintln(w, line)
			last = line
		}
		if groupEnded(state) {
			if a.out.json {
				_ = a.out.raw(raw)
			}
			if state == "failed" {
				a.printFailures(id, g["counts"], w)
			}
			if state != "complete" {
				return unsuccessful(fmt.Errorf("group %s %s", id, state))
			}
			return nil
		}
		if err := a.sleep(); err != nil {
			return err
		}
	}
}

// failuresShown is how many failed jobs a followed group that failed lists; builds show lists
// every job.
const failuresShown = 20

var failedJobColumns = cols("id", "id", "name", "name", "target", "target", "attempt", "attempt",
	"exit", "exit_code", "error", "error")

// printFailures ends the follow of a group that failed with what the operator looks at next:
// the failed jobs with their exit codes and errors, how many jobs they kept from running, and
// the commands that show the failed jobs' output. The group's exit code says it failed either
// way, so a list the scheduler does not give is said, not returned.
func (a *app) printFailures(id string, counts any, w io.Writer) {
	q := limitQuery(failuresShown)
	q.Set("state", "job_failed")
	var page struct {
		Items []map[string]any `json:"items"`
	}
	if err := a.api.get(a.ctx, request{op: opListGroupJobs, params: []string{id}, query: q}, &page); err != nil {
		fmt.Fprintf(w, "its failed jobs could not be listed: %v\n", err)
		return
	}
	if len(page.Items) == 0 {
		return
	}
	for _, j := range page.Items {
		if msg, ok := j["error"].(string); ok {
			j["error"] = strings.Join(strings.Fields(msg), " ") // one line per job
		}
	}
	fmt.Fprintln(w, "\nfailed jobs:")
	printer{w: w}.table(page.Items, failedJobColumns)
	byState, _ := counts.(map[string]any)
	if n, _ := byState["job_failed"].(float64); int(n) > len(page.Items) {
		fmt.Fprintf(w, "and %d more: drover builds show %s\n", int(n)-len(page.Items), id)
	}
	if n, _ := byState["dependency_failed"].(float64); n > 0 {
		fmt.Fprintf(w, "%s not run: a job they depend on failed\n", plural(int(n), "job"))
	}
	fmt.Fprintln(w, "\ntheir output:")
	for _, j := range page.Items {
		fmt.Fprintf(w, "  drover builds log %s   # %s\n", format(j["id"]), format(j["name"]))
	}
	fmt.Fprintf(w, "once fixed, run them and the jobs they held back again: drover builds retry %s\n", id)
}

// plural is n and noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func (a *app) buildsLogCmd() *cobra.Command {
	var follow bool
	c := &cobra.Command{
		Use: "log JOB", Short: "A build job's output; -f streams it until the job is final", Args: exactArgs(1),
		Example: "  drover builds log 31\n  drover builds log 31 -f",
		RunE: func(_ *cobra.Command, args []string) error {
			q := url.Values{}
			if follow {
				q.Set("follow", "true")
			}
			resp, err := a.api.open(a.ctx, request{op: opGetJobLog, params: args, query: q})
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if _, err := io.Copy(a.out.w, resp.Body); err != nil && a.ctx.Err() == nil {
				return fmt.Errorf("read the log of job %s: %w", args[0], err)
			}
			return nil
		},
	}
	c.Flags().BoolVarP(&follow, "follow", "f", false, "stream the log until the job is final")
	return c
}

func (a *app) groupActionCmd(verb string, op operation, short string) *cobra.Command {
	return &cobra.Command{
		Use: verb + " ID", Short: short, Args: exactArgs(1),
		Example: fmt.Sprintf("  drover builds %s 7", verb),
		RunE: func(_ *cobra.Command, args []string) error {
			raw, err := a.api.call(a.ctx, request{op: op, params: args})
			if err != nil {
				return err
			}
			return a.out.record(raw, groupFields)
		},
	}
}

func (a *app) buildsGraphCmd() *cobra.Command {
	var formatName string
	c := &cobra.Command{
		Use: "graph ID", Short: "A group's DAG coloured by job state, as Graphviz DOT or Mermaid", Args: exactArgs(1),
		Example: "  drover builds graph 7 | dot -Tsvg > group7.svg\n  drover builds graph 7 --format mermaid",
		RunE: func(_ *cobra.Command, args []string) error {
			if formatName != "dot" && formatName != "mermaid" {
				return &exitError{code: exitUsage, err: fmt.Errorf("--format %q: must be dot or mermaid", formatName)}
			}
			raw, err := a.api.call(a.ctx, request{op: opGetGroupGraph, params: args, query: url.Values{"format": {formatName}}})
			if err != nil {
				return err
			}
			_, err = a.out.w.Write(append(bytes.TrimRight(raw, "\n"), '\n'))
			return err
		},
	}
	c.Flags().StringVar(&formatName, "format", "dot", "dot or mermaid")
	return c
}
