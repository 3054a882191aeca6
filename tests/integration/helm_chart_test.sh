#!/usr/bin/env bash
# helm_chart_test.sh: the Helm chart (charts/tessel), without a cluster.
#
#   1. Its copies of manifests/' CRDs and dashboard are identical (tools/sync-chart-files --check).
#   2. `helm lint --strict` passes, with the defaults and with every optional part on.
#   3. `helm template` renders what the values say (read back from the rendered objects): the
#      image tag is the repository's VERSION, the release namespace reaches every subject and the
#      leader-election Role, the pod template carries config.yaml's checksum (a config change
#      changes it), each create/enabled switch adds or removes its objects (adminAPI also its
#      flags, port and env); broken values fail with an error that names them.
#   4. With the default values the chart renders the same objects as `kubectl kustomize
#      manifests/`, and with monitoring.enabled the same as manifests/ plus its monitoring
#      component (helm_objects.py diff; a difference prints a diff per object).
# helm is built by tools/cluster/build-helm.sh (cached); kubectl is the harness's own.
source "$(dirname "$0")/lib.sh"
IT_NAME=helm_chart
HERE=$(cd "$(dirname "$0")" && pwd)
CHART="$TESSEL_ROOT/charts/tessel"
OBJECTS="$HERE/helm_objects.py"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tessel-helm-chart.XXXXXX")
trap 'rc=$?; rm -rf "$WORK"; ((rc)) && say FAILED || say PASSED; exit $rc' EXIT

HELM=$("$TESSEL_ROOT/tools/cluster/build-helm.sh") || fail "could not build helm (tools/cluster/build-helm.sh)"
KUBECTL="$("$TESSEL_ROOT/tools/cluster/build-k8s.sh")/kubectl" || fail "no kubectl (tools/cluster/build-k8s.sh)"
VERSION=$(<"$TESSEL_ROOT/VERSION")

# render NAME [HELM ARGS...]: `helm template` into $WORK/NAME.yaml (CRDs included), or fail.
render() {
  local name=$1; shift
  "$HELM" template tessel "$CHART" --namespace kube-system --include-crds "$@" \
    >"$WORK/$name.yaml" 2>"$WORK/$name.err" || fail "helm template $*: $(cat "$WORK/$name.err")"
}
# render_fails WANT [HELM ARGS...]: `helm template` must fail, saying WANT.
render_fails() {
  local want=$1; shift
  local out
  if out=$("$HELM" template tessel "$CHART" --namespace kube-system "$@" 2>&1); then
    fail "helm template $* rendered; it should fail with \"$want\""
  fi
  grep -qF -- "$want" <<<"$out" || fail "helm template $*: the error does not say \"$want\": $out"
}
get() { python3 "$OBJECTS" get "$WORK/$1.yaml" "${@:2}"; }
# expect WHAT GOT WANT
expect() { [[ $2 == "$3" ]] || fail "$1: got '$2', want '$3'"; }
has() { python3 "$OBJECTS" list "$WORK/$1.yaml" | matches -xF "$2"; }
count() { python3 "$OBJECTS" list "$WORK/$1.yaml" | grep -c "^$2 " || true; }

# ---- 1. the copies ----------------------------------------------------------------------------
"$TESSEL_ROOT/tools/sync-chart-files" --check || fail "the chart's copies differ from manifests/"

# ---- 2. lint ----------------------------------------------------------------------------------
"$HELM" lint --strict "$CHART" >"$WORK/lint.out" 2>&1 || fail "helm lint: $(cat "$WORK/lint.out")"
"$HELM" lint --strict "$CHART" --set monitoring.enabled=true --set admin.service.enabled=true \
  >"$WORK/lint.out" 2>&1 || fail "helm lint (everything on): $(cat "$WORK/lint.out")"

# ---- 3. what the values say -------------------------------------------------------------------
render default
expect "image" "$(get default Deployment tessel-scheduler spec.template.spec.containers.0.image)" \
  "tessel-scheduler:$VERSION"
expect "replicas" "$(get default Deployment tessel-scheduler spec.replicas)" 2
args=$(get default Deployment tessel-scheduler spec.template.spec.containers.0.args)
for want in --leader-elect=true --lock-namespace=kube-system --lock-name=tessel-scheduler \
  --admin-port=10260 --secure-port=10259 --probe-port=10261 --admin-api-port=10262; do
  grep -qF "\"$want\"" <<<"$args" || fail "default args lack $want: $args"
done
# The checksum is config.yaml's.
config=$(get default ConfigMap tessel-scheduler-config data.config.yaml)
checksum=$(get default Deployment tessel-scheduler 'spec.template.metadata.annotations.checksum/config')
expect "checksum/config" "$checksum" "$(printf '%s' "$config" | sha256sum | cut -d' ' -f1)"
expect "CRDs" "$(count default CustomResourceDefinition)" 4
expect "PriorityClasses" "$(count default PriorityClass)" 3
has default "Service kube-system/tessel-scheduler-admin" && fail "admin Service rendered by default"
has default "ServiceMonitor kube-system/tessel-scheduler" && fail "ServiceMonitor rendered by default"

# A configuration change changes the file and the checksum, so the pods roll.
render changed -f "$HERE/testdata/helm-config-values.yaml"
changed_config=$(get changed ConfigMap tessel-scheduler-config data.config.yaml)
grep -q "schedulerName: tessel-spread" <<<"$changed_config" || fail "new profile not in config.yaml: $changed_config"
grep -q "^kind: TesselSchedulerConfiguration" <<<"$changed_config" || fail "config.yaml has no kind: $changed_config"
changed_checksum=$(get changed Deployment tessel-scheduler 'spec.template.metadata.annotations.checksum/config')
[[ $changed_checksum != "$checksum" ]] || fail "a configuration change left checksum/config as it was"
# The whole file as a string is taken as it is.
printf 'apiVersion: tessel.io/v1alpha1\nkind: TesselSchedulerConfiguration\nparallelism: 4\n' >"$WORK/config.yaml"
render string --set-file schedulerConfig="$WORK/config.yaml"
expect "config.yaml from a string" "$(get string ConfigMap tessel-scheduler-config data.config.yaml)" \
  "$(cat "$WORK/config.yaml")"

# Another namespace reaches every subject, the Lease and its Role. One object stays in
# kube-system whatever the release's namespace: the RoleBinding to the API server's
# extension-apiserver-authentication-reader Role, which lives there (as metrics-server's does).
"$HELM" template tessel "$CHART" --namespace tessel-system >"$WORK/ns.yaml" || fail "helm template -n tessel-system"
left=$(grep -n "kube-system" "$WORK/ns.yaml" | grep -v "namespace: kube-system  # where the Role and its ConfigMap are" || true)
[[ -z $left ]] || fail "kube-system left in a release in tessel-system: $left"
expect "Role namespace" "$(get ns Role tessel-scheduler-leader-election metadata.namespace)" tessel-system
expect "FlowSchema subject" \
  "$(get ns FlowSchema tessel-scheduler spec.rules.0.subjects.0.serviceAccount.namespace)" tessel-system
grep -qF -- "--lock-namespace=tessel-system" "$WORK/ns.yaml" || fail "--lock-namespace is not the release's"
grep -qF -- "--admin-api-service=tessel-system/tessel-admin-api" "$WORK/ns.yaml" \
  || fail "--admin-api-service is not the release's"
expect "APIService's Service namespace" \
  "$(get ns APIService v1alpha1.admin.tessel.io spec.service.namespace)" tessel-system

# Switches.
has default "APIService v1alpha1.admin.tessel.io" || fail "no APIService rendered by default"
render noapi --set adminAPI.enabled=false
grep -qF -- "--admin-api-port=0" "$WORK/noapi.yaml" || fail "adminAPI.enabled=false: no --admin-api-port=0"
for object in "APIService v1alpha1.admin.tessel.io" "Service kube-system/tessel-admin-api" \
  "EndpointSlice kube-system/tessel-admin-api" "ClusterRole tessel-admin-api-reader"; do
  has noapi "$object" && fail "adminAPI.enabled=false still renders $object"
done
grep -qE "name: (admin-api|POD_IP)" "$WORK/noapi.yaml" && fail "adminAPI.enabled=false still names its port or POD_IP"
render apiport --set adminAPI.port=12345
expect "EndpointSlice port" "$(get apiport EndpointSlice tessel-admin-api ports.0.port)" 12345
expect "Service targetPort" "$(get apiport Service tessel-admin-api spec.ports.0.targetPort)" 12345
grep -qF -- "--admin-api-port=12345" "$WORK/apiport.yaml" || fail "adminAPI.port: no --admin-api-port=12345"
render single --set replicas=1 --set leaderElection.enabled=false
grep -qF -- "--leader-elect=false" "$WORK/single.yaml" || fail "leaderElection.enabled=false: no --leader-elect=false"
has single "Role kube-system/tessel-scheduler-leader-election" && fail "leader-election Role without leader election"
render norbac --set rbac.create=false --set serviceAccount.create=false \
  --set priorityClasses.create=false --set flowControl.create=false --set podDisruptionBudget.enabled=false
for kind in ClusterRole ClusterRoleBinding Role RoleBinding ServiceAccount PriorityClass FlowSchema \
  PriorityLevelConfiguration PodDisruptionBudget; do
  expect "$kind objects with create=false" "$(count norbac "$kind")" 0
done
expect "other objects" "$(count norbac Deployment)" 1
render extras --set monitoring.enabled=true --set monitoring.dashboard.namespace=grafana \
  --set admin.service.enabled=true --set image.repository=registry.example/tessel --set image.tag=9.9.9
expect "admin Service port" "$(get extras Service tessel-scheduler-admin spec.ports.0.port)" 10260
expect "admin Service target" "$(get extras Service tessel-scheduler-admin spec.ports.0.targetPort)" admin
expect "dashboard namespace" "$(get extras ConfigMap tessel-grafana-dashboard metadata.namespace)" grafana
expect "dashboard label" "$(get extras ConfigMap tessel-grafana-dashboard metadata.labels.grafana_dashboard)" 1
get extras ConfigMap tessel-grafana-dashboard data.tessel-dashboard.json | python3 -c 'import json,sys; json.load(sys.stdin)' \
  || fail "the dashboard ConfigMap does not hold JSON"
expect "ServiceMonitor port" "$(get extras ServiceMonitor tessel-scheduler spec.endpoints.0.port)" https
expect "image" "$(get extras Deployment tessel-scheduler spec.template.spec.containers.0.image)" \
  registry.example/tessel:9.9.9

# Broken values fail, naming what is wrong.
render_fails "/replicas" --set replicas=two
render_fails "replicas: 3 with leaderElection.enabled=false" --set replicas=3 --set leaderElection.enabled=false
render_fails "'replica' not allowed" --set replica=3
render_fails "/image/pullPolicy" --set image.pullPolicy=Sometimes
render_fails "/schedulerConfig" --set schedulerConfig=5
render_fails "/logLevel" --set logLevel=high

# ---- 4. the same objects as kustomize ---------------------------------------------------------
"$KUBECTL" kustomize "$TESSEL_ROOT/manifests" >"$WORK/kustomize.yaml" || fail "kubectl kustomize manifests/"
say "chart (default values) against kubectl kustomize manifests/:"
python3 "$OBJECTS" diff "$WORK/default.yaml" "$WORK/kustomize.yaml" --unhash tessel-scheduler-config >&2 \
  || fail "the chart and manifests/ differ (diff above: '-' is kustomize, '+' the chart)"
it_monitoring_kustomization "$WORK/monitoring"
"$KUBECTL" kustomize "$WORK/monitoring" >"$WORK/kustomize-monitoring.yaml" || fail "kubectl kustomize with monitoring"
render monitoring --set monitoring.enabled=true
say "chart (monitoring.enabled) against manifests/ with its monitoring component:"
python3 "$OBJECTS" diff "$WORK/monitoring.yaml" "$WORK/kustomize-monitoring.yaml" \
  --unhash tessel-scheduler-config >&2 \
  || fail "the chart with monitoring and manifests/ + monitoring differ (diff above)"
exit 0
