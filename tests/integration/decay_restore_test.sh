#!/usr/bin/env bash
# decay_restore_test.sh: fairness over time survives the scheduler (docs/quota.md, "Fairness over
# time"). QueueQuota decays usage with a half-life of an hour and writes it into each Queue's
# status.fairSharing; a scheduler reads it back.
#   1. A Queue whose status holds 8 GPUs of decayed usage, written a minute ago, is there before
#      the scheduler starts (a restart): the scheduler's first write keeps it near 8 GPUs (a
#      minute of an hour's half-life toward nothing held), not 0.
#   2. A second Queue with such a status is made while the scheduler runs (its Queue came late):
#      it is taken too.
#   3. A Queue whose status does not read is logged naming the object and the field, and its
#      decayed usage starts from 0.
source "$(dirname "$0")/lib.sh"
it_begin decayrestore

kubectl apply -f "$TESSEL_ROOT/manifests/crds/queues.yaml" >/dev/null
kubectl wait --for condition=established --timeout=60s crd/queues.tessel.io >/dev/null || fail "Queue CRD not established"
Q_RESTART="$NS-restart" Q_LATE="$NS-late" Q_BAD="$NS-bad"
cleanup_queues() { kubectl delete queues.tessel.io "$Q_RESTART" "$Q_LATE" "$Q_BAD" --ignore-not-found >/dev/null 2>&1 || true; }
cleanup_queues
it_on_exit cleanup_queues

# queue_with_status NAME GPU-QUANTITY NAMESPACE: a Queue of $NS's cohort for NAMESPACE with
# status.fairSharing as a scheduler wrote it a minute ago.
queue_with_status() {
  kubectl apply --validate=strict -f - >/dev/null <<YAML
apiVersion: tessel.io/v1alpha1
kind: Queue
metadata: {name: $1}
spec: {cohort: $NS, namespaces: [$3], nominalQuota: {nvidia.com/gpu: "4"}}
YAML
  local at
  at=$(date -u -d '-60 seconds' +%Y-%m-%dT%H:%M:%SZ)
  kubectl patch queues.tessel.io "$1" --subresource=status --type=merge \
    -p "{\"status\":{\"fairSharing\":{\"decayedUsage\":{\"nvidia.com/gpu\":\"$2\"},\"decayedUsageComputedAt\":\"$at\"}}}" >/dev/null
}
decayed_milli() {  # NAME: status.fairSharing.decayedUsage nvidia.com/gpu in milli-GPUs ("" if none)
  local q
  q=$(kubectl get queues.tessel.io "$1" -o 'jsonpath={.status.fairSharing.decayedUsage.nvidia\.com/gpu}')
  [[ -n $q ]] || return 0
  python3 -c 'import sys
q = sys.argv[1]
print(int(q[:-1]) if q.endswith("m") else int(float(q) * 1000))' "$q"
}
computed_at() { kubectl get queues.tessel.io "$1" -o 'jsonpath={.status.fairSharing.decayedUsageComputedAt}'; }
# Rewritten by this scheduler (a newer time than the one set above), near GPUS of usage: within
# 1.5 % below it (a minute or two of an hour's half-life), never above.
rewritten_near() {  # NAME MILLI SET-AT
  local m
  m=$(decayed_milli "$1")
  [[ -n $m && $(computed_at "$1") != "$3" ]] && ((m <= $2 && m >= $2 * 985 / 1000))
}

queue_with_status "$Q_RESTART" 8 "$NS"  # the test's pods are its own
restart_at=$(computed_at "$Q_RESTART")
[[ -n $restart_at ]] || fail "the Queue's status was not written (status subresource)"
kubectl apply --validate=strict -f - >/dev/null <<YAML
apiVersion: tessel.io/v1alpha1
kind: Queue
metadata: {name: $Q_BAD}
spec: {cohort: $NS, namespaces: [$Q_BAD], nominalQuota: {nvidia.com/gpu: "4"}}
YAML
kubectl patch queues.tessel.io "$Q_BAD" --subresource=status --type=merge \
  -p '{"status":{"fairSharing":{"decayedUsage":{"nvidia.com/gpu":"lots"},"decayedUsageComputedAt":"2026-01-01T00:00:00Z"}}}' >/dev/null

it_nodes decay-a:8
it_start_scheduler main --leader-elect=false --config "$(it_plugin_config QueueQuota '{usageHalfLifeSeconds: 3600}')"
it_wait 30 "scheduler ready" scheduler_ready "$SCHED_PORT_main"
# A queued pod's cycle advances the decay of every queue (QueueQuota's PreFilter); the statuses
# are written after.
it_pod first
it_wait 30 "first bound" it_bound first

it_wait 60 "$Q_RESTART's decayed usage restored (near 8 GPUs, rewritten)" rewritten_near "$Q_RESTART" 8000 "$restart_at"

queue_with_status "$Q_LATE" 6 "$Q_LATE"
late_at=$(computed_at "$Q_LATE")
it_pod second
it_wait 60 "$Q_LATE's decayed usage taken although it came after the first cycle" rewritten_near "$Q_LATE" 6000 "$late_at"

bad_logged() { matches -F "Queue $Q_BAD: status.fairSharing.decayedUsage" "$(scheduler_log main)"; }
it_wait 10 "the unreadable status logged, naming the object and field" bad_logged

it_stop_scheduler main
exit 0
