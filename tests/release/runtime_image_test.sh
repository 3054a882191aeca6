#!/usr/bin/env bash
# runtime_image_test.sh: the image's runtime stage can start the binaries it ships, as far as
# can be told without building it (install_test.sh then runs the binary in a root built from
# the same packages).
#   1. Every library that each binary the Dockerfile installs links (ldd) comes from a package
#      of the runtime root: the stage's own apt-get install list or the base image's packages,
#      with their dependencies (tools/image/runtime_stage.py check-libs, on the host's dpkg
#      database).
#   2. The check is not vacuous: the list 0.1.0 shipped (without libgrpc++1.51, libgrpc29 and
#      libprotobuf32) fails it, naming the three libraries the admin API brought in.
#   3. The stage agrees with manifests/deployment.yaml: it EXPOSEs every containerPort, its USER
#      is the pod's runAsUser:runAsGroup, and the configuration lands where --config reads it.
# Needs TESSEL_ROOT and TESSEL_BIN_DIR (the build's bin/).
set -euo pipefail
: "${TESSEL_ROOT:?}" "${TESSEL_BIN_DIR:?}"
stage="$TESSEL_ROOT/tools/image/runtime_stage.py"
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# ---- 1. the libraries ---------------------------------------------------------------------------
mapfile -t shipped < <(python3 "$stage" json | python3 -c \
  'import json,sys; [print(b["name"]) for b in json.load(sys.stdin)["binaries"]]')
((${#shipped[@]})) || fail "the Dockerfile installs no binary into /out/"
bins=()
for b in "${shipped[@]}"; do
  [[ -x $TESSEL_BIN_DIR/$b ]] || { fail "$b is shipped but not built in $TESSEL_BIN_DIR"; continue; }
  bins+=("$TESSEL_BIN_DIR/$b")
done
if ((${#bins[@]})); then
  if out=$(python3 "$stage" check-libs "${bins[@]}"); then
    echo "ok: ${shipped[*]}: every linked library comes from the runtime stage's packages"
  else
    fail "libraries the runtime stage does not install:"$'\n'"$out"
  fi

  # ---- 2. the check fails on 0.1.0's list ---------------------------------------------------------
  if out=$(python3 "$stage" --without libgrpc++1.51 --without libgrpc29 --without libprotobuf32 \
      check-libs "${bins[@]}"); then
    fail "check-libs passes without the gRPC and protobuf packages (0.1.0's list)"
  else
    for lib in libgrpc++.so.1.51 libgrpc.so.29 libprotobuf.so.32; do
      grep -qF "$lib" <<<"$out" || fail "check-libs on 0.1.0's list does not name $lib: $out"
    done
    echo "ok: 0.1.0's list fails, naming libgrpc++.so.1.51, libgrpc.so.29 and libprotobuf.so.32"
  fi
fi

# ---- 3. the stage against the Deployment --------------------------------------------------------
python3 - "$stage" "$TESSEL_ROOT/manifests/deployment.yaml" <<'PY' || failures=$((failures + 1))
import json, re, subprocess, sys
stage = json.loads(subprocess.run([sys.executable, sys.argv[1], "json"], check=True,
                                  capture_output=True, text=True).stdout)
deployment = open(sys.argv[2]).read()
bad = []
ports = sorted(int(p) for p in re.findall(r"containerPort:\s*(\d+)", deployment))
if not ports:
    bad.append("deployment.yaml names no containerPort")
for p in ports:
    if p not in stage["expose"]:
        bad.append("containerPort %d is not EXPOSEd (EXPOSE %s)" % (p, stage["expose"]))
uid = re.search(r"runAsUser:\s*(\d+)", deployment)
gid = re.search(r"runAsGroup:\s*(\d+)", deployment)
want = "%s:%s" % (uid.group(1) if uid else "?", gid.group(1) if gid else "?")
if stage["user"] != want:
    bad.append("USER %s, but the pod runs as %s" % (stage["user"], want))
config = re.search(r"--config=(\S+)", deployment)
dests = [c["dest"] for c in stage["copies"]]
if not config or config.group(1) not in dests:
    bad.append("the Deployment reads --config=%s; the image copies to %s" % (config and config.group(1), dests))
entry = stage["entrypoint"][:1]
if entry != [b["path"] for b in stage["binaries"] if b["name"] == "tessel-scheduler"]:
    bad.append("ENTRYPOINT %s is not where tessel-scheduler is installed" % entry)
for b in bad:
    print("FAIL: " + b, file=sys.stderr)
if not bad:
    print("ok: EXPOSE %s covers the containerPorts %s; USER %s; --config and ENTRYPOINT where the image "
          "puts them" % (stage["expose"], ports, stage["user"]))
sys.exit(1 if bad else 0)
PY

((failures == 0)) || { echo "$failures check(s) failed" >&2; exit 1; }
