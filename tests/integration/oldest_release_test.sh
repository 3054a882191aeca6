#!/usr/bin/env bash
# oldest_release_test.sh: install_test.sh (kustomize), helm_install_test.sh (the chart) and
# crd_validation_test.sh on the oldest Kubernetes release Tessel supports (KUBE_OLDEST_VERSION of
# tools/cluster/k8s-versions), on a control plane of its own (etcd, kube-apiserver and the
# simulated kubelet; no controller manager: the installs need none, and the chart's upgrade is
# checked by its pod template there, not by a roll). As on the newest release, the scheduler runs
# in the image's root filesystem, built from the Dockerfile's runtime packages
# (tools/image/rootfs.sh; the cached root is shared with install_test.sh). The cluster is always
# torn down.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${TESSEL_ROOT:?}" "${TESSEL_SCHEDULER_BIN:?}"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tessel-oldest.XXXXXX")
export TESSEL_CLUSTER_DIR="$WORK/cluster" TESSEL_KUBE_VERSION=oldest
export TESSEL_CLUSTER_COMPONENTS="etcd apiserver kubelet"
cleanup() {
  "$TESSEL_ROOT/tools/cluster/cluster.sh" down >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
bash "$HERE/cluster_up.sh"
source "$TESSEL_ROOT/tools/cluster/k8s-versions"
eval "$("$TESSEL_ROOT/tools/cluster/cluster.sh" env)"
server=$(kubectl version -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["serverVersion"]["gitVersion"])')
[[ $server == "v$KUBE_OLDEST_VERSION" ]] || { echo "server is $server, want v$KUBE_OLDEST_VERSION" >&2; exit 1; }
echo "[oldest] kube-apiserver $server" >&2
bash "$HERE/install_test.sh"
bash "$HERE/helm_install_test.sh"
# The CRDs (their CEL rules) on that release too.
bash "$HERE/crd_validation_test.sh"
