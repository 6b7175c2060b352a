// Package deploycheck finds what each Drover binary would be given by the deployment files,
// docker-compose.yml and the Kubernetes base in infra/k8s, without Docker, kubectl or a cluster,
// and runs the binary's check-config mode with exactly that environment.
//
// Compose: the file's ${VAR} interpolation is resolved with a set of variables (the test values
// of infra/env.example), anchors and merge keys as YAML has them, environment in map or list
// form; a bind mount's target path in a variable becomes the host path. Kubernetes: the
// resources kustomization.yaml lists (or a rendered `kubectl kustomize`), envFrom ConfigMaps and
// Secrets, env values with $(VAR) references, secretKeyRef and configMapKeyRef, and Secret or
// ConfigMap volumes, whose files are written under a temporary folder that replaces the mount
// path in the variables. Whatever would keep a container from starting (an unset required
// compose variable, a missing Secret key) is a problem of that workload.
package deploycheck

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Workload is one container of a deployment file that runs a Drover binary.
type Workload struct {
	Source   string            // "compose" or "kubernetes"
	Name     string            // the compose service, or Kind/name of the Kubernetes object
	Binary   string            // the command the image runs: scorer, migrate, build-worker, …
	Env      map[string]string // the whole environment the binary gets
	Problems []string          // what would keep it from starting before the binary runs
	Replicas int               // processes it runs (replicas; a Job's parallelism)
	Surge    int               // extra processes during a rolling update (a Deployment's maxSurge)
}

func (w Workload) String() string { return w.Source + "/" + w.Name }

// Binaries are the commands the deployment files must run, each in both.
var Binaries = []string{"migrate", "miner-sync", "batch-runner", "scorer", "build-scheduler", "populate-worker", "build-worker"}

// ReadYAML parses one YAML document into a tree of maps, slices and scalars.
func ReadYAML(data []byte) (map[string]any, error) {
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	return doc, nil
}

// ReadEnvFile reads a .env file: NAME=value lines; blank lines and # comments are skipped.
func ReadEnvFile(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	vars := map[string]string{}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("%s:%d: not NAME=value", path, i+1)
		}
		vars[strings.TrimSpace(name)] = value
	}
	return vars, nil
}

// Compose returns the workloads of a compose file (its parsed tree) given the variables compose
// would interpolate; projectDir resolves relative bind mounts. Only services built from this
// repository (build.args.CMD) are workloads.
func Compose(tree map[string]any, vars map[string]string, projectDir string) ([]Workload, error) {
	services, _ := tree["services"].(map[string]any)
	if len(services) == 0 {
		return nil, errors.New("compose file: no services")
	}
	var out []Workload
	for _, name := range sortedKeys(services) {
		svc, _ := services[name].(map[string]any)
		build, _ := svc["build"].(map[string]any)
		args, _ := build["args"].(map[string]any)
		cmd, _ := args["CMD"].(string)
		if cmd == "" {
			continue
		}
		deploy, _ := svc["deploy"].(map[string]any)
		w := Workload{Source: "compose", Name: name, Binary: path.Base(cmd), Env: map[string]string{}, Replicas: replicas(deploy["replicas"])}
		interp := func(s string) string {
			v, err := Interpolate(s, vars)
			if err != nil {
				w.Problems = append(w.Problems, err.Error())
			}
			return v
		}
		// The image and the command are interpolated too: an unset required variable there stops
		// the service as surely as one in its environment.
		if img, ok := svc["image"].(string); ok {
			interp(img)
		}
		switch env := svc["environment"].(type) {
		case map[string]any:
			for k, v := range env {
				if v != nil {
					w.Env[k] = interp(scalar(v))
				}
			}
		case []any:
			for _, item := range env {
				k, v, ok := strings.Cut(scalar(item), "=")
				if ok {
					w.Env[k] = interp(v)
				}
			}
		}
		vols, _ := svc["volumes"].([]any)
		for _, v := range vols {
			var src, dst string
			if s, ok := v.(string); ok {
				src, dst = volume(interp(s)) // before splitting: ${VAR:?message} has colons of its own
			} else {
				src, dst = volume(v)
				src, dst = interp(src), interp(dst)
			}
			if !strings.HasPrefix(src, "/") && !strings.HasPrefix(src, ".") && !strings.HasPrefix(src, "~") {
				continue // a named volume
			}
			if rest, ok := strings.CutPrefix(src, "~"); ok {
				home, _ := os.UserHomeDir()
				src = home + rest
			}
			if !filepath.IsAbs(src) {
				src = filepath.Join(projectDir, src)
			}
			rewritePaths(w.Env, dst, src)
		}
		out = append(out, w)
	}
	return out, nil
}

// volume is the source and target of a compose volume in short ("src:dst:ro") or long form.
func volume(v any) (src, dst string) {
	switch v := v.(type) {
	case string:
		parts := strings.Split(v, ":")
		if len(parts) >= 2 {
			return parts[0], parts[1]
		}
	case map[string]any:
		return scalar(v["source"]), scalar(v["target"])
	}
	return "", ""
}

// rewritePaths points every variable at or below the container path mount to the same file
// under host.
func rewritePaths(env map[string]string, mount, host string) {
	mount = strings.TrimSuffix(mount, "/")
	for k, v := range env {
		if v == mount || strings.HasPrefix(v, mount+"/") {
			env[k] = host + strings.TrimPrefix(v, mount)
		}
	}
}

// Interpolate resolves compose's ${VAR}, ${VAR:-default}, ${VAR-default}, ${VAR:?error},
// ${VAR?error}, ${VAR:+alt}, ${VAR+alt} (nested in the default, as Compose v2 allows), $VAR and
// $$. An unset required variable is an error naming it.
func Interpolate(s string, vars map[string]string) (string, error) {
	var b strings.Builder
	var errs []error
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '$' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		switch next := s[i+1]; {
		case next == '$':
			b.WriteByte('$')
			i++
		case next == '{':
			end := closing(s, i+1)
			if end < 0 {
				return "", fmt.Errorf("unclosed ${ in %q", s)
			}
			v, err := expand(s[i+2:end], vars)
			if err != nil {
				errs = append(errs, err)
			}
			b.WriteString(v)
			i = end
		case isNameByte(next):
			j := i + 1
			for j < len(s) && isNameByte(s[j]) {
				j++
			}
			b.WriteString(vars[s[i+1:j]])
			i = j - 1
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), errors.Join(errs...)
}

// closing is the index of the } matching the { at open.
func closing(s string, open int) int {
	depth := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

func expand(expr string, vars map[string]string) (string, error) {
	n := 0
	for n < len(expr) && isNameByte(expr[n]) {
		n++
	}
	name, op := expr[:n], expr[n:]
	value, set := vars[name]
	nonEmpty := set && value != ""
	arg := func(prefix string) (string, error) { return Interpolate(strings.TrimPrefix(op, prefix), vars) }
	switch {
	case op == "":
		return value, nil
	case strings.HasPrefix(op, ":-"):
		if nonEmpty {
			return value, nil
		}
		return arg(":-")
	case strings.HasPrefix(op, "-"):
		if set {
			return value, nil
		}
		return arg("-")
	case strings.HasPrefix(op, ":?"), strings.HasPrefix(op, "?"):
		prefix := op[:1]
		if prefix == ":" {
			prefix = ":?"
		}
		if nonEmpty || (set && prefix == "?") {
			return value, nil
		}
		msg, _ := arg(prefix)
		return "", fmt.Errorf("required variable %s is missing a value: %s", name, msg)
	case strings.HasPrefix(op, ":+"):
		if nonEmpty {
			return arg(":+")
		}
		return "", nil
	case strings.HasPrefix(op, "+"):
		if set {
			return arg("+")
		}
		return "", nil
	}
	return "", fmt.Errorf("invalid interpolation ${%s}", expr)
}

func isNameByte(c byte) bool {
	return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
}

func scalar(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case bool:
		return strconv.FormatBool(v)
	default:
		return fmt.Sprint(v)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Result is what running a workload's binary in check-config mode gave.
type Result struct {
	Workload Workload
	Output   string // the binary's output, after the workload's own problems
	OK       bool
}

// Run runs the workload's binary from binDir as `BINARY check-config` with exactly the
// workload's environment (nothing inherited). A workload with problems of its own fails even
// when the binary accepts what it got.
func Run(ctx context.Context, binDir string, w Workload) Result {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, w.Binary), "check-config")
	cmd.Env = []string{}
	for _, k := range sortedKeys(w.Env) {
		cmd.Env = append(cmd.Env, k+"="+w.Env[k])
	}
	out, err := cmd.CombinedOutput()
	var lines []string
	for _, p := range w.Problems {
		lines = append(lines, w.String()+": "+p)
	}
	lines = append(lines, strings.TrimRight(string(out), "\n"))
	return Result{Workload: w, Output: strings.Join(lines, "\n"), OK: err == nil && len(w.Problems) == 0}
}

// Missing names the binaries of Binaries that no workload of source runs.
func Missing(ws []Workload) []string {
	var missing []string
	for _, b := range Binaries {
		if !slices.ContainsFunc(ws, func(w Workload) bool { return w.Binary == b }) {
			missing = append(missing, b)
		}
	}
	return missing
}
