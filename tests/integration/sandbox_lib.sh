# sandbox_lib.sh: runs the scheduler container of an installed Deployment the way a kubelet would
# (pod_sandbox.py, bubblewrap), for the tests that install Tessel (install_test.sh with
# `kubectl apply -k`, helm_install_test.sh with `helm install`). Sourced after lib.sh and it_begin.
#
#   sandbox_start NAMESPACE DEPLOYMENT  read the Deployment and ConfigMaps back from the API server,
#                                       mint its ServiceAccount's token, and run its container in
#                                       the background; sets SANDBOX_PID, SANDBOX_PORT (the secure
#                                       port), SANDBOX_LOG, SANDBOX_DEPLOYMENT (its JSON)
#   sandbox_wait_probes                 its liveness probe passes within 30 s, readiness within 60
#   sandbox_probe liveness|readiness    one probe, with the Deployment's own path and timeout
#   sandbox_stop                        SIGTERM to the container's process, as a kubelet sends it;
#                                       fails unless it exits 0 within the grace period
#   sandbox_kill                        for a test's cleanup trap
# The container runs in the image's own root filesystem (tools/image/rootfs.sh: the runtime stage's
# Debian packages, cached; the files the Dockerfile copies laid in by runtime_stage.py), with the
# image's ENTRYPOINT. Only the serving address and ports are changed (loopback and free ports:
# tests share the machine).

SANDBOX_PID=
SANDBOX_RUNS=0
SANDBOX_ROOT=
SANDBOX_ENTRYPOINT=()

# The image's root, once per test: the cached package root, hard-linked (a second of work, no
# space), and the files the runtime stage copies.
sandbox_image_root() {
  [[ -z $SANDBOX_ROOT ]] || return 0
  local cached
  cached=$("$TESSEL_ROOT/tools/image/rootfs.sh") || fail "could not build the runtime root (tools/image/rootfs.sh)"
  SANDBOX_ROOT="$IT_WORK/image-root"
  cp -al "$cached" "$SANDBOX_ROOT" 2>/dev/null || cp -a "$cached" "$SANDBOX_ROOT"
  python3 "$TESSEL_ROOT/tools/image/runtime_stage.py" install-files "$SANDBOX_ROOT" \
    --bin-dir "$(dirname "$TESSEL_SCHEDULER_BIN")" || fail "could not lay the image's files into its root"
  mapfile -t SANDBOX_ENTRYPOINT < <(python3 "$TESSEL_ROOT/tools/image/runtime_stage.py" json |
    python3 -c 'import json,sys; print("\n".join(json.load(sys.stdin)["entrypoint"]))')
  ((${#SANDBOX_ENTRYPOINT[@]})) || fail "the runtime stage has no ENTRYPOINT"
}

sandbox_start() {
  local ns=$1 deployment=$2
  SANDBOX_RUNS=$((SANDBOX_RUNS + 1))
  local dir="$IT_WORK/sandbox-$SANDBOX_RUNS"
  mkdir -p "$dir/serviceaccount"
  SANDBOX_DEPLOYMENT="$dir/deployment.json"
  SANDBOX_LOG="$IT_WORK/scheduler-sandbox-$SANDBOX_RUNS.log"
  kubectl -n "$ns" get deployment "$deployment" -o json >"$SANDBOX_DEPLOYMENT"
  kubectl -n "$ns" get configmaps -o json >"$dir/configmaps.json"
  local sa
  sa=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["spec"]["template"]["spec"].get("serviceAccountName", "default"))' "$SANDBOX_DEPLOYMENT")
  kubectl -n "$ns" create token "$sa" --duration=1h >"$dir/serviceaccount/token" \
    || fail "TokenRequest for the $ns/$sa ServiceAccount failed"
  cp "$TESSEL_CLUSTER_DIR/pki/ca.crt" "$dir/serviceaccount/ca.crt"
  echo -n "$ns" >"$dir/serviceaccount/namespace"
  chmod 0755 "$dir/serviceaccount" "$dir" "$IT_WORK"
  chmod 0644 "$dir/serviceaccount"/*
  local APISERVER_PORT
  APISERVER_PORT=$(source "$TESSEL_CLUSTER_DIR/cluster.env" && echo "$APISERVER_PORT")
  sandbox_image_root
  local cmd admin_port admin_api_port
  { read -r SANDBOX_PORT; read -r SANDBOX_PROBE_PORT; read -r admin_port; read -r admin_api_port; } < <(free_ports 4)
  mapfile -t cmd < <(python3 "$(dirname "${BASH_SOURCE[0]}")/pod_sandbox.py" \
    --deployment "$SANDBOX_DEPLOYMENT" --configmaps "$dir/configmaps.json" \
    --token-dir "$dir/serviceaccount" --apiserver "127.0.0.1:$APISERVER_PORT" --work "$dir" \
    --root "$SANDBOX_ROOT" \
    --override-arg=--bind-address=127.0.0.1 "--override-arg=--secure-port=$SANDBOX_PORT" \
    "--override-arg=--probe-port=$SANDBOX_PROBE_PORT" "--override-arg=--admin-port=$admin_port" \
    "--override-arg=--admin-api-port=$admin_api_port" \
    -- "${SANDBOX_ENTRYPOINT[@]}" | python3 -c 'import json,sys; print("\n".join(json.load(sys.stdin)))')
  ((${#cmd[@]})) || fail "pod_sandbox.py produced no command"
  say "running: ${cmd[*]}"
  "${cmd[@]}" >"$SANDBOX_LOG" 2>&1 &
  SANDBOX_PID=$!
}

sandbox_alive() { [[ -n $SANDBOX_PID ]] && kill -0 "$SANDBOX_PID" 2>/dev/null; }

# The probe of the Deployment's container, with its own path, port, scheme and timeout.
sandbox_probe() {  # liveness|readiness
  local path timeout scheme target
  read -r path timeout scheme target < <(python3 -c '
import json, sys
c = json.load(open(sys.argv[1]))["spec"]["template"]["spec"]["containers"][0]
p = c[sys.argv[2] + "Probe"]
ports = {q["name"]: q["containerPort"] for q in c.get("ports", [])}
print(p["httpGet"]["path"], p.get("timeoutSeconds", 1), p["httpGet"].get("scheme", "HTTP").lower(),
      ports.get(p["httpGet"]["port"], p["httpGet"]["port"]))' "$SANDBOX_DEPLOYMENT" "$1")
  case $target in  # the container ports, as the test serves them
    10259) target=$SANDBOX_PORT ;;
    10261) target=$SANDBOX_PROBE_PORT ;;
    *) fail "the $1 probe uses port $target, which the sandbox does not serve" ;;
  esac
  # A kubelet does not verify the serving certificate of an HTTPS probe (-k), as here.
  curl -fsSk --max-time "$timeout" "$scheme://127.0.0.1:$target$path" >/dev/null
}

sandbox_wait_probes() {
  local deadline=$((SECONDS + 30))
  until sandbox_probe liveness; do
    sandbox_alive || fail "the scheduler exited: $(tail -n 20 "$SANDBOX_LOG")"
    ((SECONDS < deadline)) || fail "liveness probe not passing after 30 s"
    sleep 0.2
  done
  it_wait 60 "readiness probe passing" sandbox_probe readiness
}

# The tessel-scheduler process that descends from bwrap: a kubelet signals the container's
# process, not a wrapper (bwrap then exits with its status).
sandbox_scheduler_pid() {
  local pid ppid
  for pid in $(pgrep -x tessel-schedule); do
    ppid=$pid
    while [[ $ppid -gt 1 ]]; do
      ppid=$(awk '{print $4}' "/proc/$ppid/stat" 2>/dev/null) || break
      [[ $ppid == "$SANDBOX_PID" ]] && { echo "$pid"; return 0; }
    done
  done
  return 1
}

sandbox_stop() {
  local grace target rc=0
  grace=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["spec"]["template"]["spec"].get("terminationGracePeriodSeconds", 30))' "$SANDBOX_DEPLOYMENT")
  target=$(sandbox_scheduler_pid) || fail "no tessel-scheduler process under the sandbox"
  kill -TERM "$target"
  local deadline=$((SECONDS + grace))
  while sandbox_alive; do
    ((SECONDS < deadline)) || fail "the scheduler did not stop within the grace period ($grace s)"
    sleep 0.1
  done
  wait "$SANDBOX_PID" || rc=$?
  SANDBOX_PID=
  [[ $rc -eq 0 ]] || fail "the scheduler exited with $rc on SIGTERM: $(tail -n 20 "$SANDBOX_LOG")"
}

sandbox_kill() {
  [[ -z $SANDBOX_PID ]] || kill -KILL "$SANDBOX_PID" 2>/dev/null || true
  SANDBOX_PID=
}
