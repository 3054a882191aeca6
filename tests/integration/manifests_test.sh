#!/usr/bin/env bash
# manifests_test.sh: `kubectl apply --dry-run=server -k manifests/` (and the samples) is clean:
# the API server accepts every object, with no warnings.
source "$(dirname "$0")/lib.sh"
it_begin manifests
for dir in manifests manifests/samples; do
  out=$(kubectl apply --dry-run=server -k "$TESSEL_ROOT/$dir" 2>&1) || fail "$dir: $out"
  say "$dir:"$'\n'"$out"
  if grep -qiE "warning|error" <<<"$out"; then fail "$dir: warnings or errors: $out"; fi
done
# The Deployment asks for what the issue says.
rendered=$(kubectl kustomize "$TESSEL_ROOT/manifests")
grep -q "replicas: 2" <<<"$rendered" || fail "Deployment replicas != 2"
grep -q -- "--leader-elect=true" <<<"$rendered" || fail "leader election not on"
grep -q "runAsNonRoot: true" <<<"$rendered" || fail "not non-root"
exit 0
