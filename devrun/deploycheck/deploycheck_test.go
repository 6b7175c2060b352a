package deploycheck

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// root is the repository root, two folders up from this package.
func root(t *testing.T) string {
	t.Helper()
	r, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	return r
}

var binDir string // the binaries TestMain built

// TestMain builds every binary the deployment files run, once, into a temporary folder.
func TestMain(m *testing.M) {
	os.Exit(func() int {
		dir, err := os.MkdirTemp("", "deploycheck-bin-")
		if err != nil {
			panic(err)
		}
		defer os.RemoveAll(dir)
		binDir = dir
		return m.Run()
	}())
}

var buildOnce = sync.OnceValue(func() error {
	pkgs := map[string]string{
		"migrate": "./migrations/cmd/migrate", "build-worker": "./services/build-scheduler/cmd/build-worker",
	}
	args := []string{"build", "-o", binDir + string(filepath.Separator)}
	for _, b := range Binaries {
		pkg, ok := pkgs[b]
		if !ok {
			pkg = "./services/" + b
		}
		args = append(args, pkg)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = filepath.Join("..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %w: %s", err, out)
	}
	return nil
})

// buildBinaries returns the folder of every binary the deployment files run, built once.
func buildBinaries(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds every deployed binary")
	}
	require.NoError(t, buildOnce())
	return binDir
}

// failures runs the workloads of f that differ from the ones of base (all of them when base is
// nil: an unchanged workload passed already) and returns the outputs of the ones that fail, with
// the problems of the files as a whole. tmp is the folder both were resolved in.
func failures(t *testing.T, f Files, base map[string]Workload, bin, tmp string) []string {
	t.Helper()
	ws, problems, err := f.Workloads(tmp)
	require.NoError(t, err)
	out := problems
	for _, w := range ws {
		if b, ok := base[w.String()]; ok && reflect.DeepEqual(b, w) {
			continue
		}
		if r := Run(t.Context(), bin, w); !r.OK {
			out = append(out, r.Output)
		}
	}
	return out
}

func read(t *testing.T) Files {
	t.Helper()
	f, err := Read(root(t), "", "")
	require.NoError(t, err)
	return f
}

func TestDeployFilesPassEveryCheckConfig(t *testing.T) {
	t.Parallel()
	bin := buildBinaries(t)
	f := read(t)
	ws, problems, err := f.Workloads(t.TempDir())
	require.NoError(t, err)
	require.Empty(t, problems)
	// Compose runs each binary once; Kubernetes one migrate Job per service and a Deployment each.
	require.Len(t, ws, len(Binaries)+len(Binaries)-1+len(Binaries)-1)
	require.Empty(t, failures(t, f, nil, bin, t.TempDir()))
}

// TestRemovingARequiredSettingFails removes each setting a service needs, one at a time, from
// compose's variables and environments and from the Kubernetes objects, and expects the check to
// fail naming it.
func TestRemovingARequiredSettingFails(t *testing.T) {
	t.Parallel()
	bin := buildBinaries(t)
	type removal struct {
		name   string // the setting, which the failure must name
		remove func(f *Files) bool
	}
	var removals []removal

	// Compose: every variable env.example sets is required.
	for name := range read(t).Vars {
		removals = append(removals, removal{name, func(f *Files) bool {
			_, ok := f.Vars[name]
			delete(f.Vars, name)
			return ok
		}})
	}
	// Compose: what each service's environment must hold.
	composeEnv := map[string][]string{
		"migrate": {"DATABASE_URL"}, "miner-sync": {"DATABASE_URL", "API_TOKENS", "MINER_SYNC_METAGRAPH_URL"},
		"batch-runner":    {"DATABASE_URL", "API_TOKENS", "HOST_WALLET_DIR", "BITTENSOR_WALLET_NAME"},
		"scorer":          {"DATABASE_URL", "API_TOKENS", "SCORER_SUBTENSOR_URL", "HOST_WALLET_DIR", "BITTENSOR_WALLET_NAME"},
		"build-scheduler": {"DATABASE_URL", "API_TOKENS"},
		"populate-worker": {"DATABASE_URL", "API_TOKENS"}, "build-worker": {"DATABASE_URL", "API_TOKENS", "BUILD_WORKER_TARGETS"},
	}
	for svc, vars := range composeEnv {
		for _, v := range vars {
			removals = append(removals, removal{v, func(f *Files) bool {
				env := f.Compose["services"].(map[string]any)[svc].(map[string]any)["environment"].(map[string]any)
				_, ok := env[v]
				delete(env, v)
				return ok
			}})
		}
	}
	// Compose: batch-runner's and scorer's wallet mount.
	for _, name := range []string{"batch-runner", "scorer"} {
		removals = append(removals, removal{"/wallets", func(f *Files) bool {
			svc := f.Compose["services"].(map[string]any)[name].(map[string]any)
			_, ok := svc["volumes"]
			delete(svc, "volumes")
			return ok
		}})
	}

	// Kubernetes: every key of the Secrets, and the ConfigMap keys without a default.
	for obj, keys := range map[string][]string{
		"Secret/drover": {
			"admin-database-url", "api-tokens", "riverui-user", "db-password-miner-sync", "db-password-batch-runner",
			"db-password-scorer", "db-password-build-scheduler", "db-password-build-worker", "db-password-populate-worker",
		},
		"Secret/drover-wallet": {"hotkey"},
		"ConfigMap/drover":     {"DROVER_DB_HOST", "DROVER_DB_NAME", "DROVER_DB_SSLMODE", "MINER_SYNC_METAGRAPH_URL", "SCORER_SUBTENSOR_URL"},
	} {
		for _, key := range keys {
			removals = append(removals, removal{key, func(f *Files) bool {
				d := object(f.K8s, obj)
				found := false
				for _, field := range []string{"data", "stringData"} {
					if m, ok := d[field].(map[string]any); ok {
						_, in := m[key]
						found = found || in
						delete(m, key)
					}
				}
				return found
			}})
		}
	}
	// Kubernetes: what each container's env must hold, and batch-runner's wallet volume.
	k8sEnv := map[string][]string{
		"Job/migrate-scorer": {"DATABASE_URL"}, "Deployment/miner-sync": {"DATABASE_URL", "DROVER_DB_PASSWORD", "API_TOKENS"},
		"Deployment/batch-runner": {"DATABASE_URL", "DROVER_DB_PASSWORD", "API_TOKENS", "HOST_WALLET_DIR", "BITTENSOR_WALLET_NAME"},
		"Deployment/scorer":       {"DATABASE_URL", "DROVER_DB_PASSWORD", "API_TOKENS", "HOST_WALLET_DIR", "BITTENSOR_WALLET_NAME"},
		"Deployment/build-worker": {"DATABASE_URL", "DROVER_DB_PASSWORD", "API_TOKENS", "BUILD_WORKER_TARGETS"},
	}
	for obj, vars := range k8sEnv {
		for _, v := range vars {
			removals = append(removals, removal{v, func(f *Files) bool {
				c := container(object(f.K8s, obj))
				env := c["env"].([]any)
				i := slices.IndexFunc(env, func(e any) bool { return e.(map[string]any)["name"] == v })
				if i < 0 {
					return false
				}
				c["env"] = slices.Delete(env, i, i+1)
				return true
			}})
		}
	}
	for _, obj := range []string{"Deployment/batch-runner", "Deployment/scorer"} {
		removals = append(removals, removal{"wallet", func(f *Files) bool {
			c := container(object(f.K8s, obj))
			mounts := c["volumeMounts"].([]any)
			n := len(mounts)
			c["volumeMounts"] = slices.DeleteFunc(mounts, func(m any) bool { return m.(map[string]any)["name"] == "wallet" })
			return len(c["volumeMounts"].([]any)) < n
		}})
	}

	require.Len(t, removals, len(read(t).Vars)+len(composeEnv)*2+5+3+2+9+1+5+14+2+2)
	tmp := t.TempDir()
	ws, _, err := read(t).Workloads(tmp)
	require.NoError(t, err)
	base := map[string]Workload{}
	for _, w := range ws {
		base[w.String()] = w
	}
	for _, r := range removals {
		f := read(t)
		require.True(t, r.remove(&f), "%s is not in the deployment files", r.name)
		fails := failures(t, f, base, bin, tmp)
		require.NotEmpty(t, fails, "the check passes without %s", r.name)
		require.True(t, slices.ContainsFunc(fails, func(s string) bool { return strings.Contains(s, r.name) }),
			"without %s the check fails without naming it:\n%s", r.name, strings.Join(fails, "\n"))
	}
}

func TestConnectionBudgetFitsADefaultPostgres(t *testing.T) {
	t.Parallel()
	ws, _, err := read(t).Workloads(t.TempDir())
	require.NoError(t, err)
	k8s := ConnectionBudget(ws, "kubernetes")
	require.Equal(t, 6, k8s.Migrations)
	require.Empty(t, k8s.Problem(), "a rollout of every Deployment during the migrate Jobs")
	for _, c := range k8s.Services {
		require.Equal(t, 2, c.Processes, "%s: one replica and one surge pod", c.Workload.Name)
	}
	require.Empty(t, ConnectionBudget(ws, "compose").Problem())

	// A second replica of populate-worker no longer fits: the check says so with the figures.
	f := read(t)
	object(f.K8s, "Deployment/populate-worker")["spec"].(map[string]any)["replicas"] = 2
	ws, problems, err := f.Workloads(t.TempDir())
	require.NoError(t, err)
	require.Contains(t, strings.Join(problems, "\n"), "kubernetes opens up to 111 Postgres connections at once")
	require.Contains(t, ConnectionBudget(ws, "kubernetes").String(), "Deployment/populate-worker 3×15")
}

func TestSurgeCountsAsKubernetesDoes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		spec     string
		replicas int
		want     int
	}{
		{`{}`, 1, 1}, {`{}`, 4, 1}, {`{}`, 5, 2},
		{`{strategy: {rollingUpdate: {maxSurge: 1}}}`, 3, 1},
		{`{strategy: {rollingUpdate: {maxSurge: "50%"}}}`, 3, 2},
		{`{strategy: {type: Recreate}}`, 3, 0},
	} {
		spec, err := ReadYAML([]byte(tc.spec))
		require.NoError(t, err)
		require.Equal(t, tc.want, surge(spec, tc.replicas), "%s with %d replicas", tc.spec, tc.replicas)
	}
}

// object is the Kubernetes object named Kind/name.
func object(docs []map[string]any, id string) map[string]any {
	kind, name, _ := strings.Cut(id, "/")
	for _, d := range docs {
		if d["kind"] == kind && d["metadata"].(map[string]any)["name"] == name {
			return d
		}
	}
	panic("no " + id)
}

// container is the first container of a workload object.
func container(d map[string]any) map[string]any {
	return podSpec(d)["containers"].([]any)[0].(map[string]any)
}

func TestInterpolate(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"A": "a", "EMPTY": ""}
	for in, want := range map[string]string{
		"${A}": "a", "$A-x": "a-x", "$$A": "$A", "${B:-b}": "b", "${EMPTY:-e}": "e", "${EMPTY-e}": "",
		"${B:-${A:-z}}": "a", "${B:-${C:-z}}": "z", "${A:+alt}": "alt", "${B:+alt}": "", "x${A:?need A}y": "xay",
	} {
		got, err := Interpolate(in, vars)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	_, err := Interpolate("${B:?set B please}", vars)
	require.EqualError(t, err, "required variable B is missing a value: set B please")
	_, err = Interpolate("${EMPTY:?set it}", vars)
	require.ErrorContains(t, err, "EMPTY")
}

func TestKubernetesEnvFollowsTheKubelet(t *testing.T) {
	t.Parallel()
	docs, err := ReadDocs([]byte(`
apiVersion: v1
kind: ConfigMap
metadata: {name: c}
data: {HOST: db}
---
apiVersion: v1
kind: Secret
metadata: {name: s}
data: {pw: c2VjcmV0}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: scorer}
spec:
  template:
    spec:
      containers:
        - name: scorer
          image: registry.example.com/drover/scorer:v1
          envFrom: [{configMapRef: {name: c}}]
          env:
            - {name: PW, valueFrom: {secretKeyRef: {name: s, key: pw}}}
            - {name: URL, value: "postgres://u:$(PW)@$(HOST)/$(NOPE)?x=$$(HOST)"}
            - {name: GONE, valueFrom: {secretKeyRef: {name: s, key: gone}}}
            - {name: ID, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
        - name: sidecar
          image: busybox
`))
	require.NoError(t, err)
	ws, err := Kubernetes(docs, t.TempDir(), nil)
	require.NoError(t, err)
	require.Len(t, ws, 1)
	require.Equal(t, "scorer", ws[0].Binary)
	require.Equal(t, "postgres://u:secret@db/$(NOPE)?x=$(HOST)", ws[0].Env["URL"])
	require.Equal(t, []string{"env GONE: secret s has no key gone"}, ws[0].Problems)
	require.NotEmpty(t, ws[0].Env["ID"])
}
