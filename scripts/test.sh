#!/usr/bin/env bash
# The README's test command, in two lanes:
#
#   scripts/test.sh          # the full command; CI runs exactly this (.ci/run)
#   scripts/test.sh --quick  # the quick lane: about a minute with a warm build cache
#
# Both run gofmt and go vet, build ./cmd/caddy once into .cache/bin/caddy
# (the tests run that binary: MODELGATE_TEST_BINARY), and print at the end,
# even on failure, how long each step took.
#
# The quick lane then runs `go test -short ./...`: every package's tests
# and the integration tests on the binary, leaving to the full command the
# ones that need npm, apt, PostgreSQL, Redis or Jaeger (each says so when
# skipped; internal/testlane). It installs nothing.
#
# The full command sets up what every test needs (PostgreSQL and Redis on
# loopback, Chromium from apt, the agent CLIs and SDKs from npm, Jaeger and
# helm, the same binary through xcaddy), then runs staticcheck, the
# deployment kit's checks, a reproducible-build check, every test with
# brief benchmarks, and bounded fuzzing. PostgreSQL and Redis run on free
# ports (unless MODELGATE_PG_PORT / MODELGATE_REDIS_PORT, or
# MODELGATE_TEST_POSTGRES / MODELGATE_TEST_REDIS, are given) and are stopped
# when the script ends.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
QUICK=""
case "${1:-}" in
"") ;;
--quick) QUICK=1 ;;
*) echo "usage: scripts/test.sh [--quick]" >&2; exit 2 ;;
esac
mkdir -p .cache/bin
export CGO_ENABLED=0
export GOFLAGS="${GOFLAGS:-} -buildvcs=false"

# Each step's wall-clock time, printed by the exit trap: "seconds<TAB>name".
STEP_TIMES=()
STEP=""
clock() { local t; t=$(date +%s.%N); echo "${t%.N}"; } # %N is GNU; whole seconds elsewhere
since() { awk -v a="$1" -v b="$(clock)" 'BEGIN { printf "%.1f", b - a }'; }
RUN_START=$(clock)
STEP_START=$RUN_START
end_step() { # end_step [mark]
	if [ -n "$STEP" ]; then STEP_TIMES+=("$(since "$STEP_START")	$STEP${1:-}"); fi
	STEP=""
}
step() {
	end_step
	STEP=$*
	STEP_START=$(clock)
	printf '\n==> %s\n' "$*"
}
timings() { # timings <exit status>
	if [ "$1" -ne 0 ]; then end_step "   <- FAILED (exit $1)"; else end_step; fi
	printf '\n==> where the time went (wall clock, seconds)\n'
	local s
	for s in ${STEP_TIMES[@]+"${STEP_TIMES[@]}"}; do
		printf '%8s  %s\n' "${s%%	*}" "${s#*	}"
	done
	printf '%8s  %s\n' "$(since "$RUN_START")" "total"
	# A run that fails for want of disk (the linker's "no space left on
	# device") says so here, beside how much the checkout's caches hold.
	if [ "$1" -ne 0 ]; then
		printf '\n==> disk at the end\n'
		disk_report
	fi
}

# disk_report prints the free space where the run writes (the checkout,
# the Go build cache, the temporary directory) and the size of .cache.
disk_report() {
	df -h "$ROOT" "$(go env GOCACHE 2>/dev/null || echo "$ROOT")" "${TMPDIR:-/tmp}" 2>/dev/null | awk 'NR == 1 || !seen[$0]++' || true
	du -sh "$ROOT/.cache" 2>/dev/null || true
}

# free_port prints a loopback port nothing listens on.
free_port() {
	local p
	for _ in $(seq 1 100); do
		p=$((20000 + RANDOM % 40000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return 0
		fi
	done
	echo "no free port found" >&2
	return 1
}

# Services this run started, stopped on any exit.
STARTED_PG=""
STARTED_REDIS=""
cleanup() {
	local rc=$?
	timings "$rc"
	for pid in ${JAEGER_BUILD:-} ${HELM_BUILD:-}; do kill "$pid" 2>/dev/null || true; done
	if [ -n "$STARTED_PG" ]; then
		bash scripts/postgres.sh "$ROOT/.cache/pg" stop >/dev/null 2>&1 || true
	fi
	if [ -n "$STARTED_REDIS" ]; then
		MODELGATE_REDIS_PORT=$STARTED_REDIS bash scripts/redis.sh "$ROOT/.cache/redis" stop || true
	fi
}
trap cleanup EXIT

step "go $(go version | cut -d' ' -f3)"
disk_report
go mod download

step "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.cache/*'))
if [ -n "$unformatted" ]; then echo "not gofmt-clean:"; echo "$unformatted"; exit 1; fi

step "go vet"
go vet ./...

step "build ./cmd/caddy"
# Without -trimpath, so it links the packages go vet has just compiled and
# go test compiles alike; the tests run this binary and never build their
# own (internal/testbin). The release check and xcaddy below build with
# -trimpath, as releases are, and share those compiles with each other.
go build -o .cache/bin/caddy ./cmd/caddy
export MODELGATE_TEST_BINARY="$ROOT/.cache/bin/caddy"
.cache/bin/caddy list-modules | grep -E '^(modelgate|http\.handlers\.llm_)'

if [ -n "$QUICK" ]; then
	step "go test -short (the quick lane)"
	# The tests needing PostgreSQL, Redis, Jaeger, npm clients or
	# Chromium are the full command's: -short skips them, naming why.
	go test -short -count=1 -timeout 10m ./...
	step "quick lane passed (the full command: ./scripts/test.sh)"
	exit 0
fi

step "staticcheck"
if ! command -v staticcheck >/dev/null 2>&1 && [ ! -x "$(go env GOPATH)/bin/staticcheck" ]; then
	go install "honnef.co/go/tools/cmd/staticcheck@v0.8.2"
fi
# The default checks plus ST1020-ST1022: a doc comment starts with the
# name of what it documents, so a rename cannot leave it behind.
"$(command -v staticcheck || echo "$(go env GOPATH)/bin/staticcheck")" -checks inherit,ST1020,ST1021,ST1022 ./...

# Jaeger and helm are Go programs built from the module proxy (minutes of
# CPU on 2 cores the first time). They build in the background from here,
# after go vet, the binary and staticcheck have had the CPU to themselves,
# while the network-bound installs below run; their steps wait for them.
bash scripts/jaeger.sh >.cache/jaeger-build.log 2>&1 &
JAEGER_BUILD=$!
bash scripts/helm.sh >.cache/helm-build.log 2>&1 &
HELM_BUILD=$!

step "PostgreSQL on loopback"
if [ -z "${MODELGATE_TEST_POSTGRES:-}" ]; then
	# A cluster already running in .cache/pg (someone else's run) is
	# reused on its port and left running.
	if ! [ -f "$ROOT/.cache/pg/data/postmaster.pid" ]; then
		STARTED_PG=1
	fi
	export MODELGATE_PG_PORT=${MODELGATE_PG_PORT:-$(free_port)}
	MODELGATE_TEST_POSTGRES=$(bash scripts/postgres.sh "$ROOT/.cache/pg" | tail -n1)
	MODELGATE_TEST_POSTGRES=${MODELGATE_TEST_POSTGRES#MODELGATE_TEST_POSTGRES=}
fi
export MODELGATE_TEST_POSTGRES
case "$MODELGATE_TEST_POSTGRES" in
postgres://*) echo "PostgreSQL ready for the store tests" ;;
*) echo "scripts/postgres.sh gave no DSN"; exit 1 ;;
esac

step "Redis on loopback"
if [ -z "${MODELGATE_TEST_REDIS:-}" ]; then
	if [ -z "${MODELGATE_REDIS_PORT:-}" ]; then
		MODELGATE_REDIS_PORT=$(free_port)
		STARTED_REDIS=$MODELGATE_REDIS_PORT
	fi
	export MODELGATE_REDIS_PORT
	MODELGATE_TEST_REDIS=$(bash scripts/redis.sh "$ROOT/.cache/redis" | tail -n1)
	MODELGATE_TEST_REDIS=${MODELGATE_TEST_REDIS#MODELGATE_TEST_REDIS=}
fi
export MODELGATE_TEST_REDIS
case "$MODELGATE_TEST_REDIS" in
redis://*) echo "Redis ready for the shared rate-limit tests" ;;
*) echo "scripts/redis.sh gave no URL"; exit 1 ;;
esac

step "Chromium (dashboard browser tests)"
if ! command -v chromium >/dev/null 2>&1; then
	echo "installing chromium with apt (about 300 MB; needs root or sudo)"
	if [ "$(id -u)" -eq 0 ]; then
		DEBIAN_FRONTEND=noninteractive apt-get install -y chromium >/dev/null 2>&1 ||
			{ apt-get update >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium >/dev/null 2>&1; } ||
			echo "chromium install failed; the dashboard browser test will say so"
	else
		sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y chromium >/dev/null 2>&1 || echo "chromium install failed"
	fi
fi
command -v chromium >/dev/null 2>&1 && chromium --version

step "Claude Code (npm)"
if [ -z "${MODELGATE_CLAUDE_BIN:-}" ] && command -v npm >/dev/null 2>&1; then
	if MODELGATE_CLAUDE_BIN=$(bash scripts/claude-code.sh | tail -n1); then
		export MODELGATE_CLAUDE_BIN
		echo "claude at $MODELGATE_CLAUDE_BIN"
	else
		echo "claude-code install failed; its end-to-end tests will say so"
		unset MODELGATE_CLAUDE_BIN
	fi
fi

step "Codex CLI (npm)"
if [ -z "${MODELGATE_CODEX_BIN:-}" ] && command -v npm >/dev/null 2>&1; then
	if MODELGATE_CODEX_BIN=$(bash scripts/codex.sh | tail -n1); then
		export MODELGATE_CODEX_BIN
		echo "codex at $MODELGATE_CODEX_BIN"
	else
		echo "codex install failed; its end-to-end tests will say so"
		unset MODELGATE_CODEX_BIN
	fi
fi

step "Gemini CLI (npm)"
if [ -z "${MODELGATE_GEMINI_CLI_BIN:-}" ] && command -v npm >/dev/null 2>&1; then
	if MODELGATE_GEMINI_CLI_BIN=$(bash scripts/gemini-cli.sh | tail -n1); then
		export MODELGATE_GEMINI_CLI_BIN
		echo "gemini at $MODELGATE_GEMINI_CLI_BIN"
	else
		echo "gemini-cli install failed; its end-to-end test will say so"
		unset MODELGATE_GEMINI_CLI_BIN
	fi
fi

step "Reference MCP servers (npm)"
# About 40 s on a clean machine: server-everything and server-filesystem
# for the MCP gateway's integration tests (TestMCPReferenceServers).
if [ -z "${MODELGATE_TEST_MCP_EVERYTHING:-}" ] && command -v npm >/dev/null 2>&1; then
	if mcp_servers=$(bash scripts/mcp-servers.sh | tail -n2); then
		eval "$(echo "$mcp_servers" | sed 's/^/export /')"
		echo "$mcp_servers"
	else
		echo "reference MCP servers install failed; their tests will say so"
	fi
fi

step "opencode and Qwen Code (npm)"
# About 45 s on a clean machine (two npm installs); opencode also fetches
# its provider package from npm on its first run.
if command -v npm >/dev/null 2>&1; then
	if [ -z "${MODELGATE_OPENCODE_BIN:-}" ]; then
		if MODELGATE_OPENCODE_BIN=$(bash scripts/opencode.sh | tail -n1); then
			export MODELGATE_OPENCODE_BIN
		else
			echo "opencode install failed; its end-to-end test will say so"
			unset MODELGATE_OPENCODE_BIN
		fi
	fi
	if [ -z "${MODELGATE_QWEN_BIN:-}" ]; then
		if MODELGATE_QWEN_BIN=$(bash scripts/qwen-code.sh | tail -n1); then
			export MODELGATE_QWEN_BIN
		else
			echo "qwen-code install failed; its end-to-end test will say so"
			unset MODELGATE_QWEN_BIN
		fi
	fi
fi

step "Node SDKs: openai, @anthropic-ai/sdk, @google/genai (npm)"
# About 20 s on a clean machine.
if [ -z "${MODELGATE_NODE_SDKS_DIR:-}" ] && command -v npm >/dev/null 2>&1; then
	if MODELGATE_NODE_SDKS_DIR=$(bash scripts/node-sdks.sh | tail -n1); then
		export MODELGATE_NODE_SDKS_DIR
	else
		echo "node SDKs install failed; their end-to-end test will say so"
		unset MODELGATE_NODE_SDKS_DIR
	fi
fi

step "Vercel AI SDK (npm)"
if [ -z "${MODELGATE_AISDK_DIR:-}" ] && command -v npm >/dev/null 2>&1; then
	if MODELGATE_AISDK_DIR=$(bash scripts/ai-sdk.sh | tail -n1); then
		export MODELGATE_AISDK_DIR
	else
		echo "ai-sdk install failed; its end-to-end test will say so"
		unset MODELGATE_AISDK_DIR
	fi
fi

step "OpenAI Agents SDK (npm @openai/agents)"
if [ -z "${MODELGATE_OPENAI_AGENTS_DIR:-}" ] && command -v npm >/dev/null 2>&1; then
	if MODELGATE_OPENAI_AGENTS_DIR=$(bash scripts/openai-agents.sh | tail -n1); then
		export MODELGATE_OPENAI_AGENTS_DIR
	else
		echo "openai-agents install failed; its end-to-end test will say so"
		unset MODELGATE_OPENAI_AGENTS_DIR
	fi
fi

step "OpenID provider for the identity tests (npm oidc-provider)"
if [ -z "${MODELGATE_TEST_OIDC_PROVIDER:-}" ] && command -v npm >/dev/null 2>&1; then
	if MODELGATE_TEST_OIDC_PROVIDER=$(bash scripts/oidc-provider.sh | tail -n1); then
		export MODELGATE_TEST_OIDC_PROVIDER
		echo "oidc-provider in $MODELGATE_TEST_OIDC_PROVIDER"
	else
		echo "oidc-provider install failed; the identity tests will say so"
		unset MODELGATE_TEST_OIDC_PROVIDER
	fi
fi

step "Jaeger (OpenTelemetry tests)"
if [ -z "${MODELGATE_TEST_JAEGER:-}" ]; then
	wait "$JAEGER_BUILD" || tail -n 20 .cache/jaeger-build.log
	if MODELGATE_TEST_JAEGER=$(bash scripts/jaeger.sh | tail -n1); then
		export MODELGATE_TEST_JAEGER
		echo "jaeger at $MODELGATE_TEST_JAEGER"
	else
		echo "Jaeger build failed; the OpenTelemetry tests will say so"
		unset MODELGATE_TEST_JAEGER
	fi
fi

step "xcaddy build from this checkout (bounded)"
# docs/deploying.md's xcaddy line ("Build"), as a user runs it from a clone: Caddy at the
# version go.mod pins, Modelgate replaced by this directory. It reuses the
# Go build cache; the first build takes minutes on 2 cores.
XCADDY_VERSION=v0.4.5
CADDY_VERSION=$(go list -m -f '{{.Version}}' github.com/caddyserver/caddy/v2)
MG_VERSION=$(sed -n 's/^const Version = "\(.*\)"$/\1/p' caddymodule/version.go)
XCADDY="$(go env GOPATH)/bin/xcaddy"
# Outputs are captured before grep reads them: under pipefail, grep -q
# leaving early could kill the writer with SIGPIPE and fail the step.
if [ ! -x "$XCADDY" ] || [[ "$("$XCADDY" version 2>/dev/null || true)" != *"$XCADDY_VERSION"* ]]; then
	go install "github.com/caddyserver/xcaddy/cmd/xcaddy@$XCADDY_VERSION"
fi
rm -f .cache/bin/caddy-xcaddy
timeout "${XCADDY_TIMEOUT:-30m}" "$XCADDY" build "$CADDY_VERSION" \
	--with "github.com/modelgate/modelgate@$MG_VERSION=." --output .cache/bin/caddy-xcaddy 2>.cache/xcaddy.log ||
	{ tail -n 30 .cache/xcaddy.log; echo "xcaddy build failed (log: .cache/xcaddy.log)"; exit 1; }
xmodules=$(.cache/bin/caddy-xcaddy list-modules)
grep -qx 'http.handlers.llm_gateway' <<<"$xmodules" || { echo "xcaddy build lacks llm_gateway"; exit 1; }
xversion=$(.cache/bin/caddy-xcaddy version)
echo "$xversion"
grep -q "^Modelgate $MG_VERSION on Caddy $CADDY_VERSION" <<<"$xversion" ||
	{ echo "xcaddy build does not name Modelgate $MG_VERSION"; exit 1; }

step "deployment kit: helm chart, systemd unit, container (deploy/)"
# helm from the Go module proxy at a pinned version (scripts/helm.sh: a
# few minutes' build on first use, cached in .cache/bin); every rendered
# manifest decoded strictly into k8s.io/api types by deploy/chartcheck, its
# own module so the gateway's has no Kubernetes dependency; the chart's
# Caddyfile and the image's parsed by this caddy.
wait "$HELM_BUILD" || tail -n 20 .cache/helm-build.log
HELM=$(bash scripts/helm.sh | tail -n1)
"$HELM" lint deploy/helm/modelgate --set existingSecret=modelgate-keys
"$HELM" template modelgate deploy/helm/modelgate --set existingSecret=modelgate-keys \
	--set serviceMonitor.enabled=true --set serviceMonitor.bearerTokenSecret.name=modelgate-keys >.cache/chart.yaml
if "$HELM" template modelgate deploy/helm/modelgate >/dev/null 2>&1; then
	echo "the chart rendered without existingSecret; it must refuse"; exit 1
fi
mkdir -p .cache/chart-config
(cd deploy/chartcheck && go test ./... && go run . -extract "$ROOT/.cache/chart-config") <.cache/chart.yaml
for cf in .cache/chart-config/Caddyfile deploy/Caddyfile deploy/compose/Caddyfile; do
	.cache/bin/caddy adapt --config "$cf" --adapter caddyfile >/dev/null
done
echo "Caddyfiles of the chart, the image and compose parse"
if command -v systemd-analyze >/dev/null 2>&1; then
	# verify needs the ExecStart binary to exist: point it at this build.
	mkdir -p .cache/systemd
	sed "s#/usr/local/bin/modelgate#$ROOT/.cache/bin/caddy#g" deploy/systemd/modelgate.service >.cache/systemd/modelgate.service
	systemd-analyze verify .cache/systemd/modelgate.service
	# Exposure 2.0 or less ("OK") on systemd's 0-10 scale.
	systemd-analyze security --offline=true --threshold=20 .cache/systemd/modelgate.service >/dev/null
	echo "systemd unit verified, exposure within 2.0"
elif [ "${CI:-}" = true ]; then
	echo "systemd-analyze is missing under CI"; exit 1
else
	echo "SKIP systemd unit: systemd-analyze is not installed"
fi
if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
	docker build -q -f deploy/Dockerfile -t modelgate:test .
	docker run --rm --read-only modelgate:test version
else
	echo "SKIP docker build: no Docker daemon answers here (docker info fails); chartcheck's TestDockerfile checked the Dockerfile instead (its go build has release.sh's flags, which the quick release build below runs; builder = go.mod's toolchain; COPY sources exist; distroless, non-root)"
fi
if command -v docker >/dev/null 2>&1 && docker compose version >/dev/null 2>&1; then
	docker compose -f deploy/compose.yaml config -q && echo "compose.yaml valid"
else
	echo "SKIP docker compose config: the compose plugin is not installed; chartcheck's TestCompose decoded compose.yaml strictly instead"
fi

step "supply chain: reproducible build (quick), govulncheck"
# The quick form of scripts/release.sh: linux/amd64 built with the release
# flags, rebuilt from a copy of the source at another path (warm build
# cache), byte-compared. The full check (every platform, empty cache) is
# the release script's.
MODELGATE_RELEASE_QUICK=1 bash scripts/release.sh .cache/dist-check >/dev/null
echo "linux/amd64 rebuilt bit for bit from another path"
GOBIN=$ROOT/.cache/bin go install golang.org/x/vuln/cmd/govulncheck@v1.9.0
if curl -fsS -m 10 -o /dev/null https://vuln.go.dev/index/db.json.gz 2>/dev/null; then
	# Reported, not fatal here: a newly published advisory in a dependency
	# must not stop every merge; scripts/release.sh refuses to release
	# while govulncheck finds one.
	.cache/bin/govulncheck ./... || echo "govulncheck found vulnerabilities (above): scripts/release.sh will refuse to release until they are fixed"
else
	echo "SKIP govulncheck: the vulnerability database (https://vuln.go.dev) cannot be reached from here;" \
		"scripts/release.sh runs it and refuses to release without it"
fi

step "go test, with brief benchmarks"
# One run links each package's test binary once for its tests and its
# benchmarks (a separate -bench run would link every one again).
go test -count=1 -timeout 20m -bench=. -benchtime=100x -benchmem ./...

step "fuzz (bounded)"
# Each package with fuzz targets is compiled, instrumented, once
# (go test -c -fuzz), and that binary fuzzes each of its targets in turn
# from the package's directory (its testdata/fuzz corpus), with the fuzz
# cache go test itself would use. A count, not a duration: Go 1.26's fuzz
# coordinator can report a spurious "context deadline exceeded" when a
# duration budget expires (golang/go#75804); a count has no deadline to race.
# Minimizing is bounded by a count too: by default each new input is
# shrunk for up to 60 s, and a few large ones (a 77 kB Claude Code
# request is a seed) could take a target near its 5-minute timeout and
# fail CI with no bug found.
FUZZTIME=${FUZZTIME:-20000x}
FUZZCACHE="$(go env GOCACHE)/fuzz"
mkdir -p .cache/fuzz
for pkg in $(go list ./...); do
	dir=$(go list -f '{{.Dir}}' "$pkg")
	# (|| true: a package without tests or fuzz targets makes grep fail,
	# which pipefail and set -e would turn into the script's failure)
	targets=$(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u || true)
	[ -n "$targets" ] || continue
	bin="$ROOT/.cache/fuzz/$(tr / _ <<<"$pkg").test"
	go test -c -fuzz=. -o "$bin" "$pkg"
	for fz in $targets; do
		echo "--- $pkg $fz"
		if ! out=$(cd "$dir" && "$bin" -test.run='^$' -test.fuzz="^${fz}\$" -test.fuzztime="$FUZZTIME" \
			-test.fuzzminimizetime=1000x -test.fuzzcachedir="$FUZZCACHE/$pkg" -test.timeout=5m 2>&1); then
			echo "$out"
			exit 1
		fi
	done
done

step "all checks passed"
