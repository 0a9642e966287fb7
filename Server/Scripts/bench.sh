#!/usr/bin/env bash
# The sync load benchmark in one command: a throwaway PostgreSQL, the server (release), sync-load
# (release) with 1,000 devices, one load of 60 s per batch size (100-row, then 10-row pushes), each
# beside PostgreSQL's own batched INSERT of the same rows from as many connections as the server's
# pool, then everything stopped. Prints for each batch size the ratio server / PostgreSQL, the CPU
# per 1,000 events split into the server, PostgreSQL, the load generator and the kernel (/proc), the
# bound that CPU puts on the ratio, and the first 30 s (a fresh database) apart from the rest.
# Later flags win: `bench.sh --seconds 20 --devices 100 --batch 10` for a shorter run.
# BENCH_BIN=DIR runs the binaries in DIR (reading-sync-server and sync-load) instead of building.
#   Server/Scripts/bench.sh [sync-load flags...]
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ -n "${BENCH_BIN:-}" ]; then
    bin=$BENCH_BIN
else
    swift build -c release --package-path Server --product reading-sync-server
    swift build -c release --package-path Server --product sync-load
    bin=$(swift build -c release --package-path Server --show-bin-path)
fi
dir=$(mktemp -d)
chmod 755 "$dir"   # the postgres user (PostgreSQL as root) must reach its cluster below
server_pid=
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null || true
    Server/Scripts/local-postgres.sh stop "$dir/pg"
    rm -rf "$dir"
}
trap cleanup EXIT
eval "$(Server/Scripts/local-postgres.sh start "$dir/pg")"
export DATABASE_URL
# sync-load registers its 1,000 readers from one address: the per-address registration limit is lifted.
"$bin/reading-sync-server" --port 0 --log-level warning --registrations-per-address 1000000 > "$dir/server.out" 2> "$dir/server.err" &
server_pid=$!
for _ in $(seq 1 600); do grep -q "listening on" "$dir/server.out" 2>/dev/null && break; sleep 0.1; done
port=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$dir/server.out")
[ -n "$port" ] || { cat "$dir/server.err"; exit 1; }
ulimit -n 65536 2>/dev/null || true
"$bin/sync-load" --server "http://127.0.0.1:$port" --database-url "$DATABASE_URL" --server-pid "$server_pid" --seconds 60 "$@"
