#!/usr/bin/env bash
# Runs a command with two private, throwaway PostgreSQL servers and a PgBouncer in front of the
# first, then stops them (also when the command fails or the script is interrupted) and removes
# their files.
#
#   scripts/with-postgres.sh swift test --filter RecordKeeperPostgresTests
#
# Each server: `initdb` into a fresh temporary directory, run as an unprivileged user (initdb
# refuses root: as root, the user `recordkeeper-ci` is created when missing), listening on
# 127.0.0.1 only, on a free port, with its unix socket in the temporary directory. Trust
# authentication (except for the role `recordkeeper_password`, which must give its password),
# fsync off: it holds test data only, on loopback, for one run.
# The PgBouncer (Debian's `pgbouncer`, when installed; else a warning and none): transaction
# pool mode, 127.0.0.1 only, a free port, its files in the same temporary directory, every
# database name passed through to the first server, at most 4 server connections per database
# (so that its clients really share them), trust authentication for the role `recordkeeper`.
# The command gets the connection strings (libpq conninfo) in RECORDKEEPER_TEST_POSTGRES (the
# first server), RECORDKEEPER_TEST_POSTGRES_2 (the second, for sharding tests) and
# RECORDKEEPER_TEST_PGBOUNCER (the PgBouncer). WITH_POSTGRES_SERVERS=1 starts only the first
# server (and the PgBouncer).
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
servers="${WITH_POSTGRES_SERVERS:-2}"
if [ "$servers" != 1 ] && [ "$servers" != 2 ]; then
    echo "with-postgres: WITH_POSTGRES_SERVERS is 1 or 2, not '$servers'" >&2
    exit 64
fi
# The data directories of the servers started so far (stopped in cleanup), and the pgbouncer's
# pid file once it runs.
running=()
bouncer_pid=""

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
    if [ -n "$bouncer_pid" ]; then
        kill -TERM "$bouncer_pid" 2>/dev/null || true
    fi
    for data in "${running[@]}"; do
        [ -f "$data/postmaster.pid" ] || continue
        as_owner "$pgbin/pg_ctl" -D "$data" -m fast -w stop >/dev/null 2>&1 \
            || echo "with-postgres: pg_ctl stop failed; see $data.log" >&2
    done
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

# Starts server number $1 (data in $tmp/server$1, log in $tmp/server$1.log) and prints its port
# (run in a subshell: the caller records the data directory for cleanup).
start_server() {
    local data="$tmp/server$1" log="$tmp/server$1.log" port="" attempt
    as_owner "$pgbin/initdb" -D "$data" -U recordkeeper -A trust -E UTF8 --locale=C --no-sync \
        >"$tmp/initdb$1.log" 2>&1 || { cat "$tmp/initdb$1.log" >&2; return 1; }
    # One role must give its password (the tests of a refused password create it): the first
    # matching line of pg_hba.conf wins.
    as_owner sh -c 'printf "host all recordkeeper_password 127.0.0.1/32 scram-sha-256\n" | cat - "$1" > "$1.new" && mv "$1.new" "$1"' \
        sh "$data/pg_hba.conf"
    # max_connections: the suite runs many relays at once, each with a pool of its own (a relay
    # that reads a pull ahead uses a second connection meanwhile); sampled, the full suite's
    # peak reached 200 (the old limit, "too many clients already"), mostly idle pooled ones.
    for attempt in 1 2 3 4 5; do
        port="$(free_port)"
        if as_owner "$pgbin/pg_ctl" -D "$data" -l "$log" -w -t 60 \
            -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$tmp -c fsync=off -c max_connections=500" \
            start >/dev/null; then
            echo "$port"
            return 0
        fi
        echo "with-postgres: could not start server $1 on port $port (attempt $attempt)" >&2
    done
    echo "with-postgres: server $1 did not start; last lines of its log:" >&2
    tail -n 20 "$log" >&2 || true
    return 1
}

# The second server starts at the same time as the first (initdb is most of the wait).
second=""
if [ "$servers" = 2 ]; then
    start_server 2 >"$tmp/port2" &
    second=$!
    running+=("$tmp/server2")
fi
port1="$(start_server 1)" || { [ -n "$second" ] && wait "$second"; exit 1; }
running+=("$tmp/server1")
export RECORDKEEPER_TEST_POSTGRES="host=127.0.0.1 port=$port1 user=recordkeeper dbname=postgres"
echo "with-postgres: PostgreSQL ($("$pgbin/postgres" --version)) on 127.0.0.1:$port1" >&2
if [ -n "$second" ]; then
    wait "$second" || exit 1
    port2="$(cat "$tmp/port2")"
    export RECORDKEEPER_TEST_POSTGRES_2="host=127.0.0.1 port=$port2 user=recordkeeper dbname=postgres"
    echo "with-postgres: a second PostgreSQL on 127.0.0.1:$port2" >&2
fi

# PgBouncer in front of the first server. It refuses to run as root: as_owner.
bouncer="$(command -v pgbouncer || true)"
[ -z "$bouncer" ] && [ -x /usr/sbin/pgbouncer ] && bouncer=/usr/sbin/pgbouncer
if [ -n "$bouncer" ]; then
    started_bouncer=0
    psql="$(command -v psql || echo "$pgbin/psql")"
    [ -x "$psql" ] || psql="$(ls /usr/lib/postgresql/*/bin/psql 2>/dev/null | sort -V -r | head -n 1)"
    for attempt in 1 2 3 4 5; do
        bport="$(free_port)"
        as_owner sh -c 'cat > "$1/pgbouncer.ini"' sh "$tmp" <<INI
[databases]
* = host=127.0.0.1 port=$port1
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $bport
unix_socket_dir =
pidfile = $tmp/pgbouncer.pid
logfile = $tmp/pgbouncer.log
auth_type = trust
auth_file = $tmp/pgbouncer-users.txt
pool_mode = transaction
default_pool_size = 4
max_client_conn = 500
max_db_connections = 40
ignore_startup_parameters = extra_float_digits
INI
        as_owner sh -c 'printf "\"recordkeeper\" \"\"\n" > "$1/pgbouncer-users.txt"' sh "$tmp"
        as_owner "$bouncer" -d -q "$tmp/pgbouncer.ini" 2>>"$tmp/pgbouncer.err" || true
        # Ready once it accepts a query (the pid file appears before it listens).
        for _ in $(seq 1 50); do
            if "$psql" "host=127.0.0.1 port=$bport user=recordkeeper dbname=postgres connect_timeout=2" \
                -Atqc "SELECT 1" >/dev/null 2>&1; then
                started_bouncer=1
                break
            fi
            sleep 0.1
        done
        if [ -f "$tmp/pgbouncer.pid" ]; then bouncer_pid="$(cat "$tmp/pgbouncer.pid")"; fi
        [ "$started_bouncer" -eq 1 ] && break
        echo "with-postgres: PgBouncer did not start on port $bport (attempt $attempt)" >&2
        if [ -n "$bouncer_pid" ]; then kill -TERM "$bouncer_pid" 2>/dev/null || true; bouncer_pid=""; fi
        rm -f "$tmp/pgbouncer.pid"
    done
    if [ "$started_bouncer" -ne 1 ]; then
        echo "with-postgres: PgBouncer did not start; its log:" >&2
        cat "$tmp/pgbouncer.err" "$tmp/pgbouncer.log" >&2 2>/dev/null || true
        exit 1
    fi
    export RECORDKEEPER_TEST_PGBOUNCER="host=127.0.0.1 port=$bport user=recordkeeper dbname=postgres"
    echo "with-postgres: PgBouncer ($("$bouncer" --version | head -n 1), transaction mode) on 127.0.0.1:$bport" >&2
else
    echo "with-postgres: pgbouncer not found (install the Debian package pgbouncer): RECORDKEEPER_TEST_PGBOUNCER is not set" >&2
fi

status=0
"$@" &
child=$!
wait "$child" || status=$?
child=""
exit "$status"
