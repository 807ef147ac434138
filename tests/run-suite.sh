#!/usr/bin/env bash
# `make test`: the suite on parallel pytest-xdist workers, whole files to a worker,
# then the few tests marked `serial` alone (they watch state that every daemon on
# the host reads, such as the users' home directories). Arguments go to both runs.
# AGENTSH_TEST_WORKERS=0 runs everything in one process, in collection order.
set -uo pipefail
PY="$1"; shift
workers="${AGENTSH_TEST_WORKERS:-2}"
if [ "$workers" = 0 ]; then
  "$PY" -m pytest -q "$@"; rc=$?
  if [ $rc = 5 ]; then echo "pytest: no tests collected"; exit 1; fi
  exit $rc
fi
"$PY" -m pytest -q -n "$workers" --dist loadfile -m "not serial" "$@"; rc1=$?
"$PY" -m pytest -q -m serial "$@"; rc2=$?
if [ $rc1 = 5 ] && [ $rc2 = 5 ]; then echo "pytest: no tests collected"; exit 1; fi
for rc in $rc1 $rc2; do
  if [ $rc != 0 ] && [ $rc != 5 ]; then exit $rc; fi
done
exit 0
