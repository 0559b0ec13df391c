#!/bin/sh
# Compatibility table: installs the latest release of each coding agent and
# SDK (or, with COMPAT_PINNED=1, the pinned versions the test command and CI
# use), runs each one's end-to-end test through a locally started gateway on
# loopback fakes (a text turn, and a tool loop on a chat-completions-only
# backend where the client has tools), and prints a Markdown table of
# versions and results. The tests are the integration package's own
# (integration/*_test.go); this script only picks the client binaries and
# reads `go test -v` for PASS/FAIL/SKIP per subtest. Logs land in
# .cache/compat/logs.
#
#   scripts/compat.sh              # latest from npm
#   COMPAT_PINNED=1 scripts/compat.sh
#   COMPAT_ONLY="codex opencode" scripts/compat.sh
#
# Installs are bounded by COMPAT_INSTALL_TIMEOUT seconds each (default 300).
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
pinned=${COMPAT_PINNED:-0}
only=${COMPAT_ONLY:-}
limit=${COMPAT_INSTALL_TIMEOUT:-300}
work="$root/.cache/compat"
logs="$work/logs"
mkdir -p "$logs"
command -v npm >/dev/null 2>&1 || { echo "compat.sh: npm is needed to install the clients" >&2; exit 1; }
command -v node >/dev/null 2>&1 || { echo "compat.sh: node is needed to run the clients" >&2; exit 1; }

# latest <dir> <packages…>: installs the packages at their latest version
# into $work/<dir> (npm updates what is there) and prints the directory.
latest() {
	d="$work/$1"
	shift
	mkdir -p "$d"
	[ -f "$d/package.json" ] || printf '{"name":"modelgate-compat","private":true,"type":"module"}\n' >"$d/package.json"
	pkgs=""
	for p in "$@"; do pkgs="$pkgs $p@latest"; done
	# shellcheck disable=SC2086 # the package list is meant to split
	timeout "$limit" npm install --prefix "$d" --no-audit --no-fund --loglevel=error $pkgs >&2 || return 1
	echo "$d"
}

# version <node_modules dir> <package>: the installed version.
version() {
	node -p "require('$1/node_modules/$2/package.json').version" 2>/dev/null || echo "?"
}

# pinned <script>: runs a pinned installer, printing its last line.
pinned_install() {
	timeout "$limit" sh "scripts/$1" | tail -n1
}

wanted() {
	[ -z "$only" ] && return 0
	case " $only " in *" $1 "*) return 0 ;; esac
	return 1
}

echo "building the gateway" >&2
go build -o .cache/bin/caddy ./cmd/caddy
export MODELGATE_TEST_BINARY="$root/.cache/bin/caddy"

rows=""
# row <client> <version> <text> <tool>: one line of the table.
row() {
	rows="$rows| $1 | $2 | $3 | $4 |
"
}

# result <log> <test> <subtest regexp…>: PASS, FAIL or SKIP of the first
# matching subtest line, else of the test.
result() {
	log=$1
	test=$2
	shift 2
	for sub in "$@"; do
		r=$(grep -E -- "--- (PASS|FAIL|SKIP): $test/$sub " "$log" | head -n1 | sed -E 's/.*--- (PASS|FAIL|SKIP).*/\1/')
		[ -n "$r" ] && { mark "$r"; return; }
	done
	r=$(grep -E -- "--- (PASS|FAIL|SKIP): $test " "$log" | head -n1 | sed -E 's/.*--- (PASS|FAIL|SKIP).*/\1/')
	mark "${r:-FAIL}"
}

mark() {
	case $1 in
	PASS) echo "✓" ;;
	SKIP) echo "skipped" ;;
	*) echo "✗" ;;
	esac
}

# run <test> <env assignment>: the test's log file.
run() {
	log="$logs/$1.log"
	env "$2" go test ./integration -run "^$1\$" -count=1 -v -timeout 15m >"$log" 2>&1 || true
	echo "$log"
}

# agent <name> <label> <package> <bin> <pinned script> <env var> <test>
# <text subtest> <tool subtest…>
agent() {
	name=$1 label=$2 pkg=$3 bin=$4 script=$5 var=$6 test=$7 text=$8
	shift 8
	wanted "$name" || return 0
	echo "$label: installing" >&2
	if [ "$pinned" = 1 ]; then
		path=$(pinned_install "$script") || path=""
	else
		d=$(latest "$name" "$pkg") && path="$d/node_modules/.bin/$bin" || path=""
	fi
	if [ -z "$path" ] || [ ! -x "$path" ]; then
		row "$label" "install failed" "-" "-"
		return 0
	fi
	v=$(version "$(dirname "$(dirname "$(dirname "$path")")")" "$pkg")
	echo "$label $v: running $test" >&2
	log=$(run "$test" "$var=$path")
	row "$label" "$pkg $v" "$(result "$log" "$test" "$text")" "$(result "$log" "$test" "$@")"
}

agent claude-code "Claude Code" @anthropic-ai/claude-code claude claude-code.sh MODELGATE_CLAUDE_BIN TestClaudeCodeThroughGateway echo "tool/ANTHROPIC_MODEL"
agent codex "Codex" @openai/codex codex codex.sh MODELGATE_CODEX_BIN TestCodexThroughGateway echo shell-tool
agent gemini-cli "Gemini CLI" @google/gemini-cli gemini gemini-cli.sh MODELGATE_GEMINI_CLI_BIN TestGeminiCLIThroughGateway echo shell-tool
agent opencode "opencode" opencode-ai opencode opencode.sh MODELGATE_OPENCODE_BIN TestOpencodeThroughGateway echo shell-tool
agent qwen-code "Qwen Code" @qwen-code/qwen-code qwen qwen-code.sh MODELGATE_QWEN_BIN TestQwenCodeThroughGateway echo shell-tool

# The SDKs: one install each for the official Node SDKs (the AWS SDK's
# Bedrock Runtime among them) and the AI SDK (its OpenAI and Bedrock
# providers); every subtest does the text turn and the tool loop.
if wanted sdks; then
	echo "SDKs: installing" >&2
	if [ "$pinned" = 1 ]; then
		sdks=$(pinned_install node-sdks.sh) || sdks=""
		aisdk=$(pinned_install ai-sdk.sh) || aisdk=""
	else
		sdks=$(latest node-sdks openai @anthropic-ai/sdk @google/genai @aws-sdk/client-bedrock-runtime @langchain/aws @langchain/core) || sdks=""
		aisdk=$(latest ai-sdk ai @ai-sdk/openai @ai-sdk/amazon-bedrock zod) || aisdk=""
	fi
	if [ -n "$sdks" ]; then
		log=$(run TestNodeSDKsThroughGateway "MODELGATE_NODE_SDKS_DIR=$sdks")
		for s in "openai openai" "anthropic @anthropic-ai/sdk" "genai @google/genai"; do
			set -- $s
			r=$(result "$log" TestNodeSDKsThroughGateway "$1")
			row "$2 (Node)" "$(version "$sdks" "$2")" "$r" "$r"
		done
		log=$(run TestBedrockConverseThroughGateway "MODELGATE_NODE_SDKS_DIR=$sdks")
		r=$(result "$log" TestBedrockConverseThroughGateway oa)
		row "@aws-sdk/client-bedrock-runtime (Converse)" "$(version "$sdks" @aws-sdk/client-bedrock-runtime)" "$r" "$r"
		row "LangChain ChatBedrockConverse" "@langchain/aws $(version "$sdks" @langchain/aws)" "$r" "$r"
	else
		row "openai, @anthropic-ai/sdk, @google/genai" "install failed" "-" "-"
	fi
	if [ -n "$aisdk" ]; then
		log=$(run TestAISDKThroughGateway "MODELGATE_AISDK_DIR=$aisdk")
		r=$(result "$log" TestAISDKThroughGateway oa)
		row "AI SDK (ai + @ai-sdk/openai)" "ai $(version "$aisdk" ai), @ai-sdk/openai $(version "$aisdk" @ai-sdk/openai)" "$r" "$r"
		log=$(run TestAISDKBedrockThroughGateway "MODELGATE_AISDK_DIR=$aisdk")
		r=$(result "$log" TestAISDKBedrockThroughGateway oa)
		row "AI SDK (ai + @ai-sdk/amazon-bedrock)" "ai $(version "$aisdk" ai), @ai-sdk/amazon-bedrock $(version "$aisdk" @ai-sdk/amazon-bedrock)" "$r" "$r"
	else
		row "AI SDK" "install failed" "-" "-"
	fi
fi

mode="latest releases"
[ "$pinned" = 1 ] && mode="pinned versions (CI)"
echo
echo "Compatibility, $(date -u +%Y-%m-%d), $mode; gateway $(git rev-parse --short HEAD 2>/dev/null || echo '?'):"
echo
echo "| client | version | text turn | tool loop (chat-only upstream) |"
echo "|---|---|---|---|"
printf '%s' "$rows"
