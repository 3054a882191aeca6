#!/usr/bin/env bash
# build-k8s.sh: builds kube-apiserver and kube-controller-manager (and kubectl when none is on
# PATH, and kube-scheduler when asked) from Debian's own "kubernetes" source package, and caches
# them.
#
# The binaries are cached under
#   ${XDG_CACHE_HOME:-$HOME/.cache}/tessel/k8s-<debian source version>/bin/
# and that directory is printed on stdout (the only thing printed on stdout). When the cache is
# already complete the script exits at once. Progress goes to stderr; the full build output goes
# to build.log next to bin/. A cold build takes about 8-9 minutes on 2 cores.
#
# Environment:
#   TESSEL_BUILD_KUBECTL=1   also build kubectl even if one is on PATH.
#   TESSEL_BUILD_KUBE_SCHEDULER=1   also build kube-scheduler (for `tessel-bench e2e --compare
#                            kube-scheduler`; about 2 more minutes with the Go build cache warm).
#                            Runs that do not ask for it neither build nor wait for it.
#
# Why it is built this way (see issue 4, section 7):
#   - only the Debian archive is used: `apt-get source kubernetes` through a temporary deb-src
#     entry, removed again afterwards;
#   - the vendored modern-go/reflect2 v1.0.1 crashes under Go 1.19, so it is replaced by the files
#     of Debian's golang-github-modern-go-reflect2-dev;
#   - `go build -mod=vendor` does not work on this tree: its own make (GOPATH mode) is used.
set -euo pipefail

CACHE_ROOT="${XDG_CACHE_HOME:-$HOME/.cache}/tessel"
SRC_LIST=/etc/apt/sources.list.d/tessel-kubernetes-src.sources
APT_OPTS=(-q -o DPkg::Lock::Timeout=600)

log() { printf '[build-k8s %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

as_root() {
  if [[ $EUID -eq 0 ]]; then "$@"
  elif command -v sudo >/dev/null; then sudo -n "$@"
  else die "need root (or sudo) to run: $*"
  fi
}

# Version of the Debian source package "kubernetes", read from its binary package
# kubernetes-client so that no deb-src entry is needed to know the cache key.
source_version() {
  apt-cache show --no-all-versions kubernetes-client 2>/dev/null | awk '
    /^Version:/ { v = $2 }
    /^Source:/ && NF >= 3 { s = $3; gsub(/[()]/, "", s) }
    END { if (s != "") print s; else if (v != "") print v }'
}

want_kubectl() {
  [[ "${TESSEL_BUILD_KUBECTL:-0}" == 1 ]] || ! command -v kubectl >/dev/null
}

want_kube_scheduler() {
  [[ "${TESSEL_BUILD_KUBE_SCHEDULER:-0}" == 1 ]]
}

cache_complete() {
  local bin=$1
  [[ -x $bin/kube-apiserver && -x $bin/kube-controller-manager ]] || return 1
  if want_kubectl; then [[ -x $bin/kubectl ]] || return 1; fi
  if want_kube_scheduler; then [[ -x $bin/kube-scheduler ]] || return 1; fi
  return 0
}

VERSION=$(source_version || true)
if [[ -z $VERSION ]]; then
  log "apt lists do not know kubernetes-client; running apt-get update"
  as_root apt-get "${APT_OPTS[@]}" update >/dev/null
  VERSION=$(source_version || true)
  [[ -n $VERSION ]] || die "the apt sources have no kubernetes-client package (Debian 12 expected)"
fi

VDIR="$CACHE_ROOT/k8s-$VERSION"
BIN="$VDIR/bin"
if cache_complete "$BIN"; then
  echo "$BIN"
  exit 0
fi

mkdir -p "$VDIR"
# One build at a time per cache (parallel test runs may all ask for the binaries).
exec 9>"$VDIR/.lock"
if ! flock -n 9; then
  log "another build is running; waiting for it"
  flock 9
fi
if cache_complete "$BIN"; then
  echo "$BIN"
  exit 0
fi

START=$SECONDS
LOG="$VDIR/build.log"
: >"$LOG"
log "building Kubernetes $VERSION from the Debian source package (about 9 minutes; log: $LOG)"

# --- 1. build dependencies -------------------------------------------------------------------
PKGS=(etcd-server golang-go rsync golang-github-modern-go-reflect2-dev dpkg-dev openssl curl)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  log "installing ${missing[*]}"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get "${APT_OPTS[@]}" install -y \
    --no-install-recommends "${missing[@]}" >>"$LOG" 2>&1 || die "apt-get install failed (see $LOG)"
fi

# --- 2. the source, through a temporary deb-src entry ------------------------------------------
# Prints "URIS<TAB>SUITES<TAB>SIGNED-BY" of the machine's deb.debian.org/debian main entry.
debian_entry() {
  local f
  for f in /etc/apt/sources.list.d/*.sources; do
    [[ -f $f && $f != "$SRC_LIST" ]] || continue
    awk '
      function flush() {
        if (types ~ /(^| )deb( |$)/ && uris ~ /\/debian\/?( |$)/ && comps ~ /(^| )main( |$)/)
          printf "%s\t%s\t%s\n", uris, suites, signed
        types = uris = suites = comps = signed = ""
      }
      /^[ \t]*#/ { next }
      /^[ \t]*$/ { flush(); next }
      { key = tolower($1); sub(/^[^:]*:[ \t]*/, "") }
      key == "types:" { types = $0 } key == "uris:" { uris = $0 }
      key == "suites:" { suites = $0 } key == "components:" { comps = $0 }
      key == "signed-by:" { signed = $0 }
      END { flush() }' "$f"
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [[ -f $f ]] || continue
    awk '
      /^[ \t]*deb[ \t]/ {
        signed = ""; i = 2
        if ($2 ~ /^\[/) {
          for (; i <= NF; i++) {
            if ($i ~ /^\[?signed-by=/) { signed = $i; sub(/^\[?signed-by=/, "", signed); sub(/\]$/, "", signed) }
            if ($i ~ /\]$/) { i++; break }
          }
        }
        uri = $i; suite = $(i + 1); main = 0
        for (j = i + 2; j <= NF; j++) if ($j == "main") main = 1
        if (uri ~ /\/debian\/?$/ && main) printf "%s\t%s\t%s\n", uri, suite, signed
      }' "$f"
  done
}

entry=$(debian_entry | head -n1)
[[ -n $entry ]] || die "no deb.debian.org/debian main entry found in the apt sources"
IFS=$'\t' read -r uris suites signed <<<"$entry"
# One-line style lists give one suite per line: gather all suites of that URI.
if [[ $suites != *" "* ]]; then
  suites=$(debian_entry | awk -F'\t' -v u="$uris" '$1 == u { print $2 }' | sort -u | tr '\n' ' ')
  suites=${suites% }
fi

SRC_ADDED=0
cleanup_src() {
  if ((SRC_ADDED)); then
    as_root rm -f "$SRC_LIST"
    as_root apt-get "${APT_OPTS[@]}" update >>"$LOG" 2>&1 || log "warning: apt-get update after removing $SRC_LIST failed"
    SRC_ADDED=0
  fi
}
SCRATCH="$VDIR/scratch"
cleanup() {
  local rc=$?
  cleanup_src
  if [[ -d $SCRATCH ]]; then rm -rf "$SCRATCH"; fi
  if ((rc)); then log "FAILED after $((SECONDS - START)) s; see $LOG"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log "adding temporary deb-src entry $SRC_LIST ($uris $suites)"
{
  echo "# Temporary entry added by Tessel's tools/cluster/build-k8s.sh; removed after use."
  echo "Types: deb-src"
  echo "URIs: $uris"
  echo "Suites: $suites"
  echo "Components: main"
  [[ -z $signed ]] || echo "Signed-By: $signed"
} | as_root tee "$SRC_LIST" >/dev/null
SRC_ADDED=1
as_root apt-get "${APT_OPTS[@]}" update >>"$LOG" 2>&1 || die "apt-get update failed (see $LOG)"

rm -rf "$SCRATCH"
mkdir -p "$SCRATCH/home"
log "downloading and unpacking the kubernetes source package"
(cd "$SCRATCH" && apt-get "${APT_OPTS[@]}" source "kubernetes=$VERSION") >>"$LOG" 2>&1 \
  || die "apt-get source kubernetes=$VERSION failed (see $LOG)"
cleanup_src
TREE=$(find "$SCRATCH" -mindepth 1 -maxdepth 1 -type d -name 'kubernetes-*' | head -n1)
[[ -n $TREE && -f $TREE/Makefile ]] || die "no unpacked kubernetes tree in $SCRATCH"

# --- 3. replace the vendored reflect2 ----------------------------------------------------------
R2=vendor/github.com/modern-go/reflect2
mapfile -t r2files < <(dpkg -L golang-github-modern-go-reflect2-dev \
  | grep -E '/github\.com/modern-go/reflect2/[^/]+\.(go|s)$' | grep -v '_test\.go$')
((${#r2files[@]})) || die "golang-github-modern-go-reflect2-dev installs no .go files?"
[[ -d $TREE/$R2 ]] || die "$R2 missing from the source tree"
rm -f "$TREE/$R2"/*.go "$TREE/$R2"/*.s
cp "${r2files[@]}" "$TREE/$R2/"
log "replaced $R2 with ${#r2files[@]} files from golang-github-modern-go-reflect2-dev"

# --- 4. build ------------------------------------------------------------------------------------
# Only what the cache lacks (e.g. kubectl alone, when it is wanted later).
TARGETS=()
for name in kube-apiserver kube-controller-manager kubectl kube-scheduler; do
  [[ $name != kubectl ]] || want_kubectl || continue
  [[ $name != kube-scheduler ]] || want_kube_scheduler || continue
  [[ -x $BIN/$name ]] || TARGETS+=("cmd/$name")
done
export HOME="$SCRATCH/home"
export GOPROXY=off GOFLAGS='' GO111MODULE=off
unset GOPATH GOBIN GOCACHE
# The tree's make puts the Go build cache in _output/local/go/cache; point that at a directory
# that outlives the tree, so that a later build of the same version (kubectl, say) is quicker.
GOCACHE_DIR="$CACHE_ROOT/go-build-cache"
link_gocache() {
  mkdir -p "$GOCACHE_DIR" "$TREE/_output/local/go"
  ln -sfn "$GOCACHE_DIR" "$TREE/_output/local/go/cache"
}

build_target() {
  # Plain make (no -j): the go tool itself uses at most one process per core.
  link_gocache
  (cd "$TREE" && nice -n 10 make WHAT="$1") >>"$LOG" 2>&1
}
for t in "${TARGETS[@]}"; do
  t0=$SECONDS
  log "make WHAT=$t"
  if ! build_target "$t"; then
    log "make WHAT=$t failed; removing _output and retrying once"
    rm -rf "$TREE/_output"   # removes the cache link, not the cache
    build_target "$t" || die "make WHAT=$t failed twice (see $LOG)"
  fi
  log "built $t in $((SECONDS - t0)) s"
done

# --- 5. cache the binaries -----------------------------------------------------------------------
mkdir -p "$BIN"
for t in "${TARGETS[@]}"; do
  name=${t#cmd/}
  src="$TREE/_output/bin/$name"
  [[ -x $src ]] || src=$(find "$TREE/_output" -type f -name "$name" -perm -u+x | head -n1)
  [[ -n $src && -x $src ]] || die "built $name not found under _output"
  install -m 0755 "$src" "$BIN/.$name.tmp"
  mv -f "$BIN/.$name.tmp" "$BIN/$name"
done
log "done in $((SECONDS - START)) s; binaries in $BIN"
echo "$BIN"
