// The charge record of a bound pod and the rules that keep it (pod_charge.h).
#include "scheduler/state/pod_charge.h"

#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"
#include "scheduler/api/device_list.h"
#include "scheduler/gpu/gpu_devices.h"
#include "scheduler/util/strings.h"

namespace tessel {
namespace {

// Sets `key` in `map` to `value`, or erases it when there is none.
void SetOrErase(StringMap& map, std::string_view key, const std::string* value) {
  if (value == nullptr) {
    map.erase(std::string(key));
  } else {
    map[std::string(key)] = *value;
  }
}

const std::string* Find(const StringMap& map, std::string_view key) {
  auto it = map.find(key);
  return it == map.end() ? nullptr : &it->second;
}

// The GPU inputs of `from` (present or absent) on `to`, with the device choice they name.
void TakeGpuInputs(const StringMap& from, Pod& to) {
  for (std::string_view key : kChargeAnnotations) SetOrErase(to.meta.annotations, key, Find(from, key));
}

}  // namespace

std::string FormatDraCharge(const Resources& charge) {
  std::string out;
  for (const auto& [name, amount] : charge.Entries()) {
    StrAppend(&out, out.empty() ? "" : ",", name, "=", FormatResourceQuantity(name, amount));
  }
  return out;
}

absl::StatusOr<Resources> ParseDraCharge(std::string_view text) {
  Resources out;
  for (absl::string_view item : absl::StrSplit(absl::string_view(text.data(), text.size()), ',', absl::SkipEmpty())) {
    const size_t eq = item.find('=');
    if (eq == absl::string_view::npos) return absl::InvalidArgumentError(StrCat("\"", item, "\" is not name=quantity"));
    const std::string name(item.substr(0, eq));
    absl::StatusOr<int64_t> amount = ParseResourceQuantity(name, std::string(item.substr(eq + 1)));
    if (!amount.ok()) return amount.status();
    out.Set(name, *amount);
  }
  return out;
}

std::string ChargeRecord(const Pod& pod, const StringMap& binding) {
  nlohmann::json record = nlohmann::json::object();
  for (std::string_view key : kChargeAnnotations) {
    if (const std::string* v = Find(binding, key)) {
      record[std::string(key)] = *v;
    } else if (const std::string* own = Find(pod.meta.annotations, key)) {
      record[std::string(key)] = *own;
    }
  }
  if (const std::string* queue = Find(pod.meta.labels, kChargeQueueLabel)) record[std::string(kChargeQueueLabel)] = *queue;
  if (!pod.dra_charge.IsZero()) record[std::string(kDraChargeKey)] = FormatDraCharge(pod.dra_charge);
  return record.dump();
}

void KeepCharge(const Pod& held, Pod& update) {
  TakeGpuInputs(held.meta.annotations, update);
  SetOrErase(update.meta.labels, kChargeQueueLabel, Find(held.meta.labels, kChargeQueueLabel));
  SetOrErase(update.meta.annotations, kChargeAnnotation, Find(held.meta.annotations, kChargeAnnotation));
  update.gpu_devices = held.gpu_devices;
  update.dra_charge = held.dra_charge;
}

void RestoreCharge(Pod& pod) {
  const std::string* text = Find(pod.meta.annotations, kChargeAnnotation);
  if (text == nullptr) return;  // bound before Tessel recorded charges, or by another scheduler
  const nlohmann::json record = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  auto refuse = [&](std::string_view why) {
    pod.decode_warnings.push_back(StrCat("pod ", pod.Key(), ": metadata.annotations[", kChargeAnnotation, "]: ", why,
                                         "; charged from its annotations as they are now"));
  };
  if (!record.is_object()) return refuse("not a JSON object");
  StringMap recorded;
  for (const auto& [key, value] : record.items()) {
    if (!value.is_string()) return refuse(StrCat("the value of \"", key, "\" is not a string"));
    recorded[key] = value.get<std::string>();
  }
  if (const std::string* dra = Find(recorded, kDraChargeKey)) {
    absl::StatusOr<Resources> charge = ParseDraCharge(*dra);
    if (!charge.ok()) return refuse(StrCat("\"", kDraChargeKey, "\": ", charge.status().message()));
    pod.dra_charge = *std::move(charge);
    recorded.erase(std::string(kDraChargeKey));
  }
  Pod as_recorded = pod;
  TakeGpuInputs(recorded, as_recorded);
  // The larger GPU charge of the two (an unreadable request counts as none: the pod was bound
  // with a readable one, so that is the record).
  auto milli = [](const Pod& p) {
    const gpu::GpuRequest r = gpu::ReadGpuRequest(p);
    return r.error.empty() ? r.total_milli() : int64_t{-1};
  };
  if (milli(as_recorded) >= milli(pod)) {
    TakeGpuInputs(recorded, pod);
    pod.gpu_devices.reset();
    ReadGpuDevicesAnnotation(pod);
  }
  SetOrErase(pod.meta.labels, kChargeQueueLabel, Find(recorded, kChargeQueueLabel));
}

}  // namespace tessel
