// Command deploy-check runs every Drover binary's check-config with the environment
// docker-compose.yml gives it (variables from infra/env.example) and with the one the Kubernetes
// base in infra/k8s gives it (ConfigMaps, Secrets, mounted Secret files), without Docker, kubectl
// or a cluster, and exits 1 naming every problem. infra/compose-check.sh (make compose-check)
// runs it.
//
//	deploy-check -bin .data/bin [-root .] [-k8s-rendered FILE]
//
// -k8s-rendered reads a `kubectl kustomize infra/k8s` output instead of the base's files.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"drover.dev/devrun/deploycheck"
)

func main() {
	root := flag.String("root", ".", "the repository root")
	bin := flag.String("bin", ".data/bin", "folder of the built binaries (make build)")
	rendered := flag.String("k8s-rendered", "", "a kubectl kustomize output to check instead of infra/k8s's files")
	flag.Parse()
	if err := run(*root, *bin, *rendered); err != nil {
		fmt.Fprintln(os.Stderr, "deploy-check:", err)
		os.Exit(1)
	}
}

func run(root, bin, rendered string) error {
	files, err := deploycheck.Read(root, rendered)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "deploy-check-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	results, problems, err := files.CheckAll(context.Background(), bin, tmp)
	if err != nil {
		return err
	}
	failed := len(problems)
	for _, p := range problems {
		fmt.Println("FAIL", p)
	}
	for _, r := range results {
		if r.OK {
			fmt.Printf("ok   %s (%s check-config)\n", r.Workload, r.Workload.Binary)
			continue
		}
		failed++
		fmt.Printf("FAIL %s (%s check-config):\n%s\n", r.Workload, r.Workload.Binary, r.Output)
	}
	if failed > 0 {
		return fmt.Errorf("%d problem(s)", failed)
	}
	return nil
}
