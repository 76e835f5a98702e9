#!/usr/bin/env bash
# The test command (README, .ci/run): installs what the tests need, starts the Slurm oracle, runs pytest.
#   ./test.sh [PYTEST ARGS...]
# Environment: SLURM2KF_SHARED (default ../shared), SLURM_ORACLE_STATE (default /tmp/slurm2kf-oracle-state),
# KUBE_ORACLE_STATE (default /tmp/slurm2kf-kube-state: the kube-apiserver for the `cluster` tests).
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

# 3b. Open MPI's mpirun (Debian's openmpi-bin) for the step-launcher tests (tests/test_batch_prologue_openmpi.py),
# when missing.
if ! command -v mpirun >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openmpi-bin) >/tmp/slurm2kf-openmpi.log 2>&1 \
      || { tail -20 /tmp/slurm2kf-openmpi.log >&2; echo "test.sh: could not install openmpi-bin" >&2; exit 2; }
  else
    echo "test.sh: mpirun is missing; install Debian's openmpi-bin package" >&2; exit 2
  fi
fi

# 4. A real kube-apiserver (+ etcd) on 127.0.0.1 with the Trainer CRDs, for the `cluster` tests
# (submit, jobs, cancel, validate --server). setup.sh unpacks Debian's etcd-server itself; it needs
# kubectl, xz and openssl (Debian packages kubernetes-client, xz-utils, openssl), installed when missing.
export KUBE_ORACLE_STATE="${KUBE_ORACLE_STATE:-/tmp/slurm2kf-kube-state}"
if [ ! -d "$SHARED/kube-apiserver" ]; then
  echo "test.sh: $SHARED/kube-apiserver not found (set SLURM2KF_SHARED)" >&2; exit 2
fi
missing=""
command -v xz >/dev/null 2>&1 || missing="$missing xz-utils"
command -v openssl >/dev/null 2>&1 || missing="$missing openssl"
if [ -n "$missing" ] || ! command -v kubectl >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    { apt-get update -qq
      if [ -n "$missing" ]; then DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing; fi
      command -v kubectl >/dev/null 2>&1 || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kubectl \
        || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kubernetes-client
    } >/tmp/slurm2kf-kube-apt.log 2>&1
    command -v kubectl >/dev/null 2>&1 && command -v xz >/dev/null 2>&1 && command -v openssl >/dev/null 2>&1 \
      || { tail -20 /tmp/slurm2kf-kube-apt.log >&2; echo "test.sh: could not install kubectl/xz/openssl" >&2; exit 2; }
  else
    echo "test.sh: kubectl, xz and openssl are needed (Debian: kubectl or kubernetes-client, xz-utils, openssl)" >&2
    exit 2
  fi
fi
mkdir -p "$KUBE_ORACLE_STATE"
bash "$SHARED/kube-apiserver/setup.sh" >/tmp/slurm2kf-kube-setup.log 2>&1 || {
  cat /tmp/slurm2kf-kube-setup.log >&2; echo "test.sh: the kube-apiserver did not start" >&2; exit 2; }
export SLURM2KF_KUBECONFIG="$KUBE_ORACLE_STATE/kubeconfig"

# 5. The tests. Oracle-dependent tests fail (never skip) when the oracle or shared data is missing.
exec .venv/bin/python -m pytest "$@"
