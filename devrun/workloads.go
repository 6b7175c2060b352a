package main

import "path/filepath"

// buildWorkerAddr is where the build demo's worker serves its health and metrics.
const buildWorkerAddr = "127.0.0.1:8086"

// The workloads' demos, in the order make run shows them. Each is a program of its service's
// module that talks to the running services over HTTP and exits 0 when its workload did what it
// should.
func init() {
	demos = append(demos, demo{
		name:   "batch",
		binary: "batch-demo",
		args: func(f *fleet, opts options) []string {
			return []string{
				"-miner-sync-url", f.url("miner-sync"), "-batch-runner-url", f.url("batch-runner"),
				"-scorer-url", f.url("scorer"), "-token", opts.token,
			}
		},
	}, demo{
		name:   "build",
		binary: "build-demo",
		args: func(f *fleet, opts options) []string {
			return []string{"-url", f.url("build-scheduler"), "-token", opts.token, "-docs-source", docsSource(opts)}
		},
		helper: &helperProcess{
			name:   "build-worker",
			binary: "build-worker",
			addrs:  []string{buildWorkerAddr},
			env: func(_ *fleet, opts options) map[string]string {
				dbURL, _ := roleURL(opts.databaseURL, "build-worker") // the URL parsed for every service before
				return map[string]string{
					"BUILD_WORKER_TARGETS":      "x86_64-linux",
					"BUILD_WORKER_HTTP_ADDR":    buildWorkerAddr,
					"BUILD_WORKER_DATABASE_URL": dbURL,
				}
			},
		},
	}, demo{
		name:   "populate",
		binary: "populate-demo",
		args: func(f *fleet, opts options) []string {
			return []string{"-url", f.url("populate-worker"), "-token", opts.token}
		},
	})
}

// docsSource is the file the build demo's docs-build needs: missing when the demo runs, so the
// build fails; creating it and pressing Retry in River UI finishes the group.
func docsSource(opts options) string {
	path, err := filepath.Abs(filepath.Join(opts.logs, "docs-source.md"))
	if err != nil {
		return filepath.Join(opts.logs, "docs-source.md")
	}
	return path
}
