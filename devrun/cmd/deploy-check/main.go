// Command deploy-check runs every Drover binary's check-config with the environment
// docker-compose.yml gives it (variables from infra/env.example) and with the one the Kubernetes
// base in infra/k8s gives it (ConfigMaps, Secrets, mounted Secret files), without Docker, kubectl
// or a cluster, and exits 1 naming every problem. infra/compose-check.sh (make compose-check)
// runs it.
//
//	deploy-check -bin .data/bin [-root .] [-compose-rendered FILE] [-k8s-rendered FILE]
//	deploy-check -test-wallet DIR
//
// -compose-rendered reads a `docker-compose config` output instead of docker-compose.yml,
// -k8s-rendered a `kubectl kustomize infra/k8s` output instead of the base's files.
// -test-wallet writes the test hotkey into DIR at the wallet env.example names (for a
// `docker-compose config` run with DROVER_WALLET_DIR=DIR) and exits.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"drover.dev/devrun/deploycheck"
	"drover.dev/shared/config"
)

func main() {
	root := flag.String("root", ".", "the repository root")
	bin := flag.String("bin", ".data/bin", "folder of the built binaries (make build)")
	composeRendered := flag.String("compose-rendered", "", "a docker-compose config output to check instead of docker-compose.yml")
	k8sRendered := flag.String("k8s-rendered", "", "a kubectl kustomize output to check instead of infra/k8s's files")
	wallet := flag.String("test-wallet", "", "write the test wallet into this folder and exit")
	flag.Parse()
	var err error
	if *wallet != "" {
		err = writeWallet(*root, *wallet)
	} else {
		err = run(*root, *bin, *composeRendered, *k8sRendered)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "deploy-check:", err)
		os.Exit(1)
	}
}

func writeWallet(root, dir string) error {
	vars, err := deploycheck.ReadEnvFile(filepath.Join(root, "infra", "env.example"))
	if err != nil {
		return err
	}
	return deploycheck.WriteTestWallet(dir, vars)
}

func run(root, bin, composeRendered, k8sRendered string) error {
	files, err := deploycheck.Read(root, composeRendered, k8sRendered)
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
	ws := make([]deploycheck.Workload, len(results))
	for i, r := range results {
		ws[i] = r.Workload
	}
	for _, source := range []string{"compose", "kubernetes"} {
		fmt.Printf("connections %s: %s (at most %d)\n", source, deploycheck.ConnectionBudget(ws, source), config.UsableConns)
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
