#!/usr/bin/env bash
# A PostgreSQL server for the `postgres`-marked tests: installed from the distribution's packages (a no-op
# when present), started on loopback, with a test role that may create databases (each test creates its
# own and drops it). Prints the URL the tests read (MEMORY_OS_TEST_POSTGRES_URL); exits non-zero, printing
# nothing, when no server can be had (the tests then skip).
set -euo pipefail
ROLE=${MEMORY_OS_TEST_PG_ROLE:-memory_os_test}
PASSWORD=${MEMORY_OS_TEST_PG_PASSWORD:-memory_os_test}
PORT=${MEMORY_OS_TEST_PG_PORT:-5432}
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo -n "$@"; fi; }

# idempotent: about 2 s when installed already (apt only checks); the first time it downloads
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >&2 \
    || { as_root apt-get update -q >&2 && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >&2; }
read -r VERSION CLUSTER _ < <(pg_lsclusters -h | head -n 1)
if ! pg_lsclusters -h | head -n 1 | grep -q online; then
    as_root pg_ctlcluster "$VERSION" "$CLUSTER" start >&2
fi
psql_admin() { as_root su postgres -c "psql -p $PORT -v ON_ERROR_STOP=1 -qAtc \"$1\""; }
if [ "$(psql_admin "SELECT 1 FROM pg_roles WHERE rolname = '$ROLE'")" != 1 ]; then
    psql_admin "CREATE ROLE $ROLE LOGIN CREATEDB PASSWORD '$PASSWORD'" >&2
fi
if [ "$(psql_admin "SELECT 1 FROM pg_database WHERE datname = '$ROLE'")" != 1 ]; then
    psql_admin "CREATE DATABASE $ROLE OWNER $ROLE" >&2
fi
echo "postgresql+psycopg://$ROLE:$PASSWORD@127.0.0.1:$PORT/$ROLE"
