#!/usr/bin/env bash
# Starts a throw-away Redis on loopback for the shared rate-limit tests
# and prints its URL as the last line of stdout:
#
#   eval "export $(scripts/redis.sh | tail -n1)"
#
# Idempotent: a server already answering on the port is reused. Stop it with
#   MODELGATE_REDIS_PORT=<port> scripts/redis.sh <dir> stop
set -euo pipefail

DIR=${1:-.cache/redis}
ACTION=${2:-start}
PORT=${MODELGATE_REDIS_PORT:-63790}

log() { echo "redis.sh: $*" >&2; }

if [ "$ACTION" = stop ]; then
	redis-cli -h 127.0.0.1 -p "$PORT" shutdown nosave >/dev/null 2>&1 || true
	exit 0
fi

as_root() {
	if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

if ! command -v redis-server >/dev/null 2>&1; then
	log "installing redis-server"
	as_root apt-get update >&2
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y redis-server >&2
fi

if ! redis-cli -h 127.0.0.1 -p "$PORT" ping >/dev/null 2>&1; then
	mkdir -p "$DIR"
	DIR=$(cd "$DIR" && pwd)
	redis-server --bind 127.0.0.1 --port "$PORT" --dir "$DIR" --save "" --appendonly no \
		--daemonize yes --logfile "$DIR/redis.log" --pidfile "$DIR/redis.pid" >&2
	for _ in $(seq 1 50); do
		redis-cli -h 127.0.0.1 -p "$PORT" ping >/dev/null 2>&1 && break
		sleep 0.1
	done
	redis-cli -h 127.0.0.1 -p "$PORT" ping >/dev/null 2>&1 || { log "redis did not start; see $DIR/redis.log"; exit 1; }
fi
echo "MODELGATE_TEST_REDIS=redis://127.0.0.1:$PORT/0"
