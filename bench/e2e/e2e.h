// `tessel-bench e2e`: the live path measured on a real kube-apiserver (docs/bench.md).
//
//   tessel-bench e2e --nodes N --pods M [--qps Q] [--burst B] [--compare kube-scheduler|ceiling]
//                    [--seed S] [--json] [--kubeconfig FILE] ...
//
// It registers N simulated GPU nodes, creates M pending GPU pods (bench/e2e/workload.h), starts
// tessel-scheduler (the binary next to tessel-bench) and watches the pods until every placeable
// pod is bound or binding stops, then reports the time, binds/s, pods left pending, GPUs left
// idle, nodes left whole, nodes overcommitted and the scheduler's peak RSS. --compare runs the
// same pods again through kube-scheduler (schedulerName default-scheduler, same client QPS) or
// through a client that binds a precomputed perfect plan from 16 threads (the apiserver's own
// limit), and prints the runs side by side.
#pragma once

namespace tessel::bench {

int E2eMain(int argc, char** argv);

}  // namespace tessel::bench
