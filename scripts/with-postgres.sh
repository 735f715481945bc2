#!/usr/bin/env bash
# Runs a command with a private, throwaway PostgreSQL server, then stops it (also when the
# command fails or the script is interrupted) and removes its files.
#
#   scripts/with-postgres.sh swift test --filter RecordKeeperPostgresTests
#
# The server: `initdb` into a fresh temporary directory, run as an unprivileged user (initdb
# refuses root: as root, the user `recordkeeper-ci` is created when missing), listening on
# 127.0.0.1 only, on a free port, with its unix socket in the temporary directory. Trust
# authentication (except for the role `recordkeeper_password`, which must give its password),
# fsync off: it holds test data only, on loopback, for one run.
# The command gets its connection string in RECORDKEEPER_TEST_POSTGRES (libpq conninfo).
set -euo pipefail

if [ "$#" -eq 0 ]; then
    echo "usage: $0 COMMAND [ARGS...]" >&2
    exit 64
fi

# PostgreSQL's server programs: on PATH, or in Debian's versioned directory (newest first).
pgbin=""
if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
    pgbin="$(dirname "$(command -v initdb)")"
else
    for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        if [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ]; then
            pgbin="$dir"
            break
        fi
    done
fi
if [ -z "$pgbin" ]; then
    echo "with-postgres: initdb and pg_ctl not found (install the Debian package postgresql)" >&2
    exit 69
fi

# As root the server runs as another user, who must reach the directory: use /tmp then.
if [ "$(id -u)" -eq 0 ]; then
    tmp="$(mktemp -d /tmp/recordkeeper-pg.XXXXXX)"
else
    tmp="$(mktemp -d "${TMPDIR:-/tmp}/recordkeeper-pg.XXXXXX")"
fi
data="$tmp/data"
started=0

# Runs a PostgreSQL program as the unprivileged owner of the server.
as_owner() {
    if [ "$(id -u)" -eq 0 ]; then
        runuser -u "$owner" -- "$@"
    else
        "$@"
    fi
}

cleanup() {
    local status=$?
    if [ "$started" -eq 1 ]; then
        as_owner "$pgbin/pg_ctl" -D "$data" -m fast -w stop >/dev/null 2>&1 \
            || echo "with-postgres: pg_ctl stop failed; see $tmp/server.log" >&2
    fi
    if [ "$started" -ne 1 ] && [ -f "$tmp/server.log" ]; then
        echo "with-postgres: last lines of the server log:" >&2
        tail -n 20 "$tmp/server.log" >&2 || true
    fi
    rm -rf "$tmp"
    exit "$status"
}
# The command runs in the background and the script waits for it, so a signal to the script is
# handled at once: the command is stopped too, then the server.
child=""
stop_child() {
    if [ -n "$child" ]; then kill -TERM "$child" 2>/dev/null || true; fi
}
trap cleanup EXIT
trap 'stop_child; exit 130' INT
trap 'stop_child; exit 143' TERM

if [ "$(id -u)" -eq 0 ]; then
    owner="recordkeeper-ci"
    if ! id -u "$owner" >/dev/null 2>&1; then
        nologin="$(command -v nologin || echo /usr/sbin/nologin)"
        useradd --system --no-create-home --home-dir /nonexistent --shell "$nologin" "$owner"
    fi
    chown "$owner" "$tmp"
else
    owner="$(id -un)"
fi
chmod 700 "$tmp"

# A free port on loopback: the kernel's pick for port 0 (python3), else a random one; the
# start is retried on another port if the chosen one was taken meanwhile.
free_port() {
    if command -v python3 >/dev/null 2>&1; then
        python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
    else
        echo $((20000 + RANDOM % 40000))
    fi
}

as_owner "$pgbin/initdb" -D "$data" -U recordkeeper -A trust -E UTF8 --locale=C --no-sync \
    >"$tmp/initdb.log" 2>&1 || { cat "$tmp/initdb.log" >&2; exit 1; }
# One role must give its password (the tests of a refused password create it): the first
# matching line of pg_hba.conf wins.
as_owner sh -c 'printf "host all recordkeeper_password 127.0.0.1/32 scram-sha-256\n" | cat - "$1" > "$1.new" && mv "$1.new" "$1"' \
    sh "$data/pg_hba.conf"

port=""
for attempt in 1 2 3 4 5; do
    port="$(free_port)"
    if as_owner "$pgbin/pg_ctl" -D "$data" -l "$tmp/server.log" -w -t 60 \
        -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$tmp -c fsync=off -c max_connections=200" \
        start >/dev/null; then
        started=1
        break
    fi
    echo "with-postgres: could not start on port $port (attempt $attempt)" >&2
done
if [ "$started" -ne 1 ]; then
    echo "with-postgres: the server did not start" >&2
    exit 1
fi

export RECORDKEEPER_TEST_POSTGRES="host=127.0.0.1 port=$port user=recordkeeper dbname=postgres"
echo "with-postgres: PostgreSQL ($("$pgbin/postgres" --version)) on 127.0.0.1:$port" >&2

status=0
"$@" &
child=$!
wait "$child" || status=$?
child=""
exit "$status"
