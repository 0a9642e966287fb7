#!/usr/bin/env bash
# The API against its own contract: schemathesis (PyPI) generates requests from
# Server/Sources/SyncServerCore/openapi.yaml and checks every answer (status codes and bodies the
# contract declares, no 5xx, ...) against a live server on a throwaway PostgreSQL, with the token
# of a registered device. Installs schemathesis with pip when missing.
#   Server/Scripts/schemathesis.sh [--max-examples N] [other `st run` flags]
# Defaults: seed 1, 100 examples per operation (the longer run); .ci/server runs it with
# --max-examples 10. The server binary is the debug build (swift build --package-path Server).
# Two checks fail by design and are written down in Server/README ("The contract, checked"):
# pass `--exclude-checks positive_data_acceptance,unsupported_method` to leave them out.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
# Pinned: the flags and checks below are those of schemathesis 4.32. Run as a module
# (`python3 -m schemathesis.cli`), so no console-script shim (pyenv) is needed after the install.
python3 -c "import schemathesis" 2>/dev/null || python3 -m pip install -q "schemathesis==4.32.5"
swift build --package-path Server --product reading-sync-server
bin=$(swift build --package-path Server --show-bin-path)
dir=$(mktemp -d)
chmod 755 "$dir"   # the postgres user (PostgreSQL as root) must reach its cluster below
server_pid=
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null || true
    "$root/Server/Scripts/local-postgres.sh" stop "$dir/pg"
    rm -rf "$dir"
}
trap cleanup EXIT
eval "$(Server/Scripts/local-postgres.sh start "$dir/pg")"
"$bin/reading-sync-server" --database-url "$DATABASE_URL" --port 0 --log-level warning > "$dir/server.out" 2> "$dir/server.err" &
server_pid=$!
for _ in $(seq 1 600); do grep -q "listening on" "$dir/server.out" 2>/dev/null && break; sleep 0.1; done
port=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$dir/server.out")
[ -n "$port" ] || { cat "$dir/server.err"; exit 1; }
token=$(python3 - "$port" <<'PY'
import json, sys, urllib.request, uuid
body = json.dumps({"reader": str(uuid.uuid4()), "name": "schemathesis"}).encode()
request = urllib.request.Request(f"http://127.0.0.1:{sys.argv[1]}/v1/devices", data=body,
                                 headers={"Content-Type": "application/json"}, method="POST")
print(json.load(urllib.request.urlopen(request))["token"])
PY
)
# /v1/stream never ends (server-sent events): left out.
# Run in the temporary directory: schemathesis keeps its files (.schemathesis/) where it runs.
schema="$PWD/Server/Sources/SyncServerCore/openapi.yaml"
cd "$dir"
python3 -m schemathesis.cli run "$schema" --url "http://127.0.0.1:$port" \
    -H "Authorization: Bearer $token" --seed 1 --exclude-path /v1/stream --request-timeout 10 \
    --max-examples 100 "$@"
