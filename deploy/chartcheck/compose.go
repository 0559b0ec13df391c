package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// composeFile is the part of the Compose specification deploy/compose.yaml
// uses. Decoding into it strictly makes a misspelled key fail the test
// command where `docker compose config` is not installed.
type composeFile struct {
	Name     string                     `json:"name"`
	Services map[string]composeService  `json:"services"`
	Volumes  map[string]*composeVolume  `json:"volumes"`
	Networks map[string]json.RawMessage `json:"networks"`
}

type composeVolume struct {
	Driver string `json:"driver"`
}

type composeService struct {
	Build *struct {
		Context    string `json:"context"`
		Dockerfile string `json:"dockerfile"`
	} `json:"build"`
	Image       string            `json:"image"`
	Command     []string          `json:"command"`
	ReadOnly    bool              `json:"read_only"`
	CapDrop     []string          `json:"cap_drop"`
	SecurityOpt []string          `json:"security_opt"`
	Environment map[string]string `json:"environment"`
	Volumes     []string          `json:"volumes"`
	Tmpfs       []string          `json:"tmpfs"`
	Ports       []string          `json:"ports"`
	DependsOn   map[string]struct {
		Condition string `json:"condition"`
	} `json:"depends_on"`
	Restart     string `json:"restart"`
	Healthcheck *struct {
		Test     []string `json:"test"`
		Interval string   `json:"interval"`
		Timeout  string   `json:"timeout"`
		Retries  int      `json:"retries"`
	} `json:"healthcheck"`
}

// checkCompose decodes the compose file at path strictly (extension keys,
// x-…, aside) and checks its references: dependencies name services with
// the condition Compose knows, named volumes are declared, bind-mounted
// files and the Dockerfile exist.
func checkCompose(path string) (*composeFile, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return decodeCompose(path, raw)
}

// decodeCompose is checkCompose of the bytes raw of the file at path.
func decodeCompose(path string, raw []byte) (*composeFile, error) {
	// YAML to JSON resolves anchors and merge keys as Compose does.
	js, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(js, &top); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for k := range top {
		if strings.HasPrefix(k, "x-") {
			delete(top, k)
		}
	}
	js, _ = json.Marshal(top)
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	var f composeFile
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	dir := filepath.Dir(path)
	if len(f.Services) == 0 {
		return nil, fmt.Errorf("%s: no services", path)
	}
	for name, s := range f.Services {
		if s.Image == "" && s.Build == nil {
			return nil, fmt.Errorf("%s: service %s has neither image nor build", path, name)
		}
		if s.Build != nil {
			df := filepath.Join(dir, s.Build.Context, s.Build.Dockerfile)
			if _, err := os.Stat(df); err != nil {
				return nil, fmt.Errorf("%s: service %s: build: %w", path, name, err)
			}
		}
		for dep, d := range s.DependsOn {
			if _, ok := f.Services[dep]; !ok {
				return nil, fmt.Errorf("%s: service %s depends on %s, which is not a service", path, name, dep)
			}
			switch d.Condition {
			case "", "service_started", "service_healthy", "service_completed_successfully":
			default:
				return nil, fmt.Errorf("%s: service %s: depends_on %s: unknown condition %q", path, name, dep, d.Condition)
			}
			if d.Condition == "service_healthy" && f.Services[dep].Healthcheck == nil {
				return nil, fmt.Errorf("%s: service %s waits for %s to be healthy, which has no healthcheck", path, name, dep)
			}
		}
		for _, v := range s.Volumes {
			src, _, ok := strings.Cut(v, ":")
			if !ok {
				return nil, fmt.Errorf("%s: service %s: volume %q has no target", path, name, v)
			}
			if strings.HasPrefix(src, ".") || strings.HasPrefix(src, "/") {
				if _, err := os.Stat(filepath.Join(dir, src)); err != nil {
					return nil, fmt.Errorf("%s: service %s: bind mount: %w", path, name, err)
				}
			} else if _, ok := f.Volumes[src]; !ok {
				return nil, fmt.Errorf("%s: service %s: volume %s is not declared under volumes", path, name, src)
			}
		}
	}
	return &f, nil
}
