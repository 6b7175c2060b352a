package deploycheck

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// TestHotkey is //Alice's hotkey file (the well-known development key, never a real validator's):
// the test value of the wallet the deployment files mount.
const TestHotkey = `{"secretSeed": "0xe5be9a5092b81bca64be81d212e7f2f9eba183bb7a90954f7b76361f6edb5c0a"}`

// Files are the deployment files as read, before resolution.
type Files struct {
	Root    string            // the repository root (compose's project folder)
	Compose map[string]any    // docker-compose.yml
	Vars    map[string]string // the variables compose interpolates (infra/env.example's test values)
	K8s     []map[string]any  // the Kubernetes objects (infra/k8s or its rendering)
}

// Read reads docker-compose.yml, infra/env.example and the Kubernetes base under root.
// composeRendered, when not empty, is a `docker-compose config` output to use instead of
// docker-compose.yml (its variables already interpolated); k8sRendered a `kubectl kustomize
// infra/k8s` output to use instead of the base.
func Read(root, composeRendered, k8sRendered string) (Files, error) {
	f := Files{Root: root}
	composeFile := filepath.Join(root, "docker-compose.yml")
	if composeRendered != "" {
		composeFile = composeRendered
	}
	data, err := os.ReadFile(composeFile)
	if err != nil {
		return f, err
	}
	if f.Compose, err = ReadYAML(data); err != nil {
		return f, fmt.Errorf("%s: %w", composeFile, err)
	}
	if f.Vars, err = ReadEnvFile(filepath.Join(root, "infra", "env.example")); err != nil {
		return f, err
	}
	if k8sRendered == "" {
		f.K8s, err = Kustomization(filepath.Join(root, "infra", "k8s"))
		return f, err
	}
	if data, err = os.ReadFile(k8sRendered); err != nil {
		return f, err
	}
	f.K8s, err = ReadDocs(data)
	return f, err
}

// WriteTestWallet writes TestHotkey into wallets in Bittensor's layout, at the wallet and
// hotkey the variables name (BITTENSOR_WALLET_NAME, BITTENSOR_WALLET_HOTKEY_NAME or default).
func WriteTestWallet(wallets string, vars map[string]string) error {
	hotkey := vars["BITTENSOR_WALLET_HOTKEY_NAME"]
	if hotkey == "" {
		hotkey = "default"
	}
	dir := filepath.Join(wallets, vars["BITTENSOR_WALLET_NAME"], "hotkeys")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, hotkey), []byte(TestHotkey), 0o600)
}

// Workloads resolves every workload of both files. tmp holds what the test values need on disk:
// a wallets folder with TestHotkey at the wallet env.example names (it replaces
// DROVER_WALLET_DIR, a folder of the deploying host) and the Kubernetes volumes, whose Secret
// drover-wallet gets TestHotkey in place of the template's placeholder. It also returns the
// problems of the files as a whole: a binary one of them does not run.
func (f Files) Workloads(tmp string) ([]Workload, []string, error) {
	vars := map[string]string{}
	for k, v := range f.Vars {
		vars[k] = v
	}
	if _, ok := vars["DROVER_WALLET_DIR"]; ok {
		wallets := filepath.Join(tmp, "wallets")
		if err := WriteTestWallet(wallets, vars); err != nil {
			return nil, nil, err
		}
		vars["DROVER_WALLET_DIR"] = wallets
	}
	compose, err := Compose(f.Compose, vars, f.Root)
	if err != nil {
		return nil, nil, err
	}
	k8s, err := Kubernetes(f.K8s, filepath.Join(tmp, "k8s"), map[string]string{"drover-wallet/hotkey": TestHotkey})
	if err != nil {
		return nil, nil, err
	}
	var problems []string
	for _, b := range Missing(compose) {
		problems = append(problems, fmt.Sprintf("docker-compose.yml runs no %s", b))
	}
	for _, b := range Missing(k8s) {
		problems = append(problems, fmt.Sprintf("infra/k8s runs no %s", b))
	}
	ws := append(compose, k8s...)
	for _, source := range []string{"compose", "kubernetes"} {
		if p := ConnectionBudget(ws, source).Problem(); p != "" {
			problems = append(problems, p)
		}
	}
	return ws, problems, nil
}

// CheckAll resolves every workload and runs each binary's check-config with its environment.
func (f Files) CheckAll(ctx context.Context, binDir, tmp string) ([]Result, []string, error) {
	ws, problems, err := f.Workloads(tmp)
	if err != nil {
		return nil, nil, err
	}
	results := make([]Result, 0, len(ws))
	for _, w := range ws {
		results = append(results, Run(ctx, binDir, w))
	}
	return results, problems, nil
}
