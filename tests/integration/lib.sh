# lib.sh: shared helpers for Tessel's integration tests (sourced, not run).
#
# The tests share one control plane, started by cluster_up.sh (ctest fixture) in
# $TESSEL_CLUSTER_DIR and stopped by cluster_down.sh. Each test works in its own namespace
# (tessel-it-<test>) on its own simulated nodes (label tessel-it=<test>; its pods select them),
# runs the real tessel-scheduler binary with the scheduler's own token (scheduler.kubeconfig,
# bound to the manifests' RBAC), and removes what it created on exit, stopping every process it
# started.
#
#   source "$(dirname "$0")/lib.sh"
#   it_begin bind
#   it_nodes bind-a:8:pool=a bind-b:8
#   it_start_scheduler main
#   it_pod p1 --gpus 1 --select pool=a
#   it_wait 30 "p1 bound" it_bound p1
set -euo pipefail

: "${TESSEL_ROOT:?}" "${TESSEL_CLUSTER_DIR:?}" "${TESSEL_SCHEDULER_BIN:?}"
CLUSTER="$TESSEL_ROOT/tools/cluster/cluster.sh"
export TESSEL_CLUSTER_DIR

# Most of a test's own CPU is kubectl's (about 0.19 CPU-s a call, mostly Go's start, polled by
# it_wait): one thread of Go's scheduler takes a seventh less of it. A function, so that only
# kubectl gets it (not the control plane that a test may restart).
kubectl() { GOMAXPROCS=1 command kubectl "$@"; }

say() { printf '[%s %(%H:%M:%S)T] %s\n' "${IT_NAME:-it}" -1 "$*" >&2; }
fail() { say "FAIL: $*"; exit 1; }

IT_PIDS=()
IT_WORK=
IT_NAME=
NS=

it_cleanup() {
  local rc=$? pid
  for pid in "${IT_PIDS[@]}"; do
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  if ((rc)) && [[ -n $IT_WORK ]]; then
    local f
    for f in "$IT_WORK"/*.log; do
      [[ -f $f ]] || continue
      say "--- last lines of $f"
      tail -n 40 "$f" >&2 || true
    done
    kubectl get pods -n "$NS" -o wide >&2 2>/dev/null || true
  fi
  if [[ -n $IT_NAME ]]; then
    kubectl delete namespace "$NS" --wait=false >/dev/null 2>&1 || true
    kubectl delete nodes -l "tessel-it=$IT_NAME" --wait=false >/dev/null 2>&1 || true
  fi
  [[ -n $IT_WORK ]] && rm -rf "$IT_WORK"
  if ((rc)); then say "FAILED"; else say "PASSED in $((SECONDS - IT_START)) s"; fi
}

# it_begin NAME: the test's namespace, scratch dir and cleanup.
it_begin() {
  IT_NAME=$1
  NS="tessel-it-$1"
  IT_START=$SECONDS
  IT_WORK=$(mktemp -d "${TMPDIR:-/tmp}/tessel-it-$1.XXXXXX")
  trap it_cleanup EXIT
  [[ -f $TESSEL_CLUSTER_DIR/cluster.env ]] || fail "no cluster in $TESSEL_CLUSTER_DIR (run the cluster_up fixture)"
  eval "$("$CLUSTER" env)"
  export KUBECONFIG
  SCHED_KUBECONFIG="$TESSEL_CLUSTER_DIR/scheduler.kubeconfig"
  # Leftovers of an earlier, interrupted run.
  kubectl delete nodes -l "tessel-it=$IT_NAME" --wait=false >/dev/null 2>&1 || true
  if kubectl get namespace "$NS" >/dev/null 2>&1; then
    kubectl delete namespace "$NS" --timeout=60s >/dev/null 2>&1 || true
  fi
  kubectl create namespace "$NS" >/dev/null
}

# it_plugin_config PLUGIN ARGS: writes $IT_WORK/config.yaml, a TesselSchedulerConfiguration whose
# profile tessel gives PLUGIN the args ARGS (a YAML flow mapping), and prints its path.
it_plugin_config() {
  cat >"$IT_WORK/config.yaml" <<YAML
apiVersion: tessel.io/v1alpha1
kind: TesselSchedulerConfiguration
profiles:
- schedulerName: tessel
  pluginConfig:
  - name: $1
    args: $2
YAML
  echo "$IT_WORK/config.yaml"
}

# it_on_exit FUNC: at exit FUNC runs first (it removes what the test made outside its namespace:
# Queues, Cohorts, cluster-scoped DRA objects), then it_cleanup, which still sees the exit code.
it_on_exit() {
  IT_ON_EXIT=$1
  trap 'rc=$?; "$IT_ON_EXIT"; set +e; (exit $rc); it_cleanup' EXIT
}

# it_wait SECONDS DESCRIPTION CMD...: polls CMD every 0.2 s.
it_wait() {
  local timeout=$1 what=$2; shift 2
  local deadline=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || fail "timed out after ${timeout}s waiting for: $what"
    sleep 0.2
  done
}

# free_ports N: N loopback ports free now, one per line, none handed out before in this test (the
# list is kept in $IT_WORK/ports-given). The sockets are held together while the kernel picks, so
# two ports asked for at once or one after another never coincide.
free_ports() {
  python3 -c '
import socket, sys
want, given_file = int(sys.argv[1]), sys.argv[2]
given = set()
if given_file:
    try:
        given = set(open(given_file).read().split())
    except OSError:
        pass
held, chosen = [], []
while len(chosen) < want:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    held.append(s)
    port = str(s.getsockname()[1])
    if port not in given:
        given.add(port)
        chosen.append(port)
if given_file:
    with open(given_file, "a") as f:
        f.write("".join(p + "\n" for p in chosen))
print("\n".join(chosen))' "${1:-1}" "${IT_WORK:+$IT_WORK/ports-given}"
}
free_port() { free_ports 1; }

# matches PATTERN: `producer | matches [grep options] PATTERN` is `grep -q` that reads its input to
# the end. (grep -q exits at the first match; under pipefail a producer still writing then dies
# of SIGPIPE and the pipeline fails although the line was there.)
matches() { grep "$@" >/dev/null; }

# it_nodes NAME:GPUS[:k=v,k=v][:taint] ...: registers simulated nodes labelled tessel-it=<test>.
it_nodes() {
  local spec file="$IT_WORK/nodes.yaml"
  {
    echo "apiVersion: v1"
    echo "kind: List"
    echo "items:"
    for spec in "$@"; do
      local name gpus labels
      IFS=: read -r name gpus labels <<<"$spec"
      echo "- apiVersion: v1"
      echo "  kind: Node"
      echo "  metadata:"
      echo "    name: $name"
      echo "    labels:"
      echo "      tessel-it: $IT_NAME"
      echo "      nvidia.com/gpu.count: \"$gpus\""
      if [[ -n $labels ]]; then
        local kv
        IFS=, read -r -a kvs <<<"$labels"
        for kv in "${kvs[@]}"; do echo "      ${kv%%=*}: \"${kv#*=}\""; done
      fi
      echo "  status:"
      echo "    capacity: {cpu: \"32\", memory: 128Gi, pods: \"110\", nvidia.com/gpu: \"$gpus\"}"
    done
  } >"$file"
  "$CLUSTER" nodes "$file" >/dev/null
}

# it_pod NAME [--gpus N] [--select k=v]... [--label k=v]... [--annotation k=v]... [--claim PVC]...
#        [--scheduler S] [--priority-class PC]: a pod in $NS that selects this test's nodes.
it_pod() {
  local name=$1; shift
  local gpus=0 scheduler=tessel selectors=("tessel-it: $IT_NAME") labels=() annotations=() claims=() extra=""
  while (($#)); do
    case $1 in
      --gpus) gpus=$2; shift 2 ;;
      --select) selectors+=("${2%%=*}: \"${2#*=}\""); shift 2 ;;
      --label) labels+=("${2%%=*}: \"${2#*=}\""); shift 2 ;;
      --annotation) annotations+=("${2%%=*}: \"${2#*=}\""); shift 2 ;;
      --claim) claims+=("$2"); shift 2 ;;
      --scheduler) scheduler=$2; shift 2 ;;
      --priority-class) extra="  priorityClassName: $2"; shift 2 ;;
      *) fail "it_pod: unknown option $1" ;;
    esac
  done
  local IFS=,
  {
    echo "apiVersion: v1"
    echo "kind: Pod"
    echo "metadata:"
    echo "  name: $name"
    echo "  namespace: $NS"
    echo "  labels: {${labels[*]}}"
    echo "  annotations: {${annotations[*]}}"
    echo "spec:"
    echo "  schedulerName: $scheduler"
    echo "  terminationGracePeriodSeconds: 0"
    [[ -n $extra ]] && echo "$extra"
    echo "  nodeSelector:"
    local s
    for s in "${selectors[@]}"; do echo "    $s"; done
    echo "  containers:"
    echo "  - name: main"
    echo "    image: busybox"
    echo "    resources:"
    echo "      requests: {cpu: 100m, memory: 64Mi}"
    if ((gpus > 0)); then echo "      limits: {nvidia.com/gpu: \"$gpus\"}"; fi
    if ((${#claims[@]})); then
      echo "  volumes:"
      local c
      for c in "${claims[@]}"; do echo "  - {name: vol-$c, persistentVolumeClaim: {claimName: $c}}"; done
    fi
  } | kubectl apply -f - >/dev/null
}

node_of() { kubectl get pod -n "$NS" "$1" -o 'jsonpath={.spec.nodeName}'; }
# it_queue NAME COHORT GPUS names|selects: a Queue (tessel.io/v1alpha1) of COHORT with a nominal
# quota of GPUS, that lists $NS in spec.namespaces ("names") or selects it by its name label
# ("selects": its pods then join it with the label tessel.io/queue=NAME).
it_queue() {
  local how
  case $4 in
    names) how="namespaces: [$NS]" ;;
    selects) how="namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: $NS}}" ;;
    *) fail "it_queue: $4 is not names or selects" ;;
  esac
  kubectl apply --validate=strict -f - >/dev/null <<YAML
apiVersion: tessel.io/v1alpha1
kind: Queue
metadata: {name: $1}
spec: {cohort: $2, $how, nominalQuota: {nvidia.com/gpu: "$3"}}
YAML
}
# it_podgroup NAME MIN [CLASS]: a PodGroup in $NS that needs MIN members; with CLASS, marked for
# provisioning (annotation tessel.io/provisioning-class, docs/provisioning.md).
it_podgroup() {
  local annotations=""
  [[ -n ${3:-} ]] && annotations="annotations: {tessel.io/provisioning-class: \"$3\"}"
  kubectl apply -f - >/dev/null <<YAML
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata:
  name: $1
  namespace: $NS
  $annotations
spec: {minMember: $2}
YAML
}

# it_monitoring_kustomization DIR: a kustomization in DIR (outside manifests/, as kustomize wants
# it and as docs/metrics.md shows) of manifests/ with its monitoring component, in kube-system.
it_monitoring_kustomization() {
  mkdir -p "$1"
  cat >"$1/kustomization.yaml" <<YAML
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: kube-system
resources: [$(realpath --relative-to="$1" "$TESSEL_ROOT/manifests")]
components: [$(realpath --relative-to="$1" "$TESSEL_ROOT/manifests/monitoring")]
YAML
}

it_bound() { [[ -n $(node_of "$1") ]]; }
it_count_bound() {
  kubectl get pods -n "$NS" -o 'jsonpath={range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -c . || true
}
# it_some_bound: true once at least one pod of the test's namespace is bound (for it_wait).
it_some_bound() { (($(it_count_bound) >= 1)); }

# it_start_scheduler NAME [FLAGS...]: runs tessel-scheduler in the background with the
# scheduler's token; sets SCHED_PID_<NAME>, SCHED_PORT_<NAME>; waits for /healthz.
it_start_scheduler() {
  local name=$1; shift
  local port log="$IT_WORK/scheduler-$name.log"
  port=$(free_port)
  # Plain HTTP on a free port for the tests' probes; HTTPS off unless the test asks for it.
  "$TESSEL_SCHEDULER_BIN" --kubeconfig "$SCHED_KUBECONFIG" --bind-address 127.0.0.1 --port "$port" \
    --secure-port 0 "$@" >>"$log" 2>&1 &
  local pid=$!
  IT_PIDS+=("$pid")
  printf -v "SCHED_PID_$name" '%s' "$pid"
  printf -v "SCHED_PORT_$name" '%s' "$port"
  local deadline=$((SECONDS + 20))
  until curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1; do
    kill -0 "$pid" 2>/dev/null || fail "scheduler $name exited: $(tail -n 20 "$log")"
    ((SECONDS < deadline)) || fail "scheduler $name not serving /healthz after 20 s"
    sleep 0.1
  done
}

scheduler_ready() { curl -fsS "http://127.0.0.1:$1/readyz" >/dev/null; }
scheduler_log() { echo "$IT_WORK/scheduler-$1.log"; }
# metric PORT SERIES: the value of one series on /metrics ("" if absent).
metric() {
  curl -fsS "http://127.0.0.1:$1/metrics" | awk -v s="$2" '$1 == s { print $2 }'
}

# it_kill_scheduler NAME: SIGKILL (a crash) and wait.
it_kill_scheduler() {
  local var="SCHED_PID_$1"
  kill -KILL "${!var}"
  wait "${!var}" 2>/dev/null || true
}

# it_kill_mid_run NAME QPS MIN MAX: starts scheduler NAME writing at most QPS requests a second,
# waits until MIN of the test's pods are bound, and kills it with SIGKILL. KILLED_AT is then how
# many were bound; the test fails if all MAX were (the kill came too late to test anything).
it_kill_mid_run() {
  local name=$1 qps=$2 min=$3 max=$4
  it_start_scheduler "$name" --leader-elect=false --kube-api-qps "$qps" --kube-api-burst 1
  it_wait 60 "$min pods bound by $name" eval "(( \$(it_count_bound) >= $min ))"
  it_kill_scheduler "$name"
  KILLED_AT=$(it_count_bound)
  say "killed the scheduler $name with SIGKILL with $KILLED_AT of $max pods bound"
  ((KILLED_AT < max)) || fail "all $max pods were bound before the kill; nothing was tested"
}

# it_stop_scheduler NAME: SIGTERM and wait.
it_stop_scheduler() {
  local var="SCHED_PID_$1"
  local pid=${!var}
  kill -TERM "$pid" 2>/dev/null || true
  local i
  for ((i = 0; i < 100; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$pid" 2>/dev/null && fail "scheduler $1 did not stop within 10 s of SIGTERM"
  wait "$pid" 2>/dev/null || true
}
