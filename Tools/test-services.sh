#!/usr/bin/env bash
# Throwaway services for the tests that need them, sourced by Tools/test.sh (and usable by hand:
# `source Tools/test-services.sh && start_test_services`).
#
# start_test_services starts
#   - a PostgreSQL cluster made with initdb in a new temporary folder, run as an unprivileged user
#     (the `postgres` account when the shell is root), listening only on a Unix socket in that
#     folder, fsync on; exports PHOTOLEDGER_TEST_POSTGRES_URL;
#   - an S3-compatible server (moto, from PyPI) on a free loopback port that checks every
#     request's Signature Version 4 against an access key made for the tests; exports
#     PHOTOLEDGER_TEST_S3_ENDPOINT, PHOTOLEDGER_TEST_S3_ACCESS_KEY_ID and
#     PHOTOLEDGER_TEST_S3_SECRET_ACCESS_KEY.
# stop_test_services stops both and removes the folder; test.sh calls it from an EXIT trap, so it
# runs on failure too.

test_services_root=""
test_services_s3_pid=""
test_services_pg_user=""

postgres_bin() {
    local dir
    for dir in /usr/lib/postgresql/*/bin; do
        if [ -x "$dir/initdb" ]; then echo "$dir"; fi
    done | sort -V | tail -n 1
}

as_postgres_user() {
    if [ -n "$test_services_pg_user" ]; then
        runuser -u "$test_services_pg_user" -- "$@"
    else
        "$@"
    fi
}

start_test_postgres() {
    local bin
    bin="$(postgres_bin)"
    if [ -z "$bin" ]; then
        echo "error: PostgreSQL's initdb was not found under /usr/lib/postgresql; install the postgresql package" >&2
        return 1
    fi
    if [ "$(id -u)" -eq 0 ]; then
        test_services_pg_user=postgres
        id -u postgres >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin postgres
        chown "$test_services_pg_user" "$test_services_root"
    fi
    as_postgres_user "$bin/initdb" -D "$test_services_root/data" --auth=trust --encoding=UTF8 --locale=C.UTF-8 -U postgres >"$test_services_root/initdb.log" 2>&1 || {
        cat "$test_services_root/initdb.log" >&2
        return 1
    }
    # fsync on (the default) and no TCP listener: the socket lives in the folder.
    as_postgres_user "$bin/pg_ctl" -D "$test_services_root/data" -l "$test_services_root/postgres.log" -w -t 60 start \
        -o "-c listen_addresses='' -c unix_socket_directories='$test_services_root' -c fsync=on -c max_connections=200" >/dev/null || {
        cat "$test_services_root/postgres.log" >&2
        return 1
    }
    export PHOTOLEDGER_TEST_POSTGRES_URL="postgresql:///postgres?host=$test_services_root&user=postgres"
    echo "PostgreSQL $("$bin/postgres" --version | awk '{print $3}') for the tests: $PHOTOLEDGER_TEST_POSTGRES_URL" >&2
}

free_loopback_port() {
    "$test_services_python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

start_test_s3() {
    local port tries=0
    port="$(free_loopback_port)"
    # The first three requests (the IAM user, its key and its policy below) go unchecked; every
    # later one must carry a valid signature.
    INITIAL_NO_AUTH_ACTION_COUNT=3 "$test_services_python" -m moto.server -H 127.0.0.1 -p "$port" >"$test_services_root/s3.log" 2>&1 &
    test_services_s3_pid=$!
    until "$test_services_python" -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/moto-api/')" >/dev/null 2>&1; do
        tries=$((tries + 1))
        if [ "$tries" -gt 100 ] || ! kill -0 "$test_services_s3_pid" 2>/dev/null; then
            echo "error: the S3 test server did not start; its log:" >&2
            cat "$test_services_root/s3.log" >&2
            return 1
        fi
        sleep 0.2
    done
    local keys
    keys="$("$test_services_python" - "$port" <<'PYTHON'
import json, sys
import boto3
iam = boto3.client("iam", endpoint_url=f"http://127.0.0.1:{sys.argv[1]}", region_name="us-east-1",
                   aws_access_key_id="setup", aws_secret_access_key="setup")
iam.create_user(UserName="photoledger-tests")
key = iam.create_access_key(UserName="photoledger-tests")["AccessKey"]
iam.put_user_policy(UserName="photoledger-tests", PolicyName="s3", PolicyDocument=json.dumps(
    {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}))
print(key["AccessKeyId"], key["SecretAccessKey"])
PYTHON
)" || { cat "$test_services_root/s3.log" >&2; return 1; }
    export PHOTOLEDGER_TEST_S3_ENDPOINT="http://127.0.0.1:$port"
    export PHOTOLEDGER_TEST_S3_ACCESS_KEY_ID="${keys%% *}"
    export PHOTOLEDGER_TEST_S3_SECRET_ACCESS_KEY="${keys#* }"
    echo "S3-compatible server (moto) for the tests: $PHOTOLEDGER_TEST_S3_ENDPOINT" >&2
}

start_test_services() {
    test_services_root="$(mktemp -d /tmp/photoledger-services.XXXXXX)"
    chmod 755 "$test_services_root"
    start_test_postgres
    start_test_s3
}

stop_test_services() {
    if [ -n "$test_services_s3_pid" ]; then
        kill "$test_services_s3_pid" 2>/dev/null || true
        wait "$test_services_s3_pid" 2>/dev/null || true
        test_services_s3_pid=""
    fi
    if [ -n "$test_services_root" ] && [ -d "$test_services_root/data" ]; then
        as_postgres_user "$(postgres_bin)/pg_ctl" -D "$test_services_root/data" -m fast -w stop >/dev/null 2>&1 || true
    fi
    if [ -n "$test_services_root" ]; then
        rm -rf "$test_services_root"
        test_services_root=""
    fi
}
