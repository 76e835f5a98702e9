#!/usr/bin/env bash
# The test command (README, .ci/run): installs what the tests need, starts the Slurm oracle, runs pytest.
#   ./test.sh [PYTEST ARGS...]
# Environment: SLURM2KF_SHARED (default ../shared), SLURM_ORACLE_STATE (default /tmp/slurm2kf-oracle-state).
set -euo pipefail
cd "$(dirname "$0")"
SHARED="${SLURM2KF_SHARED:-$(cd .. && pwd)/shared}"
export SLURM2KF_SHARED="$SHARED"

# 1. The project and its test dependencies (kubeflow==0.5.0 included) in ./.venv.
if [ ! -x .venv/bin/python ]; then python3 -m venv .venv; fi
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]'

# 2. Real Slurm 22.05 on 127.0.0.1 (installs munge/slurm from Debian packages when missing).
# One state folder per machine, so a second run reuses the controller the first one started.
export SLURM_ORACLE_STATE="${SLURM_ORACLE_STATE:-/tmp/slurm2kf-oracle-state}"
mkdir -p "$SLURM_ORACLE_STATE"
if [ ! -d "$SHARED/slurm-oracle" ]; then
  echo "test.sh: $SHARED/slurm-oracle not found (set SLURM2KF_SHARED)" >&2; exit 2
fi
bash "$SHARED/slurm-oracle/setup.sh" >/tmp/slurm2kf-oracle-setup.log 2>&1 || {
  cat /tmp/slurm2kf-oracle-setup.log >&2; echo "test.sh: the Slurm oracle did not start" >&2; exit 2; }
export SLURM_CONF="$SLURM_ORACLE_STATE/etc/slurm.conf"

# 3. Headless Chromium for the HTML report tests (Debian package), when missing.
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/tmp/slurm2kf-chromium.log 2>&1 \
      || { tail -20 /tmp/slurm2kf-chromium.log >&2; echo "test.sh: could not install chromium" >&2; exit 2; }
  else
    echo "test.sh: chromium is missing; install Debian's chromium package" >&2; exit 2
  fi
fi

# 4. The tests. Oracle-dependent tests fail (never skip) when the oracle or shared data is missing.
exec .venv/bin/python -m pytest "$@"
