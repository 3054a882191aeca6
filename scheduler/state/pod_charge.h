// What a bound pod is charged is decided when it is bound, and later edits of the pod cannot
// lower it (a namespace editor may annotate their own pods). The charge's inputs are a few
// annotations and labels: the GPU fraction (tessel.io/gpu-milli), the sharing and memory hints,
// the devices chosen (tessel.io/gpu-devices), the queue label (tessel.io/queue), and what the
// pod's DRA claims charge (Pod::dra_charge, dra_charge.h; kept in the record as
// tessel.io/dra-charge).
//
//   - At bind, the scheduler records them in the Binding's annotation tessel.io/charge (the API
//     server copies it onto the pod with the bind): ChargeRecord.
//   - While the cache holds a pod, every later copy of it keeps the held copy's inputs:
//     KeepCharge. An edit changes nothing Tessel counts.
//   - A bound pod the cache sees for the first time (after a restart) is charged from its
//     record where the record charges at least as many GPUs as the pod's annotations say now,
//     else from the annotations: the larger of the two, so an edit made while no scheduler
//     watched cannot lower a charge either. The queue is always the recorded one.
// The record itself is guarded like the other tessel.io/ keys: manifests/admission-policy.yaml
// refuses changes to them on bound pods by anyone but the scheduler.
//
//   AddBindingAnnotation(state, kChargeAnnotation, ChargeRecord(pod, BindingAnnotations(state)));
//   KeepCharge(held, update);     // cache: a copy of a pod it holds
//   RestoreCharge(first_seen);    // cache: a bound pod it did not hold
#pragma once

#include <array>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "scheduler/api/objects.h"

namespace tessel {

inline constexpr std::string_view kChargeAnnotation = "tessel.io/charge";
// The pod label that names a team queue (scheduler/quota/queue.h's kQueueLabel; the quota floor
// stands above this one).
inline constexpr std::string_view kChargeQueueLabel = "tessel.io/queue";
// The annotations a charge reads (besides the queue label).
inline constexpr std::array<std::string_view, 4> kChargeAnnotations = {
    "tessel.io/gpu-milli", "tessel.io/gpu-sharing", "tessel.io/gpu-memory", "tessel.io/gpu-devices"};

// The key of the charge record that holds what the pod's DRA claims charge (Pod::dra_charge,
// dra_charge.h), as "resource=quantity,..." (e.g. "nvidia.com/gpu=2").
inline constexpr std::string_view kDraChargeKey = "tessel.io/dra-charge";
std::string FormatDraCharge(const Resources& charge);
absl::StatusOr<Resources> ParseDraCharge(std::string_view text);

// The record of `pod`'s charge inputs as it is bound, with `binding` (the annotations the bind
// adds, e.g. the devices chosen) over the pod's own: a JSON object of the keys present, by
// their full names, e.g. {"tessel.io/gpu-milli":"900","tessel.io/queue":"team-a"}.
std::string ChargeRecord(const Pod& pod, const StringMap& binding);

// `update` is a later copy of the bound pod `held`: it takes `held`'s charge inputs (present or
// absent alike), its device choice, its DRA charge and its record.
void KeepCharge(const Pod& held, Pod& update);

// A bound pod seen for the first time: charged from its tessel.io/charge record where that
// holds at least as many GPU milli as its annotations say now (see above). A record that does
// not decode changes nothing and adds a warning naming the field to pod.decode_warnings.
void RestoreCharge(Pod& pod);

}  // namespace tessel
