package servicetest

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
)

// Metrics scrapes base/metrics and returns its families by name.
func Metrics(t testing.TB, base string) map[string]*dto.MetricFamily {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/metrics", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return families
}

// RequireMetrics waits up to ten seconds for base/metrics to expose a family of every name, and
// fails naming those still missing.
func RequireMetrics(t testing.TB, base string, names ...string) {
	t.Helper()
	var missing []string
	deadline := time.Now().Add(10 * time.Second)
	for {
		families := Metrics(t, base)
		missing = missing[:0]
		for _, n := range names {
			if _, ok := families[n]; !ok {
				missing = append(missing, n)
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.Empty(t, missing, "families missing from %s/metrics", base)
}

// metricName matches the metric names a dashboard or an alert rule uses.
var metricName = regexp.MustCompile(`\b(?:drover|http)_[a-z0-9_]*[a-z0-9]\b`)

// ObservabilityFiles are the files under the repository's infra folder that name metrics: the
// Grafana dashboards and the Prometheus rules.
func ObservabilityFiles(t testing.TB) []string {
	t.Helper()
	infra := filepath.Join(repoRoot(t), "infra")
	var files []string
	for _, pattern := range []string{"grafana/dashboards/*.json", "prometheus/*.yml"} {
		m, err := filepath.Glob(filepath.Join(infra, pattern))
		require.NoError(t, err)
		files = append(files, m...)
	}
	require.NotEmpty(t, files, "no dashboards or rules under %s", infra)
	return files
}

// NamedMetrics returns the families the dashboards and alert rules name whose name starts with
// prefix, sorted: a histogram's _bucket, _sum and _count series name its family.
func NamedMetrics(t testing.TB, prefix string) []string {
	t.Helper()
	var names []string
	for _, f := range ObservabilityFiles(t) {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, n := range metricName.FindAllString(string(b), -1) {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				n = strings.TrimSuffix(n, suffix)
			}
			if strings.HasPrefix(n, prefix) && !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	slices.Sort(names)
	return names
}

// repoRoot is the nearest folder above the working directory holding go.work.
func repoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, dir, parent, "go.work not found above the working directory")
		dir = parent
	}
}

// Value returns the value of the series of family name in families whose labels include labels
// (a counter's, a gauge's, or a histogram's sample count); it fails when there is none.
func Value(t testing.TB, families map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	t.Helper()
	v, ok := Lookup(families, name, labels)
	require.True(t, ok, "%s has no series with labels %v", name, labels)
	return v
}

// Lookup is Value that reports whether the series exists instead of failing, for use in
// require.Eventually.
func Lookup(families map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	for _, m := range families[name].GetMetric() {
		if !hasLabels(m, labels) {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	found := 0
	for _, l := range m.GetLabel() {
		if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
			found++
		}
	}
	return found == len(want)
}
