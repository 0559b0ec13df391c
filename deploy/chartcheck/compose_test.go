package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestCompose: deploy/compose.yaml decodes strictly into the Compose keys
// it uses and its references hold: two gateways built from the Dockerfile,
// hardened, waiting for PostgreSQL and Redis, exporting to Jaeger. A typo
// fails here, where `docker compose config` is not installed.
func TestCompose(t *testing.T) {
	f, err := checkCompose("../compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"gateway-1", "gateway-2"} {
		s, ok := f.Services[name]
		if !ok {
			t.Fatalf("no service %s", name)
		}
		if !s.ReadOnly || len(s.CapDrop) == 0 || s.Build == nil {
			t.Errorf("%s: read_only %v, cap_drop %v, build %v", name, s.ReadOnly, s.CapDrop, s.Build)
		}
		if !strings.HasPrefix(s.Environment["OTEL_EXPORTER_OTLP_ENDPOINT"], "http://jaeger:") {
			t.Errorf("%s: traces go to %q", name, s.Environment["OTEL_EXPORTER_OTLP_ENDPOINT"])
		}
		for _, dep := range []string{"postgres", "redis"} {
			if s.DependsOn[dep].Condition != "service_healthy" {
				t.Errorf("%s does not wait for %s", name, dep)
			}
		}
	}
	for _, name := range []string{"postgres", "redis", "jaeger"} {
		if _, ok := f.Services[name]; !ok {
			t.Errorf("no service %s", name)
		}
	}
}

// TestComposeStrict: the checks catch a misspelled key and a dangling
// reference.
func TestComposeStrict(t *testing.T) {
	raw, err := os.ReadFile("../compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ from, to, want string }{
		{"read_only: true", "readonly: true", "readonly"},
		{"condition: service_healthy", "condition: service_up", "service_up"},
		{"[pgdata:/var", "[pgdta:/var", "pgdta"},
	} {
		if _, err := decodeCompose("../compose.yaml", []byte(strings.Replace(string(raw), c.from, c.to, 1))); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s → %s: %v", c.from, c.to, err)
		}
	}
}

// TestDockerfile: where no Docker daemon runs `docker build` is skipped,
// so the Dockerfile is checked against the build the test command does
// run: its go build uses scripts/release.sh's flags (the quick release
// build in the test command is then the image's build), its builder is
// the toolchain go.mod names, every COPY source exists, and the image runs
// as non-root on distroless.
func TestDockerfile(t *testing.T) {
	df := read(t, "../Dockerfile")
	rel := read(t, "../../scripts/release.sh")
	gomod := read(t, "../../go.mod")
	if !strings.Contains(df, `CGO_ENABLED=0`) || !strings.Contains(df, `-trimpath -buildvcs=false`) {
		t.Error("the Dockerfile's go build is not static and trimmed")
	}
	m := regexp.MustCompile(`-ldflags="([^"]*)"`).FindStringSubmatch(df)
	r := regexp.MustCompile(`(?m)^LDFLAGS="([^"]*)"`).FindStringSubmatch(rel)
	if m == nil || r == nil || m[1] != r[1] {
		t.Errorf("ldflags: Dockerfile %v, release.sh %v", m, r)
	}
	if !strings.Contains(rel, `GOFLAGS="-trimpath -buildvcs=false"`) {
		t.Error("release.sh's GOFLAGS changed: update the Dockerfile's go build with it")
	}
	tc := regexp.MustCompile(`(?m)^toolchain go(\S+)`).FindStringSubmatch(gomod)
	if tc == nil || !strings.Contains(df, "FROM golang:"+tc[1]+" ") && !strings.Contains(df, "FROM golang:"+tc[1]+"@") {
		t.Errorf("the builder image is not go.mod's toolchain %v", tc)
	}
	if !regexp.MustCompile(`(?m)^FROM gcr\.io/distroless/static`).MatchString(df) || !strings.Contains(df, "USER 65532:65532") {
		t.Error("the runtime image is not distroless static as non-root")
	}
	for _, l := range strings.Split(df, "\n") {
		f := strings.Fields(l)
		if len(f) < 3 || f[0] != "COPY" || strings.HasPrefix(f[1], "--from") {
			continue
		}
		for _, src := range f[1 : len(f)-1] {
			if strings.HasPrefix(src, "--") || src == "." {
				continue
			}
			if _, err := os.Stat(filepath.Join("../..", src)); err != nil {
				t.Errorf("COPY %s: %v", src, err)
			}
		}
	}
}

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
