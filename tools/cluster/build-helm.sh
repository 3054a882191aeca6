#!/usr/bin/env bash
# build-helm.sh: builds the helm client the chart's tests use (tests/integration/helm_test.sh),
# from the Go module proxy, and caches it. Prints the path of the binary on stdout (the only thing
# it prints there).
#
#   build-helm.sh [VERSION]
#
# VERSION defaults to HELM_VERSION below (a Helm 3 release; Helm 3 is what the kube-scheduler
# charts and most clusters' tooling use). The binary goes to
#   ${XDG_CACHE_HOME:-$HOME/.cache}/tessel/helm-v<VERSION>/bin/helm
# When it is there the script exits at once. Progress goes to stderr, the go tool's output to
# build.log next to bin/. Cold (empty Go module and build caches, 2 cores shared with other
# builds): 4 min 9 s measured (docs/deploy.md, "Helm").
#
# How: `go install helm.sh/helm/v3/cmd/helm@vVERSION` builds Helm's own module with its own
# go.mod (it has no replace directives), with the version stamps Helm's Makefile sets: the
# client version, and the Kubernetes version that `helm template` and `helm lint` assume
# without a cluster (the minor of the k8s.io/client-go Helm requires, plus one for the major, as
# the Makefile computes it). Only the Go module proxy is used; Go comes from /usr/local/go (or
# PATH) and must be new enough for Helm's go.mod.
set -euo pipefail

HELM_VERSION=3.22.0

CACHE_ROOT="${XDG_CACHE_HOME:-$HOME/.cache}/tessel"
log() { printf '[build-helm %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
source "$(dirname "${BASH_SOURCE[0]}")/go_build_lib.sh"

VERSION=$HELM_VERSION
case $# in
  0) ;;
  1) [[ $1 =~ ^v?3\.[0-9]+\.[0-9]+$ ]] || die "usage: $0 [3.MINOR.PATCH]  (got '$1')"; VERSION=${1#v} ;;
  *) die "usage: $0 [3.MINOR.PATCH]" ;;
esac

VDIR="$CACHE_ROOT/helm-v$VERSION"
HELM="$VDIR/bin/helm"
if [[ -x $HELM ]]; then
  echo "$HELM"
  exit 0
fi

mkdir -p "$VDIR"
# One build at a time per cache (parallel test runs may all ask for the binary).
lock_build "$VDIR" "helm $VERSION"
if [[ -x $HELM ]]; then
  echo "$HELM"
  exit 0
fi

find_go
export GOFLAGS=

START=$SECONDS
LOG="$VDIR/build.log"
: >"$LOG"
MODULE=helm.sh/helm/v3
log "building helm v$VERSION from the Go module proxy (log: $LOG)"
# Helm's go.mod names the client-go it is built with; its minor is the Kubernetes minor that
# helm assumes when no cluster is asked (1.<minor>).
modfile=$(cd "$VDIR" && "$GO" mod download -json "$MODULE@v$VERSION" 2>>"$LOG" \
  | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p') || true
[[ -n $modfile && -f $modfile ]] || die "cannot download $MODULE@v$VERSION from the module proxy (see $LOG)"
k8s_minor=$(awk '$1 == "k8s.io/client-go" { split($2, v, "."); print v[2] }' "$modfile")
[[ $k8s_minor =~ ^[0-9]+$ ]] || die "$MODULE@v$VERSION's go.mod names no k8s.io/client-go"

ldflags="-s -w -X $MODULE/internal/version.version=v$VERSION"
ldflags+=" -X $MODULE/internal/version.gitTreeState=clean"
for pkg in pkg/lint/rules pkg/chartutil; do
  ldflags+=" -X $MODULE/$pkg.k8sVersionMajor=1 -X $MODULE/$pkg.k8sVersionMinor=$k8s_minor"
done
rm -rf "$VDIR/gobin"
(cd "$VDIR" && CGO_ENABLED=0 GOBIN="$VDIR/gobin" nice -n 10 "$GO" install -trimpath \
  -ldflags "$ldflags" "$MODULE/cmd/helm@v$VERSION") >>"$LOG" 2>&1 \
  || { tail -n 20 "$LOG" >&2; die "go install $MODULE/cmd/helm@v$VERSION failed (see $LOG)"; }
mkdir -p "$VDIR/bin"
mv -f "$VDIR/gobin/helm" "$HELM"
rm -rf "$VDIR/gobin"
log "done in $((SECONDS - START)) s: $("$HELM" version --short 2>&1)"
echo "$HELM"
