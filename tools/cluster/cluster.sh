#!/usr/bin/env bash
# cluster.sh: a real local Kubernetes control plane for Tessel's tests and demo.
#
# It runs, on 127.0.0.1 only and with ports picked at run time: etcd, kube-apiserver (RBAC, token
# authentication, self-signed TLS, the aggregation layer with its own front-proxy CA and client
# certificate), kube-controller-manager (job, garbagecollector, namespace,
# replicaset, deployment, resourceclaim where served, ... but no nodelifecycle) and sim_kubelet.py, which plays the kubelet of
# every node (pods go Running, finish after tessel.io/sim-duration, deletions complete).
# The binaries come from build-k8s.sh (Kubernetes and etcd from the Go module proxy, built once
# and cached): the release KUBE_VERSION of tools/cluster/k8s-versions, or TESSEL_KUBE_VERSION
# (e.g. "oldest" for KUBE_OLDEST_VERSION, or 1.33.5).
#
# Usage: cluster.sh up | down | nodes FILE | env | status | kubectl ARGS...
#                   | stop COMPONENT... | restart COMPONENT...
#   COMPONENT: etcd, apiserver, controller-manager, kubelet (stop/restart keep ports and data,
#   e.g. to restart the apiserver under a running scheduler; `up` starts whatever is not running).
#
# State (certs, tokens, kubeconfigs, etcd data, pids, logs) lives in
#   ${TESSEL_CLUSTER_DIR:-/tmp/tessel-cluster-$UID}
# so several clusters can run side by side. It holds admin.kubeconfig (system:masters),
# scheduler.kubeconfig (user system:serviceaccount:kube-system:tessel-scheduler, no rights until
# RBAC grants them), scheduler-tokenfile.kubeconfig (the same, through tokenFile),
# admin-cert.kubeconfig (client certificate), admin.token, scheduler.token and pki/ca.crt.
# `up` prints `export KUBECONFIG=<state dir>/admin.kubeconfig` as its last line on stdout
# (preceded by an `export PATH=...` line that puts the release's own kubectl first).
#
# Pids are in <state dir>/run/NAME.pid (to SIGKILL one in a test, then `up` to bring it back),
# logs in <state dir>/logs/NAME.log.
#
# Environment: TESSEL_CLUSTER_DIR, TESSEL_KUBE_VERSION, TESSEL_CLUSTER_COMPONENTS (which of
# "etcd apiserver controller-manager kubelet" to run; all by default), TESSEL_APISERVER_ARGS, TESSEL_KCM_ARGS (extra flags),
# TESSEL_KCM_CONTROLLERS (the --controllers list), TESSEL_SIM_LEASE_INTERVAL (seconds, 0 = off),
# TESSEL_STOP_GRACE (seconds between SIGTERM and SIGKILL, default 5).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
STATE="${TESSEL_CLUSTER_DIR:-/tmp/tessel-cluster-$UID}"
STATE=${STATE%/}
MARKER="$STATE/.tessel-cluster"
COMPONENTS=(etcd apiserver controller-manager kubelet)
if [[ -n ${TESSEL_CLUSTER_COMPONENTS:-} ]]; then read -r -a COMPONENTS <<<"$TESSEL_CLUSTER_COMPONENTS"; fi
DEFAULT_CONTROLLERS="job,garbagecollector,namespace,replicaset,deployment,replicationcontroller,\
statefulset,daemonset,cronjob,disruption,resourcequota,podgc,clusterrole-aggregation,\
serviceaccount,serviceaccount-token"

log() { printf '[cluster %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

as_root() {
  if [[ $EUID -eq 0 ]]; then "$@"
  elif command -v sudo >/dev/null; then sudo -n "$@"
  else die "need root (or sudo) to run: $*"
  fi
}

# ---- tools ------------------------------------------------------------------------------------
PY=
find_python() {
  PY=$(command -v python3 || true)
  if [[ -z $PY ]]; then
    log "python3 missing; installing it"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get -q -o DPkg::Lock::Timeout=600 install -y \
      --no-install-recommends python3 >/dev/null
    PY=/usr/bin/python3
  fi
}

ensure_runtime_packages() {
  local missing=()
  command -v openssl >/dev/null || missing+=(openssl)
  command -v curl >/dev/null || missing+=(curl)
  command -v python3 >/dev/null || missing+=(python3)
  if ((${#missing[@]})); then
    log "installing ${missing[*]}"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get -q -o DPkg::Lock::Timeout=600 install -y \
      --no-install-recommends "${missing[@]}" >/dev/null
  fi
  find_python
}

# kubectl: the one build-k8s.sh built with the control plane (same release).
KUBECTL=
find_kubectl() {
  [[ -n ${BIN_DIR:-} ]] || load_env
  KUBECTL="$BIN_DIR/kubectl"
  [[ -x $KUBECTL ]] || die "no kubectl in $BIN_DIR"
}

build_k8s() {  # prints the bin dir of the release TESSEL_KUBE_VERSION asks for
  case ${TESSEL_KUBE_VERSION:-} in
    "") "$HERE/build-k8s.sh" ;;
    oldest) "$HERE/build-k8s.sh" --oldest ;;
    *) "$HERE/build-k8s.sh" "$TESSEL_KUBE_VERSION" ;;
  esac
}

free_ports() {  # N -> N distinct free loopback ports
  "$PY" - "$1" <<'EOF'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
EOF
}

# ---- state --------------------------------------------------------------------------------------
load_env() {
  [[ -f $STATE/cluster.env ]] || die "no cluster in $STATE (run: $0 up)"
  # shellcheck disable=SC1091
  source "$STATE/cluster.env"
}

pidfile() { echo "$STATE/run/$1.pid"; }

# True if PID is a live process (a zombie waiting for its parent to reap it does not count).
alive() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  [[ ${stat%% *} != Z ]]
}

# The pid of a running component, checked against its command line (pids get reused).
running_pid() {
  local f pid
  f=$(pidfile "$1")
  [[ -f $f ]] || return 1
  pid=$(cat "$f" 2>/dev/null) || return 1
  [[ $pid =~ ^[0-9]+$ ]] && alive "$pid" || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -F -- "$STATE/" >/dev/null || return 1
  echo "$pid"
}

start_bg() {  # NAME CMD... : runs CMD detached, logging to logs/NAME.log
  local name=$1; shift
  mkdir -p "$STATE/run" "$STATE/logs"
  nohup setsid "$@" </dev/null >>"$STATE/logs/$name.log" 2>&1 &
  local pid=$! i
  echo "$pid" >"$(pidfile "$name")"
  # Until the child has exec'd, /proc/PID/cmdline is this shell's, which running_pid (it checks
  # the command line against pid reuse) would take for an exited component: wait for the exec.
  for ((i = 0; i < 100; i++)); do
    running_pid "$name" >/dev/null && return 0
    alive "$pid" || return 0  # exited: wait_for reports it, with its log
    sleep 0.05
  done
}

# stop_components NAME... : SIGTERM to all of them at once, SIGKILL to those still running
# after TESSEL_STOP_GRACE seconds (default 5: kube-apiserver waits for open watches to end).
stop_components() {
  local name pid i pids=() grace=${TESSEL_STOP_GRACE:-5}
  for name in "$@"; do
    if pid=$(running_pid "$name"); then
      log "stopping $name (pid $pid)"
      kill -TERM "$pid" 2>/dev/null || true
      pids+=("$pid")
    fi
  done
  for pid in "${pids[@]}"; do
    for ((i = 0; i < grace * 10; i++)); do
      alive "$pid" || break
      sleep 0.1
    done
    if alive "$pid"; then
      log "pid $pid did not stop in $grace s; killing it"
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  for name in "$@"; do rm -f "$(pidfile "$name")"; done
}

wait_for() {  # NAME SECONDS CMD... : polls CMD until it succeeds while NAME keeps running
  local name=$1 timeout=$2; shift 2
  local deadline=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    if ! running_pid "$name" >/dev/null; then
      log "$name exited; last lines of $STATE/logs/$name.log:"
      tail -n 25 "$STATE/logs/$name.log" >&2 || true
      return 1
    fi
    if ((SECONDS >= deadline)); then
      log "$name not ready after $timeout s; last lines of $STATE/logs/$name.log:"
      tail -n 25 "$STATE/logs/$name.log" >&2 || true
      return 1
    fi
    sleep 0.2
  done
}

# ---- first-time setup of the state dir ------------------------------------------------------------
kubeconfig() {  # FILE USER AUTH-LINES...
  local file=$1 user=$2; shift 2
  {
    echo "# Written by tools/cluster/cluster.sh for the local Tessel test cluster."
    echo "apiVersion: v1"
    echo "kind: Config"
    echo "clusters:"
    echo "- name: tessel-local"
    echo "  cluster:"
    echo "    server: $APISERVER_URL"
    echo "    certificate-authority-data: $(base64 -w0 "$STATE/pki/ca.crt")"
    echo "users:"
    echo "- name: $user"
    echo "  user:"
    printf '    %s\n' "$@"
    echo "contexts:"
    echo "- name: tessel-local"
    echo "  context:"
    echo "    cluster: tessel-local"
    echo "    user: $user"
    echo "current-context: tessel-local"
  } >"$file.tmp"
  chmod 600 "$file.tmp"
  mv "$file.tmp" "$file"
}

init_state() {
  log "creating cluster state in $STATE"
  mkdir -p "$STATE/pki" "$STATE/run" "$STATE/logs" "$STATE/etcd"
  chmod 700 "$STATE" "$STATE/etcd"
  touch "$MARKER"
  local pki=$STATE/pki ossl=(openssl)
  (
    cd "$pki"
    "${ossl[@]}" req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=tessel-local-ca" \
      -keyout ca.key -out ca.crt 2>/dev/null
    "${ossl[@]}" req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" \
      -keyout apiserver.key -out apiserver.csr 2>/dev/null
    printf '%s\n' "basicConstraints=CA:FALSE" "keyUsage=digitalSignature,keyEncipherment" \
      "extendedKeyUsage=serverAuth" \
      "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local" \
      >apiserver.ext
    "${ossl[@]}" x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 \
      -extfile apiserver.ext -out apiserver.crt 2>/dev/null
    # A client certificate for admin (O=system:masters), for testing client-cert auth.
    "${ossl[@]}" req -newkey rsa:2048 -nodes -subj "/O=system:masters/CN=tessel-admin" \
      -keyout admin.key -out admin.csr 2>/dev/null
    printf '%s\n' "basicConstraints=CA:FALSE" "keyUsage=digitalSignature,keyEncipherment" \
      "extendedKeyUsage=clientAuth" >admin.ext
    "${ossl[@]}" x509 -req -in admin.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 \
      -extfile admin.ext -out admin.crt 2>/dev/null
    "${ossl[@]}" genrsa -out sa.key 2048 2>/dev/null
    "${ossl[@]}" rsa -in sa.key -pubout -out sa.pub 2>/dev/null
    rm -f ./*.csr ./*.ext ./*.srl
    chmod 600 ./*.key
  )
  local admin_token sched_token
  admin_token=$(openssl rand -hex 24)
  sched_token=$(openssl rand -hex 24)
  (umask 077
   echo "$admin_token" >"$STATE/admin.token"
   echo "$sched_token" >"$STATE/scheduler.token"
   {
     echo "$admin_token,admin,tessel-admin,\"system:masters\""
     echo "$sched_token,system:serviceaccount:kube-system:tessel-scheduler,tessel-scheduler,\"system:serviceaccounts,system:serviceaccounts:kube-system\""
   } >"$STATE/tokens.csv")

  local ports=()
  read -r -a ports <<<"$(free_ports 4)"
  APISERVER_URL="https://127.0.0.1:${ports[2]}"
  {
    echo "# Written by cluster.sh; sourced by it. Ports are fixed for the life of the cluster."
    echo "BIN_DIR='$BIN_DIR'"
    echo "ETCD_CLIENT_PORT=${ports[0]}"
    echo "ETCD_PEER_PORT=${ports[1]}"
    echo "APISERVER_PORT=${ports[2]}"
    echo "APISERVER_URL=$APISERVER_URL"
    echo "KCM_PORT=${ports[3]}"
  } >"$STATE/cluster.env"

  kubeconfig "$STATE/admin.kubeconfig" admin "token: $admin_token"
  kubeconfig "$STATE/scheduler.kubeconfig" tessel-scheduler "token: $sched_token"
  kubeconfig "$STATE/scheduler-tokenfile.kubeconfig" tessel-scheduler \
    "tokenFile: $STATE/scheduler.token"
  kubeconfig "$STATE/admin-cert.kubeconfig" admin-cert \
    "client-certificate: $STATE/pki/admin.crt" "client-key: $STATE/pki/admin.key"
}

# ---- components -----------------------------------------------------------------------------------
start_etcd() {
  log "starting etcd on 127.0.0.1:$ETCD_CLIENT_PORT"
  start_bg etcd "$BIN_DIR/etcd" --name tessel --data-dir "$STATE/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_CLIENT_PORT" \
    --advertise-client-urls "http://127.0.0.1:$ETCD_CLIENT_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "tessel=http://127.0.0.1:$ETCD_PEER_PORT" \
    --unsafe-no-fsync --logger zap --log-level warn
  wait_for etcd 30 curl -fsS "http://127.0.0.1:$ETCD_CLIENT_PORT/health"
}

apiserver_ready() {
  curl -fsS --cacert "$STATE/pki/ca.crt" -H "Authorization: Bearer $(cat "$STATE/admin.token")" \
    "$APISERVER_URL/readyz"
}

# The aggregation layer's own CA and the client certificate kube-apiserver presents to
# aggregated API servers (the front proxy), made once per cluster state (also for a state made
# before this existed).
front_proxy_pki() {
  local pki=$STATE/pki
  [[ -f $pki/front-proxy-client.crt ]] && return 0
  (
    cd "$pki"
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=tessel-local-front-proxy-ca" \
      -keyout front-proxy-ca.key -out front-proxy-ca.crt 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj "/CN=front-proxy-client" \
      -keyout front-proxy-client.key -out front-proxy-client.csr 2>/dev/null
    printf '%s\n' "basicConstraints=CA:FALSE" "keyUsage=digitalSignature,keyEncipherment" \
      "extendedKeyUsage=clientAuth" >front-proxy-client.ext
    openssl x509 -req -in front-proxy-client.csr -CA front-proxy-ca.crt -CAkey front-proxy-ca.key \
      -CAcreateserial -days 3650 -extfile front-proxy-client.ext -out front-proxy-client.crt 2>/dev/null
    rm -f front-proxy-client.csr front-proxy-client.ext front-proxy-ca.srl
    chmod 600 front-proxy-*.key
  )
}

start_apiserver() {
  log "starting kube-apiserver on $APISERVER_URL"
  front_proxy_pki
  local extra=()
  read -r -a extra <<<"${TESSEL_APISERVER_ARGS:-}"
  start_bg apiserver "$BIN_DIR/kube-apiserver" \
    --etcd-servers="http://127.0.0.1:$ETCD_CLIENT_PORT" \
    --bind-address=127.0.0.1 --advertise-address=127.0.0.1 \
    --secure-port="$APISERVER_PORT" \
    --cert-dir="$STATE/pki" \
    --tls-cert-file="$STATE/pki/apiserver.crt" --tls-private-key-file="$STATE/pki/apiserver.key" \
    --client-ca-file="$STATE/pki/ca.crt" \
    --token-auth-file="$STATE/tokens.csv" \
    --authorization-mode=RBAC \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$STATE/pki/sa.pub" \
    --service-account-signing-key-file="$STATE/pki/sa.key" \
    --service-cluster-ip-range=10.0.0.0/24 \
    --endpoint-reconciler-type=none \
    --disable-admission-plugins=ServiceAccount \
    --requestheader-client-ca-file="$STATE/pki/front-proxy-ca.crt" \
    --requestheader-allowed-names=front-proxy-client \
    --requestheader-username-headers=X-Remote-User \
    --requestheader-group-headers=X-Remote-Group \
    --requestheader-extra-headers-prefix=X-Remote-Extra- \
    --proxy-client-cert-file="$STATE/pki/front-proxy-client.crt" \
    --proxy-client-key-file="$STATE/pki/front-proxy-client.key" \
    "${extra[@]}"
  wait_for apiserver 120 apiserver_ready
}

start_controller_manager() {
  log "starting kube-controller-manager"
  local extra=()
  read -r -a extra <<<"${TESSEL_KCM_ARGS:-}"
  mkdir -p "$STATE/kcm-certs"
  # The resourceclaim controller (claims made from ResourceClaimTemplates, released when their
  # pods go) where the release has it on by default (DRA is GA since 1.34; 1.31 lists it not).
  local controllers="${TESSEL_KCM_CONTROLLERS:-$DEFAULT_CONTROLLERS}"
  if [[ -z ${TESSEL_KCM_CONTROLLERS:-} ]] &&
    "$BIN_DIR/kube-controller-manager" --help 2>&1 | grep -F "resourceclaim-controller" >/dev/null; then
    controllers+=",resourceclaim-controller"
  fi
  start_bg controller-manager "$BIN_DIR/kube-controller-manager" \
    --kubeconfig="$STATE/admin.kubeconfig" \
    --use-service-account-credentials=false \
    --controllers="$controllers" \
    --leader-elect=false \
    --bind-address=127.0.0.1 --secure-port="$KCM_PORT" --cert-dir="$STATE/kcm-certs" \
    --root-ca-file="$STATE/pki/ca.crt" \
    --service-account-private-key-file="$STATE/pki/sa.key" \
    --kube-api-qps=1000 --kube-api-burst=2000 \
    "${extra[@]}"
  wait_for controller-manager 60 curl -fsSk "https://127.0.0.1:$KCM_PORT/healthz"
}

log_has_since() {  # FILE OFFSET TEXT: TEXT appears in FILE after byte OFFSET
  tail -c "+$(($2 + 1))" "$1" 2>/dev/null | grep -F -- "$3" >/dev/null  # (all read: no SIGPIPE for tail under pipefail)
}

start_kubelet() {
  log "starting the simulated kubelet"
  local log_file="$STATE/logs/kubelet.log" offset
  offset=$(stat -c %s "$log_file" 2>/dev/null || echo 0)
  start_bg kubelet "$PY" -u "$HERE/sim_kubelet.py" --kubeconfig "$STATE/admin.kubeconfig"
  wait_for kubelet 60 log_has_since "$log_file" "$offset" "pods synced"
}

start_component() {
  case $1 in
    etcd) start_etcd ;;
    apiserver) start_apiserver ;;
    controller-manager) start_controller_manager ;;
    kubelet) start_kubelet ;;
    *) die "unknown component '$1' (one of: ${COMPONENTS[*]})" ;;
  esac
}

all_running() {
  local c
  for c in "${COMPONENTS[@]}"; do running_pid "$c" >/dev/null || return 1; done
}

print_env() {
  load_env
  echo "export PATH=\"$BIN_DIR:\$PATH\""
  echo "export KUBECONFIG=$STATE/admin.kubeconfig"
}

# ---- commands ---------------------------------------------------------------------------------------
cmd_up() {
  ensure_runtime_packages
  if [[ -f $STATE/cluster.env ]] && all_running && (load_env && apiserver_ready >/dev/null 2>&1); then
    log "cluster already up in $STATE"
    print_env
    return
  fi
  local start=$SECONDS c fresh=0 any=0
  if [[ -f $STATE/cluster.env ]]; then
    for c in "${COMPONENTS[@]}"; do running_pid "$c" >/dev/null && any=1; done
    if ((!any)) && [[ -f $MARKER ]]; then
      log "nothing runs in $STATE (stale state); starting afresh"
      rm -rf "$STATE"
    fi
  fi
  if [[ ! -f $STATE/cluster.env ]]; then
    if [[ -e $STATE && ! -f $MARKER && -n $(ls -A "$STATE" 2>/dev/null) ]]; then
      die "$STATE exists and is not a Tessel cluster dir; refusing to use it"
    fi
    BIN_DIR=$(build_k8s)
    init_state
    fresh=1
  else
    load_env
    log "repairing the cluster in $STATE (starting what is not running)"
  fi
  load_env
  # A fresh cluster that fails to start is stopped again (its logs stay in $STATE/logs).
  if ((fresh)); then
    trap '[[ $? -eq 0 ]] || { log "up failed; stopping what was started (logs: $STATE/logs)"; stop_all; }' EXIT
  fi
  for c in "${COMPONENTS[@]}"; do
    if running_pid "$c" >/dev/null; then continue; fi
    start_component "$c"
  done
  trap - EXIT
  if ((fresh)); then log "cluster up in $((SECONDS - start)) s"; else log "cluster up"; fi
  log "logs: $STATE/logs; kubeconfigs: $STATE/admin.kubeconfig, $STATE/scheduler.kubeconfig"
  print_env
}

stop_all() {
  stop_components kubelet controller-manager apiserver etcd
}

cmd_down() {
  if [[ ! -d $STATE ]]; then
    log "no cluster in $STATE"
    return
  fi
  stop_all
  if [[ -f $MARKER ]]; then
    rm -rf "$STATE"
    log "removed $STATE"
  else
    log "$STATE has no $MARKER; not removing it"
  fi
}

cmd_nodes() {
  [[ $# -eq 1 ]] || die "usage: $0 nodes FILE"
  [[ -r $1 ]] || die "cannot read $1"
  load_env
  find_python
  find_kubectl
  "$PY" "$HERE/register_nodes.py" --kubeconfig "$STATE/admin.kubeconfig" --kubectl "$KUBECTL" "$1"
}

cmd_status() {
  local c pid
  [[ -f $STATE/cluster.env ]] || { echo "no cluster in $STATE"; return 1; }
  load_env
  for c in "${COMPONENTS[@]}"; do
    if pid=$(running_pid "$c"); then echo "$c: running (pid $pid)"; else echo "$c: stopped"; fi
  done
  echo "apiserver: $APISERVER_URL"
  echo "kubeconfig: $STATE/admin.kubeconfig"
  all_running
}

main() {
  local cmd=${1:-}
  shift || true
  case $cmd in
    up) cmd_up ;;
    down) cmd_down ;;
    nodes) cmd_nodes "$@" ;;
    env) print_env ;;
    status) cmd_status ;;
    kubectl) load_env; find_kubectl; KUBECONFIG="$STATE/admin.kubeconfig" exec "$KUBECTL" "$@" ;;
    stop|restart)
      (($#)) || die "usage: $0 $cmd COMPONENT... (${COMPONENTS[*]})"
      load_env
      local c
      for c in "$@"; do
        [[ " ${COMPONENTS[*]} " == *" $c "* ]] || die "unknown component '$c' (one of: ${COMPONENTS[*]})"
      done
      stop_components "$@"
      if [[ $cmd == restart ]]; then cmd_up; fi
      ;;
    -h|--help|help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' ;;
    *) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
  esac
}

main "$@"
