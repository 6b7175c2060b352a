package infra

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/require"
)

// promql is the parser Prometheus itself loads rules with (its default options).
var promql = parser.NewParser(parser.Options{})

// ruleProblems loads a rule file as Prometheus does (rulefmt: the YAML, every expression through
// the PromQL parser, every template) and then checks that each metric an expression selects is
// one the code registers. A file with any problem would not load (a rule file loads all or
// nothing) or would alert on a series that never exists.
func ruleProblems(content []byte, known map[string]bool) []error {
	groups, errs := rulefmt.Parse(content, false, model.UTF8Validation, promql, slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		return errs
	}
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			name := r.Alert + r.Record
			if r.Annotations["summary"] == "" && r.Alert != "" {
				errs = append(errs, fmt.Errorf("%s: no summary annotation", name))
			}
			errs = append(errs, exprProblems(name, r.Expr, known)...)
		}
	}
	return errs
}

// exprProblems parses a PromQL expression and names every selected metric the code does not
// register.
func exprProblems(where, expr string, known map[string]bool) []error {
	e, err := promql.ParseExpr(expr)
	if err != nil {
		return []error{fmt.Errorf("%s: %w", where, err)}
	}
	var errs []error
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok && !known[family(vs.Name)] {
			errs = append(errs, fmt.Errorf("%s: no service registers metric %q", where, vs.Name))
		}
		return nil
	})
	return errs
}

// family is the metric family a series name belongs to: a histogram's _bucket, _sum and _count
// series are its own.
func family(series string) string {
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if f, ok := strings.CutSuffix(series, suffix); ok {
			return f
		}
	}
	return series
}

// registered matches a metric's name where the code declares it: Name: "drover_..." (the
// prometheus.*Opts and the gauges read from Postgres) or prometheus.NewDesc("drover_...").
var registered = regexp.MustCompile(`(?:\bName:\s+|NewDesc\(\s*)"((?:drover|http)_[a-z0-9_]+)"`)

// knownMetrics reads every metric name the repository's Go code (tests aside) declares.
func knownMetrics(t *testing.T) map[string]bool {
	t.Helper()
	known := map[string]bool{}
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != ".." || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range registered.FindAllSubmatch(b, -1) {
			known[string(m[1])] = true
		}
		return nil
	})
	require.NoError(t, err)
	require.True(t, known["drover_river_jobs"] && known["drover_scorer_weights_sent_age_seconds"],
		"the metric declarations were not found: %d names", len(known))
	return known
}

func TestAlertRulesLoadInPrometheus(t *testing.T) {
	t.Parallel()
	known := knownMetrics(t)
	files, err := filepath.Glob("prometheus/*.yml")
	require.NoError(t, err)
	var rules []string
	for _, f := range files {
		if f == filepath.Join("prometheus", "prometheus.yml") {
			continue // the server's configuration, not a rule file
		}
		rules = append(rules, f)
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		require.Empty(t, ruleProblems(b, known), "%s does not load in Prometheus", f)
	}
	require.NotEmpty(t, rules, "no rule file under prometheus/")
}

func TestPrometheusConfigNamesEveryRuleFile(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("prometheus/prometheus.yml")
	require.NoError(t, err)
	require.Contains(t, string(b), "alerts.yml")
}

func TestAlertsWatchWeightsAndSubmissions(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("prometheus/alerts.yml")
	require.NoError(t, err)
	groups, errs := rulefmt.Parse(b, false, model.UTF8Validation, promql, slog.New(slog.DiscardHandler))
	require.Empty(t, errs)
	var exprs []string
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			exprs = append(exprs, r.Expr)
		}
	}
	for _, metric := range []string{"drover_scorer_weights_sent_age_seconds", "drover_scorer_weight_submissions_total"} {
		require.True(t, slices.ContainsFunc(exprs, func(e string) bool { return strings.Contains(e, metric) }),
			"no alert watches %s", metric)
	}
}

// TestRuleCheckRejects proves the check can fail: each rule here is one Prometheus refuses, or
// one on a metric nothing exposes.
func TestRuleCheckRejects(t *testing.T) {
	t.Parallel()
	known := map[string]bool{"drover_batch_runner_last_batch_age_seconds": true, "drover_batch_runner_cycle_seconds": true}
	for name, tc := range map[string]struct{ expr, want string }{
		"vector matching on a scalar": {
			expr: "drover_batch_runner_last_batch_age_seconds > 2 * on(job, instance) drover_batch_runner_cycle_seconds",
			want: "vector matching only allowed between instant vectors",
		},
		"unbalanced":     {expr: "sum(rate(drover_batch_runner_cycle_seconds[5m])", want: "unclosed left parenthesis"},
		"unknown metric": {expr: "drover_batch_runner_no_such_thing > 0", want: `no service registers metric "drover_batch_runner_no_such_thing"`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			file := fmt.Sprintf("groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: %q\n        annotations: {summary: s}\n", tc.expr)
			errs := ruleProblems([]byte(file), known)
			require.NotEmpty(t, errs)
			require.ErrorContains(t, errs[0], tc.want)
		})
	}
}

// grafanaVariables are the built-in Grafana variables the dashboards' queries may use outside a
// string, with a value of their kind; $job and the like only appear inside label matchers'
// strings, which PromQL parses as text.
var grafanaVariables = strings.NewReplacer("$__rate_interval", "5m", "${__rate_interval}", "5m", "$__interval", "1m", "$__range", "1h")

// panel is the part of a Grafana panel that holds queries; rows nest their panels.
type panel struct {
	Title   string  `json:"title"`
	Type    string  `json:"type"`
	Panels  []panel `json:"panels"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

func TestDashboardQueriesParse(t *testing.T) {
	t.Parallel()
	known := knownMetrics(t)
	files, err := filepath.Glob("grafana/dashboards/*.json")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		var d struct {
			Panels []panel `json:"panels"`
		}
		require.NoError(t, json.Unmarshal(b, &d), f)
		queries := 0
		var walk func([]panel)
		walk = func(ps []panel) {
			for _, p := range ps {
				walk(p.Panels)
				for _, q := range p.Targets {
					queries++
					require.Empty(t, exprProblems(f+": "+p.Title, grafanaVariables.Replace(q.Expr), known))
				}
			}
		}
		walk(d.Panels)
		require.NotZero(t, queries, "%s: no query", f)
	}
}
