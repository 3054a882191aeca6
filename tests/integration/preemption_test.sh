#!/usr/bin/env bash
# preemption_test.sh: priority preemption on the real control plane (kube-apiserver with
# kube-controller-manager's job and disruption controllers, and the simulated kubelet).
#  1. The single precious node: a Job's low-priority pod (tessel-batch) holds all 8 GPUs of
#     node preempt-a. A tessel-production pod arrives: Tessel evicts the Job's pod through the
#     Eviction API, sets the preemptor's status.nominatedNodeName, and binds it there once the
#     victim is gone. The Job controller creates a replacement pod, which waits in the queue
#     (PodScheduled=False); scheduler_preemption_attempts_total counts the preemption.
#     The victim is told: a Preempted event naming the preemptor.
#  2. A PodDisruptionBudget blocks an eviction: a low-priority pod on node preempt-b is covered
#     by a budget (minAvailable 1, policy/v1, 0 disruptions allowed in its status); a
#     tessel-production pod that needs its room does not even ask for the eviction (the plan
#     the budget refuses is not started), so the guarded pod stays and the preemptor waits.
#  3. A victim that lingers (a finalizer holds it): while it terminates it shows the condition
#     DisruptionTarget=True, reason PreemptionByScheduler, naming its preemptor.
source "$(dirname "$0")/lib.sh"
it_begin preempt

it_nodes preempt-a:8:pool=a preempt-b:8:pool=b preempt-c:8:pool=c
it_start_scheduler main --leader-elect=false
it_wait 30 "scheduler ready" scheduler_ready "$SCHED_PORT_main"

# --- 1. The precious node ---------------------------------------------------------------------
kubectl apply -f - >/dev/null <<YAML
apiVersion: batch/v1
kind: Job
metadata: {name: low-job, namespace: $NS}
spec:
  backoffLimit: 6
  template:
    spec:
      schedulerName: tessel
      priorityClassName: tessel-batch
      restartPolicy: Never
      terminationGracePeriodSeconds: 0
      nodeSelector: {tessel-it: $IT_NAME, pool: a}
      containers:
      - name: main
        image: busybox
        resources:
          requests: {cpu: 100m, memory: 64Mi}
          limits: {nvidia.com/gpu: "8"}
YAML
job_pods() {
  kubectl get pods -n "$NS" -l job-name=low-job \
    -o 'jsonpath={range .items[*]}{.metadata.name}|{.metadata.uid}|{.spec.nodeName}|{.metadata.deletionTimestamp}{"\n"}{end}'
}
first_bound() { job_pods | matches '|preempt-a|$'; }
it_wait 60 "the Job's pod bound to preempt-a" first_bound
victim=$(job_pods | grep '|preempt-a|$' | head -n1)
victim_name=${victim%%|*}
victim_uid=$(cut -d'|' -f2 <<<"$victim")
say "victim: $victim_name ($victim_uid)"

it_pod urgent --gpus 8 --priority-class tessel-production --select pool=a

victim_gone() { ! job_pods | matches "^$victim_name|$victim_uid|preempt-a|$"; }
it_wait 60 "the Job's pod evicted" victim_gone
nominated() {
  [[ $(kubectl get pod -n "$NS" urgent -o 'jsonpath={.status.nominatedNodeName}') == preempt-a ]]
}
nominated_or_bound_there() { nominated || [[ $(node_of urgent) == preempt-a ]]; }
# The nomination is written with the PodScheduled=False condition; the pod may already be bound
# when we look, and then the field stays as the apiserver got it. On a loaded machine the victim
# may be gone and urgent bound before that status write went out: the scheduler then drops the
# write (a bound pod's PodScheduled=False would be stale), and the bind itself shows the node.
it_wait 60 "urgent nominated to preempt-a (or bound there)" nominated_or_bound_there
it_wait 60 "urgent bound" it_bound urgent
[[ $(node_of urgent) == preempt-a ]] || fail "urgent went to $(node_of urgent), want preempt-a"

preempted_event() {
  kubectl get events -n "$NS" --field-selector "involvedObject.name=$victim_name,reason=Preempted" \
    -o 'jsonpath={range .items[*]}{.message}{"\n"}{end}' | matches "preempted by $NS/urgent (priority"
}
it_wait 30 "the victim's Preempted event names its preemptor" preempted_event

# The Job controller replaces its evicted pod; the replacement waits: the node is taken by a
# more important pod, and tessel-batch (preemptionPolicy: Never) does not preempt.
replacement() { job_pods | grep -v "^$victim_name|" | matches .; }
it_wait 60 "the Job's replacement pod" replacement
repl=$(job_pods | grep -v "^$victim_name|" | head -n1)
repl_name=${repl%%|*}
say "replacement: $repl_name"
repl_waits() {
  [[ $(kubectl get pod -n "$NS" "$repl_name" \
        -o 'jsonpath={.status.conditions[?(@.type=="PodScheduled")].reason}') == Unschedulable ]]
}
it_wait 60 "the replacement reported Unschedulable" repl_waits
[[ -z $(node_of "$repl_name") ]] || fail "the replacement was bound to $(node_of "$repl_name")"

attempts=$(metric "$SCHED_PORT_main" scheduler_preemption_attempts_total)
[[ $attempts == 1 ]] || fail "scheduler_preemption_attempts_total = '$attempts', want 1"
victims=$(metric "$SCHED_PORT_main" 'scheduler_preemption_victims_sum{reason="LowerPriority"}')
[[ $victims == 1 ]] || fail "scheduler_preemption_victims_sum{reason=LowerPriority} = '$victims', want 1"

# --- 2. A PodDisruptionBudget blocks the eviction ----------------------------------------------
it_pod guarded --gpus 8 --priority-class tessel-batch --select pool=b --label app=guarded
it_wait 60 "guarded bound" it_bound guarded
cat <<YAML | kubectl apply -f - >/dev/null
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: guarded, namespace: $NS}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: guarded}}
YAML
# The disruption controller has looked at the budget (0 disruptions allowed).
pdb_observed() {
  [[ -n $(kubectl get pdb -n "$NS" guarded -o 'jsonpath={.status.observedGeneration}') ]]
}
it_wait 60 "the budget's status" pdb_observed
say "budget: $(kubectl get pdb -n "$NS" guarded -o 'jsonpath={.status}')"

it_pod urgent-b --gpus 8 --priority-class tessel-production --select pool=b
tried() {
  [[ $(kubectl get pod -n "$NS" urgent-b -o 'jsonpath={.status.conditions[?(@.type=="PodScheduled")].status}') == False ]]
}
it_wait 60 "urgent-b tried and left pending" tried
sleep 5  # a retry or two
! grep -q "evict pod $NS/guarded" "$(scheduler_log main)" \
  || fail "an eviction the budget refuses was asked for: $(grep "evict pod $NS/guarded" "$(scheduler_log main)" | tail -n1)"
say "no eviction asked for guarded: its budget allows 0 disruptions"
[[ -z $(kubectl get pod -n "$NS" guarded -o 'jsonpath={.metadata.deletionTimestamp}') ]] \
  || fail "guarded is being deleted although its budget forbids it"
[[ $(node_of guarded) == preempt-b ]] || fail "guarded is not on preempt-b any more"
[[ -z $(node_of urgent-b) ]] || fail "urgent-b was bound to $(node_of urgent-b)"
nominated_b=$(kubectl get pod -n "$NS" urgent-b -o 'jsonpath={.status.nominatedNodeName}')
[[ -z $nominated_b ]] || fail "urgent-b nominated to $nominated_b although no eviction succeeded"

# --- 3. A lingering victim carries DisruptionTarget ---------------------------------------------
kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: lingering, namespace: $NS, finalizers: [tessel.io/test-hold]}
spec:
  schedulerName: tessel
  priorityClassName: tessel-batch
  terminationGracePeriodSeconds: 0
  nodeSelector: {tessel-it: $IT_NAME, pool: c}
  containers:
  - {name: main, image: busybox, resources: {limits: {nvidia.com/gpu: "8"}}}
YAML
it_wait 60 "lingering bound" it_bound lingering
it_pod urgent-c --gpus 8 --priority-class tessel-production --select pool=c
terminating() { [[ -n $(kubectl get pod -n "$NS" lingering -o 'jsonpath={.metadata.deletionTimestamp}') ]]; }
it_wait 60 "lingering evicted" terminating
disruption() {
  kubectl get pod -n "$NS" lingering \
    -o 'jsonpath={.status.conditions[?(@.type=="DisruptionTarget")].reason} {.status.conditions[?(@.type=="DisruptionTarget")].message}'
}
told() { [[ $(disruption) == "PreemptionByScheduler tessel: preempted by $NS/urgent-c (priority "* ]]; }
it_wait 30 "DisruptionTarget=PreemptionByScheduler names the preemptor" told
say "lingering: $(disruption)"
[[ -z $(node_of urgent-c) ]] || fail "urgent-c bound while its victim still holds the GPUs"
kubectl patch pod -n "$NS" lingering --type=json -p '[{"op":"remove","path":"/metadata/finalizers"}]' >/dev/null
it_wait 60 "urgent-c bound once the victim is gone" it_bound urgent-c
[[ $(node_of urgent-c) == preempt-c ]] || fail "urgent-c went to $(node_of urgent-c), want preempt-c"
