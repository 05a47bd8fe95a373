#!/usr/bin/env bash
# Makes sure PostgreSQL's server binaries are on this machine (installing
# Debian's postgresql package when they are not), for the Go tests that
# start a throwaway cluster of their own (internal/storage/pgtest).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
pg_install
echo "PostgreSQL server binaries: $pg_bin"
