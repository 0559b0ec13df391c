package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
)

// startPortkey installs @portkey-ai/gateway from npm into .cache/portkey
// (once) and starts it on a free loopback port. Its HEAD / answers 500, so
// readiness is probed with GET /.
func startPortkey(ctx context.Context) (*child, string, error) {
	if _, err := exec.LookPath("npm"); err != nil {
		return nil, "", fmt.Errorf("npm is not installed")
	}
	dir, err := filepath.Abs(filepath.Join(".cache", "portkey"))
	if err != nil {
		return nil, "", err
	}
	pkgDir := filepath.Join(dir, "node_modules", "@portkey-ai", "gateway")
	if _, err := os.Stat(filepath.Join(pkgDir, "package.json")); err != nil {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, "", err
		}
		cmd := exec.CommandContext(ctx, "npm", "install", "--prefix", dir, "--no-audit", "--no-fund", "@portkey-ai/gateway")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return nil, "", fmt.Errorf("npm install @portkey-ai/gateway: %w", err)
		}
	}
	entry, err := packageBin(filepath.Join(pkgDir, "package.json"))
	if err != nil {
		return nil, "", err
	}
	port, err := freePort()
	if err != nil {
		return nil, "", err
	}
	cmd := exec.Command("node", filepath.Join(pkgDir, entry), fmt.Sprintf("--port=%d", port))
	cmd.Dir = dir
	c, err := start("portkey", cmd)
	if err != nil {
		return nil, "", err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	if err := waitReady(ctx, c, probeHTTP(http.MethodGet, "http://"+addr+"/", nil, nil, "")); err != nil {
		c.stop()
		return nil, "", err
	}
	return c, "http://" + addr, nil
}

// packageBin reads the script a package.json names as its command.
func packageBin(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	var pkg struct {
		Bin  json.RawMessage `json:"bin"`
		Main string          `json:"main"`
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	var one string
	if json.Unmarshal(pkg.Bin, &one) == nil && one != "" {
		return one, nil
	}
	var many map[string]string
	if json.Unmarshal(pkg.Bin, &many) == nil {
		for _, v := range many {
			return v, nil
		}
	}
	if pkg.Main != "" {
		return pkg.Main, nil
	}
	return "", fmt.Errorf("%s names no bin or main", path)
}
