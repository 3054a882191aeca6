#!/usr/bin/env bash
# version_test.sh: the release is written once, in VERSION, and every place that names it agrees:
#   - tessel-scheduler, tessel-bench and tesselctl --version print it (CMake reads VERSION);
#   - the image tag: manifests/kustomization.yaml's images: newTag, and every
#     "tessel-scheduler:X.Y.Z" written in the Dockerfile, manifests/, charts/, README.md, docs/;
#   - the Helm chart's version and appVersion (charts/tessel/Chart.yaml), when the chart exists;
#   - CHANGELOG.md has an entry for it.
# Needs TESSEL_ROOT and TESSEL_BIN_DIR (the build's bin/).
set -euo pipefail
: "${TESSEL_ROOT:?}" "${TESSEL_BIN_DIR:?}"
cd "$TESSEL_ROOT"
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
version=$(head -n1 VERSION)
[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || { echo "FAIL: VERSION holds \"$version\", not MAJOR.MINOR.PATCH" >&2; exit 1; }
echo "VERSION: $version"

for bin in tessel-scheduler tessel-bench tesselctl; do
  out=$("$TESSEL_BIN_DIR/$bin" --version 2>&1) || { fail "$bin --version exited $?: $(head -n1 <<<"$out")"; continue; }
  [[ $out == "$bin $version" ]] || fail "$bin --version prints \"$out\", want \"$bin $version\""
done

tags=$(sed -n 's/^ *newTag: *"\{0,1\}\([^"]*\)"\{0,1\} *$/\1/p' manifests/kustomization.yaml)
[[ -n $tags ]] || fail "manifests/kustomization.yaml sets no image tag (images: newTag)"
for t in $tags; do [[ $t == "$version" ]] || fail "manifests/kustomization.yaml: newTag $t, VERSION $version"; done

files=(Dockerfile README.md)
while IFS= read -r f; do files+=("$f"); done < <(find manifests docs charts -type f 2>/dev/null | sort)
while IFS= read -r hit; do
  fail "$hit: an image tag other than $version"
done < <(grep -HnoE 'tessel-scheduler:[0-9]+\.[0-9]+\.[0-9]+' "${files[@]}" 2>/dev/null | grep -v ":tessel-scheduler:$version\$" || true)

chart=charts/tessel/Chart.yaml
if [[ -f $chart ]]; then
  for field in version appVersion; do
    v=$(sed -n "s/^$field: *\"\{0,1\}\([^\"]*\)\"\{0,1\} *\$/\1/p" "$chart")
    [[ $v == "$version" ]] || fail "$chart: $field is \"$v\", VERSION $version"
  done
  echo "checked $chart (version, appVersion)"
else
  echo "SKIP: $chart does not exist in this tree; the chart's version and appVersion were not checked"
fi

grep -qE "^## \[$version\]" CHANGELOG.md 2>/dev/null || fail "CHANGELOG.md has no \"## [$version]\" entry"

((failures == 0)) || { echo "$failures check(s) failed" >&2; exit 1; }
echo "ok: every place names $version"
