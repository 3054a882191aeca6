#!/usr/bin/env bash
# rootfs.sh: the image's runtime root filesystem, built from Debian 12 packages exactly as the
# Dockerfile's runtime stage lists them, and cached; prints its path.
#
#   root=$(tools/image/rootfs.sh)     # e.g. ~/.cache/tessel/rootfs/<key>/root
#
# The runtime stage is `FROM debian:12-slim` plus `apt-get install --no-install-recommends
# PACKAGES`: here mmdebstrap builds the same, the minbase variant of bookworm (Essential and
# Priority required packages and apt, what debian:12-slim holds) with those packages and no
# recommends, from the Debian repositories this machine's apt uses. The package list is read from
# the Dockerfile (tools/image/runtime_stage.py), and the cache is keyed by it: a changed list
# builds a new root. Never required: an absent cache is rebuilt (about a minute cold, see
# docs/deploy.md). The files the stage COPYs (the binary, the configuration) are not part of it:
# `runtime_stage.py install-files` lays them into a copy of this root.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/tessel/rootfs"
log() { printf 'rootfs.sh: %s\n' "$*" >&2; }

stage=$(python3 "$ROOT/tools/image/runtime_stage.py" json)
base=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["base"])' <<<"$stage")
mapfile -t packages < <(python3 "$ROOT/tools/image/runtime_stage.py" packages)
case "$base" in
  debian:12-slim | debian:bookworm-slim) suite=bookworm variant=minbase ;;
  *) log "the runtime stage's base image is $base; only debian:12-slim is known here"; exit 1 ;;
esac
command -v mmdebstrap >/dev/null || {
  log "mmdebstrap is not installed (tools/dev test installs it: apt-get install mmdebstrap)"
  exit 1
}

# The Debian sources this machine's apt uses (deb822 or one-line), passed on to mmdebstrap.
sources=
for f in /etc/apt/sources.list.d/debian.sources /etc/apt/sources.list; do
  if [[ -s $f ]]; then sources=$f; break; fi
done
[[ -n $sources ]] || { log "no Debian apt sources on this machine (/etc/apt/sources.list.d/debian.sources)"; exit 1; }

key=$(printf '%s\n' "rootfs-v1" "$suite" "$variant" "${packages[@]}" | sha256sum | cut -c1-16)
dir="$CACHE/$key"
mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock 9  # one build at a time; a second caller waits and reuses it
if [[ ! -f $dir/done ]]; then
  rm -rf "$dir"
  mkdir -p "$dir"
  log "building the runtime root ($suite $variant + ${packages[*]}) into $dir (log: $dir/build.log)"
  start=$SECONDS
  include=$(IFS=,; echo "${packages[*]}")
  if ! mmdebstrap --variant="$variant" --mode=auto --format=directory \
      --aptopt='APT::Install-Recommends "false"' --include="$include" \
      "$suite" "$dir/root" "$sources" >"$dir/build.log" 2>&1; then
    log "mmdebstrap failed: $(tail -n 5 "$dir/build.log")"
    exit 1
  fi
  printf '%s\n' "${packages[@]}" >"$dir/packages"
  touch "$dir/done"
  log "built in $((SECONDS - start)) s"
fi
echo "$dir/root"
