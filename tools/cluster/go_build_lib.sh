# go_build_lib.sh: sourced by build-k8s.sh and build-helm.sh (each defines log and die first).
# Their builds from the Go module proxy share two steps: one build at a time per cache
# directory, and the Go toolchain found and set up for the proxy.

# lock_build DIR WHAT: holds DIR/.lock for the rest of the script (fd 9); when another build of
# WHAT holds it, says so and waits.
lock_build() {
  exec 9>"$1/.lock"
  if ! flock -n 9; then
    log "another build of $2 is running; waiting for it"
    flock 9
  fi
}

# find_go: sets GO to the toolchain (/usr/local/go first, then PATH), with GOTOOLCHAIN=local (no
# toolchain download) and GOPROXY (the public proxy unless the environment names one).
find_go() {
  GO=
  local g
  for g in /usr/local/go/bin/go "$(command -v go || true)"; do
    [[ -n $g && -x $g ]] && { GO=$g; break; }
  done
  [[ -n $GO ]] || die "no Go toolchain (expected /usr/local/go/bin/go)"
  export GOTOOLCHAIN=local
  export GOPROXY="${GOPROXY:-https://proxy.golang.org,direct}"
  # The compiler is a Go program: collecting its garbage less often costs memory (a few hundred
  # MB a process, on a machine of 24 GiB) and saves CPU (the 1.31 kube-apiserver, cold: 709 CPU-s
  # with this and without DWARF, against 761).
  export GOGC="${GOGC:-400}"
}
