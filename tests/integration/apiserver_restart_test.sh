#!/usr/bin/env bash
# apiserver_restart_test.sh: kube-apiserver is restarted under a running scheduler. The
# scheduler keeps running, its informers reconnect (resuming their watches), and pods created
# after the restart are bound.
source "$(dirname "$0")/lib.sh"
it_begin apirestart

it_nodes apirestart-0:8
it_start_scheduler main --leader-elect=false
it_wait 30 "scheduler ready" scheduler_ready "$SCHED_PORT_main"
it_pod before --gpus 1
it_wait 30 "pod bound before the restart" it_bound before

say "restarting kube-apiserver"
"$CLUSTER" restart apiserver >/dev/null 2>&1 || fail "apiserver restart failed"
kill -0 "$SCHED_PID_main" 2>/dev/null || fail "the scheduler died with the apiserver"

t0=$SECONDS
it_pod after-0 --gpus 1
it_pod after-1 --gpus 2
it_wait 60 "after-0 bound" it_bound after-0
it_wait 60 "after-1 bound" it_bound after-1
say "bound pods created after the restart in $((SECONDS - t0)) s"
grep -qE "watch failed|list failed" "$(scheduler_log main)" \
  || fail "the scheduler log shows no reconnect"
scheduler_ready "$SCHED_PORT_main" || fail "not ready after the restart"
kill -0 "$SCHED_PID_main" 2>/dev/null || fail "the scheduler exited"
it_stop_scheduler main
exit 0
