#!/usr/bin/env bash
# build-k8s.sh: builds the Kubernetes control plane the tests run on, from the Go module proxy,
# and caches it. Prints the directory of the binaries on stdout (the only thing it prints there).
#
#   build-k8s.sh [--oldest] [VERSION]
#
# VERSION defaults to KUBE_VERSION of tools/cluster/k8s-versions. It builds kube-apiserver,
# kube-controller-manager and kubectl of that release, and etcd (ETCD_VERSION), into
#   ${XDG_CACHE_HOME:-$HOME/.cache}/tessel/k8s-v<VERSION>/bin/
# --oldest builds only kube-apiserver of KUBE_OLDEST_VERSION (the install test on the oldest
# supported release needs no more), with etcd and the kubectl of KUBE_VERSION beside it.
# When the cache is complete it exits at once. Progress goes to stderr, the go tool's output to
# build.log next to bin/. Cold (empty module and build caches), about 12 minutes on 2 cores.
#
# How: a small module of our own requires k8s.io/kubernetes@vVERSION, with one `replace` line per
# staging module (k8s.io/api, k8s.io/client-go, ...) pointing at its published v0.MINOR.PATCH
# (k8s.io/kubernetes's own go.mod points them at ./staging, which a dependency cannot use), and
# `go build`s the commands with the version stamped in as the release's own build does. etcd is
# built the same way from go.etcd.io/etcd/server/v3. Only the Go module proxy is used; Go comes
# from /usr/local/go (or PATH) and must be new enough for the release's go.mod.
#
# Environment:
#   TESSEL_BUILD_KUBE_SCHEDULER=1   also build kube-scheduler (for `tessel-bench e2e --compare
#                                   kube-scheduler`); runs that do not ask for it never wait for it.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE_ROOT="${XDG_CACHE_HOME:-$HOME/.cache}/tessel"

log() { printf '[build-k8s %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# shellcheck disable=SC1091
source "$HERE/k8s-versions"
source "$HERE/go_build_lib.sh"
VERSION=$KUBE_VERSION
OLDEST=0
for arg in "$@"; do
  case $arg in
    --oldest) VERSION=$KUBE_OLDEST_VERSION; OLDEST=1 ;;
    [0-9]*.[0-9]*.[0-9]*) VERSION=$arg ;;
    *) die "usage: $0 [--oldest] [VERSION]  (got '$arg')" ;;
  esac
done
VERSION=${VERSION#v}

COMMANDS=(kube-apiserver kube-controller-manager kubectl)
[[ ${TESSEL_BUILD_KUBE_SCHEDULER:-0} != 1 ]] || COMMANDS+=(kube-scheduler)
if ((OLDEST)); then
  COMMANDS=(kube-apiserver)
  # kubectl of the newest release (kubectl speaks to older servers; only `version` warns).
  CURRENT_BIN=$(TESSEL_BUILD_KUBE_SCHEDULER=0 "$HERE/build-k8s.sh")
  mkdir -p "$CACHE_ROOT/k8s-v${VERSION#v}/bin"
  ln -sfn "$CURRENT_BIN/kubectl" "$CACHE_ROOT/k8s-v${VERSION#v}/bin/kubectl"
fi

VDIR="$CACHE_ROOT/k8s-v$VERSION"
BIN="$VDIR/bin"
missing_commands() {
  local c
  for c in "${COMMANDS[@]}" etcd; do [[ -x $BIN/$c ]] || echo "$c"; done
}
if [[ -z $(missing_commands) ]]; then
  echo "$BIN"
  exit 0
fi

mkdir -p "$VDIR"
# One build at a time per cache (parallel test runs may all ask for the binaries).
lock_build "$VDIR" "$VERSION"
if [[ -z $(missing_commands) ]]; then
  echo "$BIN"
  exit 0
fi

# --- Go ---------------------------------------------------------------------------------------
find_go
# The go tool's own module and build caches (~/go/pkg/mod, ~/.cache/go-build) are used, so a
# second release, or kube-scheduler later, compiles only what differs.
export GOFLAGS=-mod=mod
# Our module's go line is the toolchain's own version (its GODEBUG defaults are the newest).
GO_LANG=$("$GO" env GOVERSION | sed -E 's/^go([0-9]+\.[0-9]+).*/\1/')

START=$SECONDS
LOG="$VDIR/build.log"
: >"$LOG"
WORK="$VDIR/module"
rm -rf "$WORK"
mkdir -p "$WORK" "$BIN"

# write_module DIR MODULE VERSION [REPLACE-LINES]: a module that requires MODULE@VERSION.
write_module() {
  local dir=$1 module=$2 version=$3 replaces=${4:-}
  mkdir -p "$dir"
  {
    echo "// Written by tools/cluster/build-k8s.sh: builds $module $version from the module proxy."
    echo "module tessel.local/build/$(basename "$dir")"
    echo
    echo "go $GO_LANG"
    echo
    echo "require $module $version"
    if [[ -n $replaces ]]; then
      echo
      echo "replace ("
      printf '%s\n' "$replaces"
      echo ")"
    fi
  } >"$dir/go.mod"
}

# The binaries are stripped (-s -w), so no DWARF is made for them either (GCFLAGS). The oldest
# release's kube-apiserver serves two short tests (the control plane's smoke test and the install
# on it): compiled without optimisation and inlining it takes 550 CPU-s cold instead of 761, and
# its test passed in 72 s instead of 68 (tests/integration/oldest_release_test.sh). etcd, shared
# by both releases, is always optimised.
GCFLAGS="all=-dwarf=false"
K8S_GCFLAGS=$GCFLAGS
((OLDEST)) && K8S_GCFLAGS="all=-N -l -dwarf=false"
go_build() {  # DIR OUT PACKAGE GCFLAGS [LDFLAGS]
  local dir=$1 out=$2 pkg=$3 gcflags=$4 ldflags=${5:-}
  (cd "$dir" && nice -n 10 "$GO" build -ldflags "-s -w $ldflags" -gcflags "$gcflags" -o "$out.tmp" "$pkg") \
    >>"$LOG" 2>&1 || { tail -n 20 "$LOG" >&2; die "go build $pkg failed (see $LOG)"; }
  mv -f "$out.tmp" "$out"
}

# --- Kubernetes --------------------------------------------------------------------------------
need_k8s=0
for c in "${COMMANDS[@]}"; do [[ -x $BIN/$c ]] || need_k8s=1; done
if ((need_k8s)); then
  log "building Kubernetes v$VERSION (${COMMANDS[*]}) from the Go module proxy (log: $LOG)"
  modfile=$(cd "$VDIR" && GOFLAGS= "$GO" mod download -json "k8s.io/kubernetes@v$VERSION" 2>>"$LOG" \
    | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p') || true
  [[ -n $modfile && -f $modfile ]] \
    || die "cannot download k8s.io/kubernetes@v$VERSION from the module proxy (see $LOG)"
  gomod=$(<"$modfile")
  minor=${VERSION#*.}
  # Every staging module k8s.io/kubernetes replaces with ./staging/src/k8s.io/NAME is published
  # as k8s.io/NAME v0.MINOR.PATCH.
  replaces=$(awk -v v="v0.$minor" '$1 ~ /^k8s\.io\// && $2 == "=>" && $3 ~ /^\.\/staging\// {
    printf "\t%s => %s %s\n", $1, $1, v }' <<<"$gomod")
  [[ -n $replaces ]] || die "k8s.io/kubernetes@v$VERSION's go.mod names no staging modules"
  write_module "$WORK/k8s" k8s.io/kubernetes "v$VERSION" "$replaces"
  IFS=. read -r major minor_only _ <<<"$VERSION"
  pkg_version=k8s.io/component-base/version
  stamp="-X $pkg_version.gitVersion=v$VERSION -X $pkg_version.gitMajor=$major"
  stamp+=" -X $pkg_version.gitMinor=$minor_only -X $pkg_version.gitTreeState=clean"
  stamp+=" -X $pkg_version.buildDate=1970-01-01T00:00:00Z"
  # The client's own copy of the version (kubectl version) lives in client-go.
  stamp+=" -X k8s.io/client-go/pkg/version.gitVersion=v$VERSION"
  stamp+=" -X k8s.io/client-go/pkg/version.gitMajor=$major -X k8s.io/client-go/pkg/version.gitMinor=$minor_only"
  for c in "${COMMANDS[@]}"; do
    [[ -x $BIN/$c ]] && continue
    t0=$SECONDS
    log "go build k8s.io/kubernetes/cmd/$c"
    go_build "$WORK/k8s" "$BIN/$c" "k8s.io/kubernetes/cmd/$c" "$K8S_GCFLAGS" "$stamp"
    log "built $c in $((SECONDS - t0)) s"
  done
fi

# --- etcd ----------------------------------------------------------------------------------------
if [[ ! -x $BIN/etcd ]]; then
  ETCD_BIN="$CACHE_ROOT/etcd-v$ETCD_VERSION/etcd"
  if [[ ! -x $ETCD_BIN ]]; then
    t0=$SECONDS
    log "go build go.etcd.io/etcd/server/v3 v$ETCD_VERSION"
    mkdir -p "$(dirname "$ETCD_BIN")"
    write_module "$WORK/etcd" go.etcd.io/etcd/server/v3 "v$ETCD_VERSION"
    go_build "$WORK/etcd" "$ETCD_BIN" go.etcd.io/etcd/server/v3 "$GCFLAGS"
    log "built etcd in $((SECONDS - t0)) s"
  fi
  install -m 0755 "$ETCD_BIN" "$BIN/.etcd.tmp"
  mv -f "$BIN/.etcd.tmp" "$BIN/etcd"
fi

rm -rf "$WORK"
log "done in $((SECONDS - START)) s; binaries in $BIN"
echo "$BIN"
