#!/usr/bin/env bash
# Builds the CEL reference evaluator (main.go: Kubernetes' DRA CEL environment at v0.37.2) with
# the Go toolchain and prints the binary's path. The binary is cached under
# ${XDG_CACHE_HOME:-$HOME/.cache}/tessel/cel-reference/<hash of the sources>/ and rebuilt only
# when main.go, go.mod or go.sum change. Never part of the product's build.
#
#   ref=$(tests/cel/reference/build.sh) && echo '{"expr":"true","device":{"driver":"d"}}' | "$ref"
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
go="${GO:-/usr/local/go/bin/go}"
if [[ ! -x "$go" ]]; then go="$(command -v go || true)"; fi
[[ -n "$go" ]] || { echo "build.sh: no Go toolchain (set GO or install /usr/local/go)" >&2; exit 1; }
hash="$(cat "$here/main.go" "$here/go.mod" "$here/go.sum" | sha256sum | cut -c1-16)"
dir="${XDG_CACHE_HOME:-$HOME/.cache}/tessel/cel-reference/$hash"
bin="$dir/cel-reference"
if [[ ! -x "$bin" ]]; then
  mkdir -p "$dir"
  (cd "$here" && GOFLAGS=-mod=readonly "$go" build -trimpath -o "$bin.tmp" .) >&2
  mv "$bin.tmp" "$bin"
fi
echo "$bin"
