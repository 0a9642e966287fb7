#!/usr/bin/env bash
# A throwaway PostgreSQL cluster on loopback for running the sync server locally.
#   Server/Scripts/local-postgres.sh start [DIR]   -> prints "export DATABASE_URL=..." (eval it)
#   Server/Scripts/local-postgres.sh stop  [DIR]
# DIR defaults to ./.local-postgres under Server/. As root, PostgreSQL runs as the `postgres` user.
set -euo pipefail
cmd=${1:-start}
dir=${2:-"$(cd "$(dirname "$0")/.." && pwd)/.local-postgres"}
bin=${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
[ -x "$bin/initdb" ] || { echo "PostgreSQL not found: apt-get install -y postgresql" >&2; exit 1; }
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
case "$cmd" in
start)
    if [ ! -d "$dir/data" ]; then
        mkdir -p "$dir"
        [ "$(id -u)" = 0 ] && chown postgres:postgres "$dir"
        port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
        as_pg "$bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --locale=C >/dev/null
        printf "listen_addresses = '127.0.0.1'\nport = %s\nunix_socket_directories = '%s'\nmax_connections = 300\n" \
            "$port" "$dir" >> "$dir/data/postgresql.conf"
        echo "$port" > "$dir/port"
        as_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -w start >/dev/null
        as_pg "$bin/psql" -h "$dir" -p "$port" -U postgres -qc "CREATE DATABASE reading_sync" >/dev/null
    elif ! as_pg "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
        as_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -w start >/dev/null
    fi
    echo "export DATABASE_URL=postgres://postgres@127.0.0.1:$(cat "$dir/port")/reading_sync?sslmode=disable"
    ;;
stop)
    [ -d "$dir/data" ] && as_pg "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null || true
    ;;
*) echo "usage: $0 start|stop [DIR]" >&2; exit 2 ;;
esac
