package deploycheck

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ReadDocs parses a multi-document YAML stream (a rendered `kubectl kustomize`, or one file).
func ReadDocs(data []byte) ([]map[string]any, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []map[string]any
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		if doc != nil {
			docs = append(docs, doc)
		}
	}
}

// Kustomization reads the resources the kustomization.yaml in dir lists, as `kubectl kustomize`
// would find them (files only; this base has no generators or patches, and a kustomization that
// has them is refused rather than half read).
func Kustomization(dir string) ([]map[string]any, error) {
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		return nil, err
	}
	k, err := ReadYAML(data)
	if err != nil {
		return nil, fmt.Errorf("kustomization.yaml: %w", err)
	}
	for _, unsupported := range []string{"configMapGenerator", "secretGenerator", "patches", "patchesStrategicMerge", "patchesJson6902", "components", "replacements"} {
		if _, ok := k[unsupported]; ok {
			return nil, fmt.Errorf("kustomization.yaml uses %s: render it with kubectl kustomize and pass the output instead", unsupported)
		}
	}
	resources, _ := k["resources"].([]any)
	var docs []map[string]any
	for _, r := range resources {
		name := scalar(r)
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("kustomization.yaml lists %s: %w", name, err)
		}
		d, err := ReadDocs(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		docs = append(docs, d...)
	}
	return docs, nil
}

// Kubernetes returns the workloads of a set of Kubernetes objects: every container of a
// Deployment, StatefulSet, DaemonSet or Job whose image is a Drover image (…/drover/<binary> or
// drover/<binary>). Secret and ConfigMap volumes are written under filesDir. overrides replace
// Secret values ("secret/key" → value), e.g. a test hotkey for the template's placeholder.
func Kubernetes(docs []map[string]any, filesDir string, overrides map[string]string) ([]Workload, error) {
	configMaps, secrets := map[string]map[string]string{}, map[string]map[string]string{}
	for _, d := range docs {
		meta, _ := d["metadata"].(map[string]any)
		name := scalar(meta["name"])
		switch d["kind"] {
		case "ConfigMap":
			configMaps[name] = stringMap(d["data"])
		case "Secret":
			data := map[string]string{}
			for k, v := range stringMap(d["data"]) {
				b, err := base64.StdEncoding.DecodeString(v)
				if err != nil {
					return nil, fmt.Errorf("secret %s key %s: %w", name, k, err)
				}
				data[k] = string(b)
			}
			for k, v := range stringMap(d["stringData"]) {
				data[k] = v
			}
			for k := range data {
				if v, ok := overrides[name+"/"+k]; ok {
					data[k] = v
				}
			}
			secrets[name] = data
		}
	}
	var out []Workload
	for _, d := range docs {
		kind := scalar(d["kind"])
		meta, _ := d["metadata"].(map[string]any)
		name := scalar(meta["name"])
		pod := podSpec(d)
		if pod == nil {
			continue
		}
		containers, _ := pod["containers"].([]any)
		for _, c := range containers {
			c, _ := c.(map[string]any)
			binary := droverBinary(scalar(c["image"]))
			if binary == "" {
				continue
			}
			spec, _ := d["spec"].(map[string]any)
			w := Workload{Source: "kubernetes", Name: kind + "/" + name, Binary: binary}
			switch kind {
			case "Deployment":
				w.Replicas = replicas(spec["replicas"])
				w.Surge = surge(spec, w.Replicas)
			case "Job":
				w.Replicas = replicas(spec["parallelism"])
			default:
				w.Replicas = replicas(spec["replicas"])
			}
			if len(containers) > 1 {
				w.Name += "/" + scalar(c["name"])
			}
			w.Env = containerEnv(c, name, configMaps, secrets, &w.Problems)
			mountVolumes(c, pod, filepath.Join(filesDir, kind+"-"+name+"-"+scalar(c["name"])), configMaps, secrets, w.Env, &w.Problems)
			out = append(out, w)
		}
	}
	return out, nil
}

func podSpec(d map[string]any) map[string]any {
	switch d["kind"] {
	case "Deployment", "StatefulSet", "DaemonSet", "Job":
	default:
		return nil
	}
	spec, _ := d["spec"].(map[string]any)
	tmpl, _ := spec["template"].(map[string]any)
	pod, _ := tmpl["spec"].(map[string]any)
	return pod
}

// droverBinary is the command a Drover image runs: drover/scorer:tag → scorer.
func droverBinary(image string) string {
	image, _, _ = strings.Cut(image, "@")
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		image = image[:i]
	}
	dir, base := path.Split(image)
	if path.Base(strings.TrimSuffix(dir, "/")) != "drover" {
		return ""
	}
	return base
}

// containerEnv is the environment the kubelet gives container c: envFrom in order, then env in
// order with $(VAR) references to what is defined before expanded (unknown ones stay as they
// are, as in Kubernetes).
func containerEnv(c map[string]any, podName string, configMaps, secrets map[string]map[string]string, problems *[]string) map[string]string {
	env := map[string]string{}
	envFrom, _ := c["envFrom"].([]any)
	for _, f := range envFrom {
		f, _ := f.(map[string]any)
		prefix := scalar(f["prefix"])
		for kind, sources := range map[string]map[string]map[string]string{"configMapRef": configMaps, "secretRef": secrets} {
			ref, ok := f[kind].(map[string]any)
			if !ok {
				continue
			}
			src, found := sources[scalar(ref["name"])]
			if !found && ref["optional"] != true {
				*problems = append(*problems, fmt.Sprintf("envFrom %s %s: no such object", kind, scalar(ref["name"])))
			}
			for k, v := range src {
				env[prefix+k] = v
			}
		}
	}
	list, _ := c["env"].([]any)
	for _, e := range list {
		e, _ := e.(map[string]any)
		name := scalar(e["name"])
		from, _ := e["valueFrom"].(map[string]any)
		if from == nil {
			env[name] = expandRefs(scalar(e["value"]), env)
			continue
		}
		switch {
		case from["secretKeyRef"] != nil:
			if v, ok := keyRef(from["secretKeyRef"], "secret", name, secrets, problems); ok {
				env[name] = v
			}
		case from["configMapKeyRef"] != nil:
			if v, ok := keyRef(from["configMapKeyRef"], "configMap", name, configMaps, problems); ok {
				env[name] = v
			}
		case from["fieldRef"] != nil:
			env[name] = podName + "-0" // metadata.name and the like: a pod's value
		default:
			env[name] = "1" // resourceFieldRef
		}
	}
	return env
}

func keyRef(ref any, kind, variable string, objects map[string]map[string]string, problems *[]string) (string, bool) {
	r, _ := ref.(map[string]any)
	obj, key := scalar(r["name"]), scalar(r["key"])
	v, ok := objects[obj][key]
	if !ok && r["optional"] != true {
		*problems = append(*problems, fmt.Sprintf("env %s: %s %s has no key %s", variable, kind, obj, key))
	}
	return v, ok
}

// expandRefs replaces $(NAME) with env[NAME] when defined; $$( is a literal $(.
func expandRefs(s string, env map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		if s[i+1] == '$' {
			b.WriteByte('$')
			i++
			continue
		}
		if s[i+1] == '(' {
			if end := strings.IndexByte(s[i:], ')'); end > 0 {
				if v, ok := env[s[i+2:i+end]]; ok {
					b.WriteString(v)
					i += end
					continue
				}
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// mountVolumes writes the Secret and ConfigMap volumes c mounts under dir and points the
// variables naming their mount paths there.
func mountVolumes(c, pod map[string]any, dir string, configMaps, secrets map[string]map[string]string, env map[string]string, problems *[]string) {
	volumes := map[string]map[string]any{}
	vs, _ := pod["volumes"].([]any)
	for _, v := range vs {
		v, _ := v.(map[string]any)
		volumes[scalar(v["name"])] = v
	}
	mounts, _ := c["volumeMounts"].([]any)
	for _, m := range mounts {
		m, _ := m.(map[string]any)
		name, mountPath := scalar(m["name"]), scalar(m["mountPath"])
		v, ok := volumes[name]
		if !ok {
			*problems = append(*problems, fmt.Sprintf("volumeMount %s: no volume %s in the pod", mountPath, name))
			continue
		}
		var data map[string]string
		var src map[string]any
		switch {
		case v["secret"] != nil:
			src, _ = v["secret"].(map[string]any)
			var found bool
			if data, found = secrets[scalar(src["secretName"])]; !found && src["optional"] != true {
				*problems = append(*problems, fmt.Sprintf("volume %s: no secret %s", name, scalar(src["secretName"])))
			}
		case v["configMap"] != nil:
			src, _ = v["configMap"].(map[string]any)
			var found bool
			if data, found = configMaps[scalar(src["name"])]; !found && src["optional"] != true {
				*problems = append(*problems, fmt.Sprintf("volume %s: no configMap %s", name, scalar(src["name"])))
			}
		default:
			continue // emptyDir and the like: nothing to materialise
		}
		root := filepath.Join(dir, name)
		files := map[string]string{}
		if items, ok := src["items"].([]any); ok {
			for _, it := range items {
				it, _ := it.(map[string]any)
				key := scalar(it["key"])
				val, found := data[key]
				if !found {
					*problems = append(*problems, fmt.Sprintf("volume %s: key %s is missing", name, key))
					continue
				}
				files[scalar(it["path"])] = val
			}
		} else {
			for k, val := range data {
				files[k] = val
			}
		}
		for p, val := range files {
			full := filepath.Join(root, filepath.FromSlash(p))
			err := os.MkdirAll(filepath.Dir(full), 0o700)
			if err == nil {
				err = os.WriteFile(full, []byte(val), 0o600)
			}
			if err != nil {
				*problems = append(*problems, fmt.Sprintf("volume %s: write %s: %v", name, p, err))
			}
		}
		rewritePaths(env, mountPath, root)
	}
}

func stringMap(v any) map[string]string {
	m, _ := v.(map[string]any)
	out := map[string]string{}
	for k, val := range m {
		out[k] = scalar(val)
	}
	return out
}
