#!/usr/bin/env bash
# install_test.sh: the shipped install, proven on the real API server.
#
#   1. `kubectl apply -k manifests/` for real (not a dry run): every object is accepted, with no
#      warning, and each one named by `kubectl kustomize` is then in the cluster.
#   2. The Deployment as the API server stored it is run the way a kubelet would
#      (pod_sandbox.py, bubblewrap) in the image's own root filesystem, not the host's: Debian 12
#      packages exactly as the Dockerfile's runtime stage lists them (tools/image/rootfs.sh,
#      cached), with the built binary and the configuration where the Dockerfile puts them
#      (runtime_stage.py install-files). Its own args after the image's ENTRYPOINT, as its
#      non-root user, with a read-only root and only the volumes it mounts writable, in-cluster
#      configuration from a ServiceAccount token (TokenRequest) and CA at the standard paths.
#      Only the serving address and ports are changed (loopback and free ports, because tests
#      share the machine).
#   3. It passes its liveness and readiness probes with the probes' own paths and timeouts,
#      schedules a pod (leader election on, as deployed), and stops cleanly on SIGTERM within
#      the pod's termination grace period, releasing its lease.
# Everything it created is deleted again.
source "$(dirname "$0")/lib.sh"
it_begin install

command -v bwrap >/dev/null || fail "bubblewrap (bwrap) is not installed (tools/dev test installs it)"
# The image's root: the cached package root, hard-linked (a second of work, no space), and the
# files the runtime stage copies.
cached_root=$("$TESSEL_ROOT/tools/image/rootfs.sh") || fail "could not build the runtime root (tools/image/rootfs.sh)"
image_root="$IT_WORK/image-root"
cp -al "$cached_root" "$image_root" 2>/dev/null || cp -a "$cached_root" "$image_root"
python3 "$TESSEL_ROOT/tools/image/runtime_stage.py" install-files "$image_root" \
  --bin-dir "$(dirname "$TESSEL_SCHEDULER_BIN")" || fail "could not lay the image's files into its root"
mapfile -t entrypoint < <(python3 "$TESSEL_ROOT/tools/image/runtime_stage.py" json |
  python3 -c 'import json,sys; print("\n".join(json.load(sys.stdin)["entrypoint"]))')
((${#entrypoint[@]})) || fail "the runtime stage has no ENTRYPOINT"
kustomize_out="$IT_WORK/rendered.yaml"
kubectl kustomize "$TESSEL_ROOT/manifests" >"$kustomize_out"

SANDBOX_PID=
install_cleanup() {
  local rc=$?
  [[ -z $SANDBOX_PID ]] || kill -KILL "$SANDBOX_PID" 2>/dev/null || true
  kubectl delete -k "$TESSEL_ROOT/manifests" --ignore-not-found --wait=false >/dev/null 2>&1 || true
  # The shared fixture's RBAC, ServiceAccount and PriorityClasses come back (other tests use them).
  kubectl apply -f "$TESSEL_ROOT/manifests/serviceaccount.yaml" -f "$TESSEL_ROOT/manifests/rbac.yaml" \
    -f "$TESSEL_ROOT/manifests/priorityclasses.yaml" >/dev/null 2>&1 || true
  (exit $rc)
  it_cleanup
}
trap install_cleanup EXIT

# ---- 1. a real apply ------------------------------------------------------------------------------
out=$(kubectl apply -k "$TESSEL_ROOT/manifests" 2>&1) || fail "kubectl apply -k manifests/ failed: $out"
say "applied:"$'\n'"$out"
if grep -qiE "warning|error" <<<"$out"; then fail "warnings or errors: $out"; fi
# Every object kustomize rendered is in the cluster now (kind/name, with its namespace).
kubectl get -f "$kustomize_out" -o name >"$IT_WORK/present.txt" 2>"$IT_WORK/missing.txt" \
  || fail "objects missing after apply: $(cat "$IT_WORK/missing.txt")"
rendered=$(grep -c '^kind:' "$kustomize_out")
present=$(grep -c . "$IT_WORK/present.txt")
[[ $rendered -eq $present ]] || fail "$rendered objects rendered, $present in the cluster"
for kind in deployment poddisruptionbudget flowschema prioritylevelconfiguration \
  customresourcedefinition configmap; do
  grep -qi "^$kind" "$IT_WORK/present.txt" || fail "no $kind among the applied objects"
done

# ---- 2. the Deployment, run as a kubelet would ----------------------------------------------------
kubectl -n kube-system get deployment tessel-scheduler -o json >"$IT_WORK/deployment.json"
kubectl -n kube-system get configmaps -o json >"$IT_WORK/configmaps.json"
token_dir="$IT_WORK/serviceaccount"
mkdir -p "$token_dir"
kubectl -n kube-system create token tessel-scheduler --duration=1h >"$token_dir/token" \
  || fail "TokenRequest for the tessel-scheduler ServiceAccount failed"
cp "$TESSEL_CLUSTER_DIR/pki/ca.crt" "$token_dir/ca.crt"
echo -n kube-system >"$token_dir/namespace"
chmod 0755 "$token_dir" "$IT_WORK"
chmod 0644 "$token_dir"/*

load_cluster_env() { source "$TESSEL_CLUSTER_DIR/cluster.env"; }
load_cluster_env
port=$(free_port) probe_port=$(free_port)
admin_port=$(free_port)
mapfile -t cmd < <(python3 "$(dirname "$0")/pod_sandbox.py" --deployment "$IT_WORK/deployment.json" \
  --configmaps "$IT_WORK/configmaps.json" --token-dir "$token_dir" \
  --apiserver "127.0.0.1:$APISERVER_PORT" --work "$IT_WORK" \
  --root "$image_root" \
  --override-arg=--bind-address=127.0.0.1 "--override-arg=--secure-port=$port" \
  "--override-arg=--probe-port=$probe_port" \
  "--override-arg=--admin-port=$admin_port" \
  -- "${entrypoint[@]}" | python3 -c 'import json,sys; print("\n".join(json.load(sys.stdin)))')
((${#cmd[@]})) || fail "pod_sandbox.py produced no command"
say "running: ${cmd[*]}"
log="$IT_WORK/scheduler-install.log"
"${cmd[@]}" >"$log" 2>&1 &
SANDBOX_PID=$!

# The probes, with the Deployment's own paths, ports, schemes and timeouts.
probe() {  # liveness|readiness
  local path timeout scheme target
  read -r path timeout scheme target < <(python3 -c '
import json, sys
c = json.load(open(sys.argv[1]))["spec"]["template"]["spec"]["containers"][0]
p = c[sys.argv[2] + "Probe"]
ports = {q["name"]: q["containerPort"] for q in c.get("ports", [])}
print(p["httpGet"]["path"], p.get("timeoutSeconds", 1), p["httpGet"].get("scheme", "HTTP").lower(),
      ports.get(p["httpGet"]["port"], p["httpGet"]["port"]))' "$IT_WORK/deployment.json" "$1")
  case $target in  # the container ports, as the test serves them
    10259) target=$port ;;
    10261) target=$probe_port ;;
    *) fail "the $1 probe uses port $target, which this test does not serve" ;;
  esac
  # A kubelet does not verify the serving certificate of an HTTPS probe (-k), as here.
  curl -fsSk --max-time "$timeout" "$scheme://127.0.0.1:$target$path" >/dev/null
}
sandbox_alive() { kill -0 "$SANDBOX_PID" 2>/dev/null; }
deadline=$((SECONDS + 30))
until probe liveness; do
  sandbox_alive || fail "the scheduler exited: $(tail -n 20 "$log")"
  ((SECONDS < deadline)) || fail "liveness probe not passing after 30 s"
  sleep 0.2
done
it_wait 60 "readiness probe passing" probe readiness

it_nodes install-a:4
it_pod p1 --gpus 1
it_wait 60 "p1 bound by the installed scheduler" it_bound p1
[[ $(node_of p1) == install-a ]] || fail "p1 bound to $(node_of p1)"
holder=$(kubectl -n kube-system get lease tessel-scheduler -o 'jsonpath={.spec.holderIdentity}')
[[ -n $holder ]] || fail "no lease holder while the scheduler runs"
# Probes still pass while it schedules.
probe liveness || fail "liveness probe failed after scheduling"
probe readiness || fail "readiness probe failed after scheduling"

# Nothing was written outside the writable mounts (the root is read-only; a write there would
# have failed the process). The serving certificate went to the emptyDir.
grep -qiE "read-only file system" "$log" && fail "the scheduler hit the read-only root: $(grep -i read-only "$log")"

# ---- 3. a clean stop ------------------------------------------------------------------------------
grace=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["spec"]["template"]["spec"].get("terminationGracePeriodSeconds", 30))' "$IT_WORK/deployment.json")
# A kubelet signals the container's process, not a wrapper: the tessel-scheduler process that
# descends from bwrap (bwrap then exits with its status).
scheduler_pid() {
  local pid comm ppid
  for pid in $(pgrep -x tessel-schedule); do
    ppid=$pid
    while [[ $ppid -gt 1 ]]; do
      ppid=$(awk '{print $4}' "/proc/$ppid/stat" 2>/dev/null) || break
      [[ $ppid == "$SANDBOX_PID" ]] && { echo "$pid"; return 0; }
    done
  done
  return 1
}
target=$(scheduler_pid) || fail "no tessel-scheduler process under the sandbox"
kill -TERM "$target"
deadline=$((SECONDS + grace))
while sandbox_alive; do
  ((SECONDS < deadline)) || fail "the scheduler did not stop within the grace period ($grace s)"
  sleep 0.1
done
rc=0
wait "$SANDBOX_PID" || rc=$?
SANDBOX_PID=
[[ $rc -eq 0 ]] || fail "the scheduler exited with $rc on SIGTERM: $(tail -n 20 "$log")"
holder=$(kubectl -n kube-system get lease tessel-scheduler -o 'jsonpath={.spec.holderIdentity}')
[[ -z $holder ]] || fail "the lease is still held by $holder after a clean stop"
exit 0
