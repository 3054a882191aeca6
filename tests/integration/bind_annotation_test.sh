#!/usr/bin/env bash
# bind_annotation_test.sh: one API write per bind. The apiserver copies a Binding's
# metadata.annotations onto the pod (checked first with a raw Binding), and tessel-scheduler
# binds GPU pods that way: every bound GPU pod carries tessel.io/gpu-devices naming as many
# distinct devices of its node as it asked for, no device is given twice, and the scheduler
# sent no pod PATCH (its write counter shows binds only).
source "$(dirname "$0")/lib.sh"
it_begin bindann

it_nodes bindann-a:4 bindann-b:2

# The apiserver itself: a Binding with annotations, posted by hand.
it_pod raw --scheduler nobody
kubectl create --raw "/api/v1/namespaces/$NS/pods/raw/binding" -f - >/dev/null <<JSON
{"apiVersion":"v1","kind":"Binding","metadata":{"name":"raw","annotations":{"tessel.io/gpu-devices":"0,3"}},
 "target":{"apiVersion":"v1","kind":"Node","name":"bindann-a"}}
JSON
got=$(kubectl get pod -n "$NS" raw -o 'jsonpath={.spec.nodeName} {.metadata.annotations.tessel\.io/gpu-devices}')
[[ $got == "bindann-a 0,3" ]] || fail "raw Binding: pod shows '$got', want 'bindann-a 0,3'"
kubectl delete pod -n "$NS" raw --grace-period=0 --force >/dev/null 2>&1 || true

it_start_scheduler main --leader-elect=false
it_wait 30 "scheduler ready" scheduler_ready "$SCHED_PORT_main"
declare -A want=([g1a]=1 [g1b]=1 [g2a]=2 [g2b]=2)
for p in "${!want[@]}"; do it_pod "$p" --gpus "${want[$p]}"; done
for p in "${!want[@]}"; do it_wait 30 "$p bound" it_bound "$p"; done

declare -A given=()
for p in "${!want[@]}"; do
  n=$(node_of "$p")
  devs=$(kubectl get pod -n "$NS" "$p" -o 'jsonpath={.metadata.annotations.tessel\.io/gpu-devices}')
  say "$p on $n: devices '$devs'"
  [[ -n $devs ]] || fail "$p has no tessel.io/gpu-devices annotation"
  IFS=, read -r -a list <<<"$devs"
  ((${#list[@]} == want[$p])) || fail "$p asked ${want[$p]} GPUs, annotation names '$devs'"
  cap=$(kubectl get node "$n" -o 'jsonpath={.status.allocatable.nvidia\.com/gpu}')
  for d in "${list[@]}"; do
    ((d >= 0 && d < cap)) || fail "$p: device $d out of range on $n ($cap GPUs)"
    [[ -z ${given[$n/$d]:-} ]] || fail "device $d of $n given to ${given[$n/$d]} and $p"
    given[$n/$d]=$p
  done
done

# One write per bind: the binding client sent exactly the four binds, and no pod PATCH at all.
posts=$(metric "$SCHED_PORT_main" 'tessel_kube_requests_total{client="binding",verb="POST"}')
((posts == 4)) || fail "the binding client sent '$posts' POSTs, want 4 (one Binding per pod)"
for c in binding status; do
  p=$(metric "$SCHED_PORT_main" "tessel_kube_requests_total{client=\"$c\",verb=\"PATCH\"}")
  [[ -z $p ]] || fail "the $c client sent $p PATCHes"
done
binds=$(metric "$SCHED_PORT_main" tessel_binds_total)
((binds == 4)) || fail "tessel_binds_total is '$binds', want 4"
it_stop_scheduler main
exit 0
