#!/usr/bin/env bash
# Starts a throw-away PostgreSQL cluster for the ledger's store tests and
# prints its DSN as the last line of stdout:
#
#   eval "export $(scripts/postgres.sh | tail -n1)"
#
# Idempotent: a running cluster in the same directory is reused, on the port
# it runs on. Stop it with
#   scripts/postgres.sh <dir> stop
set -euo pipefail

DIR=${1:-.cache/pg}
ACTION=${2:-start}
PORT=${MODELGATE_PG_PORT:-54329}
DB=modelgate_test

log() { echo "postgres.sh: $*" >&2; }

as_root() {
	if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

find_bin() {
	local name=$1 p
	if p=$(command -v "$name" 2>/dev/null); then echo "$p"; return 0; fi
	for p in /usr/lib/postgresql/*/bin/"$name"; do
		[ -x "$p" ] && { echo "$p"; return 0; }
	done
	return 1
}

if ! find_bin pg_ctl >/dev/null || ! find_bin initdb >/dev/null; then
	log "installing postgresql"
	as_root apt-get update >&2
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y postgresql >&2
fi
PG_CTL=$(readlink -f "$(find_bin pg_ctl)")
BINDIR=$(dirname "$PG_CTL")
INITDB=$BINDIR/initdb
[ -x "$INITDB" ] || INITDB=$(find_bin initdb)
PSQL=$(find_bin psql)

mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
DATA=$DIR/data

# PostgreSQL refuses to run as root, so root hands the cluster to the
# postgres system user; everyone else runs it as themselves.
if [ "$(id -u)" -eq 0 ]; then
	OWNER=postgres
	id "$OWNER" >/dev/null 2>&1 || useradd --system --no-create-home "$OWNER"
	chown -R "$OWNER" "$DIR"
	# The owner must be able to reach the directory through its parents.
	d=$DIR
	while [ "$d" != / ]; do
		d=$(dirname "$d")
		chmod o+x "$d" 2>/dev/null || true
	done
	run() { runuser -u "$OWNER" -- "$@"; }
else
	OWNER=$(id -un)
	run() { "$@"; }
fi

if [ "$ACTION" = stop ]; then
	if [ -f "$DATA/PG_VERSION" ] && run "$PG_CTL" -D "$DATA" status >/dev/null 2>&1; then
		run "$PG_CTL" -D "$DATA" -m fast -w stop >&2
	fi
	exit 0
fi

if [ ! -f "$DATA/PG_VERSION" ]; then
	log "initdb in $DATA"
	run "$INITDB" -D "$DATA" -U postgres -A trust --encoding=UTF8 --no-locale >&2
fi

if run "$PG_CTL" -D "$DATA" status >/dev/null 2>&1; then
	# Line 4 of postmaster.pid is the port the running cluster listens on.
	PORT=$(sed -n 4p "$DATA/postmaster.pid")
	log "reusing the cluster already running on 127.0.0.1:$PORT"
else
	if "$(find_bin pg_isready)" -q -h 127.0.0.1 -p "$PORT" 2>/dev/null; then
		log "another server already listens on 127.0.0.1:$PORT; stop it or set MODELGATE_PG_PORT"
		exit 1
	fi
	log "starting on 127.0.0.1:$PORT"
	run "$PG_CTL" -D "$DATA" -l "$DIR/server.log" -w -t 30 \
		-o "-c listen_addresses=127.0.0.1 -p $PORT -k $DIR -c fsync=off -c full_page_writes=off" \
		start >&2
fi

if ! run "$PSQL" -h "$DIR" -p "$PORT" -U postgres -d postgres -tAc \
	"SELECT 1 FROM pg_database WHERE datname = '$DB'" | grep -q 1; then
	run "$PSQL" -h "$DIR" -p "$PORT" -U postgres -d postgres -qc "CREATE DATABASE $DB" >&2
fi

echo "MODELGATE_TEST_POSTGRES=postgres://postgres@127.0.0.1:$PORT/$DB?sslmode=disable"
