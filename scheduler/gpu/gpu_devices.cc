// GPU inventory, pod GPU requests and per-device bookkeeping (see gpu_devices.h).
#include "scheduler/gpu/gpu_devices.h"

#include <algorithm>
#include <charconv>
#include <limits>

#include "scheduler/api/quantity.h"
#include "scheduler/util/strings.h"

namespace tessel::gpu {
namespace {

std::optional<int64_t> ParseInt(std::string_view text) {
  int64_t v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || ptr != end || text.empty()) return std::nullopt;
  return v;
}

std::string_view Label(const StringMap& labels, std::string_view key) {
  auto it = labels.find(key);
  return it == labels.end() ? std::string_view() : std::string_view(it->second);
}

// "nvidia.com/mig-3g.20gb" -> 3; 0 when the name is not a MIG resource.
int64_t MigSlices(std::string_view resource) {
  constexpr std::string_view kPrefix = "nvidia.com/mig-";
  if (!resource.starts_with(kPrefix)) return 0;
  std::string_view rest = resource.substr(kPrefix.size());
  size_t g = rest.find('g');
  if (g == std::string_view::npos || g == 0) return 0;
  auto n = ParseInt(rest.substr(0, g));
  return n.has_value() && *n > 0 && *n <= kMigSlicesPerGpu ? *n : 0;
}

int64_t MigSevenths(const Resources& r) {
  int64_t sevenths = 0;
  for (const auto& [name, amount] : r.scalar) {
    if (int64_t n = MigSlices(name); n > 0) sevenths += amount / kMilliPerGpu * n;
  }
  return sevenths;
}

}  // namespace

std::string_view SharingStrategyName(SharingStrategy s) {
  switch (s) {
    case SharingStrategy::kNone: return "none";
    case SharingStrategy::kTimeSlicing: return "time-slicing";
    case SharingStrategy::kMps: return "mps";
  }
  return "none";
}

GpuInventory ReadGpuInventory(const Node& node) {
  GpuInventory inv;
  const StringMap& labels = node.meta.labels;
  const int64_t gpu = node.allocatable.Get(kNvidiaGpu);
  const int64_t shared = node.allocatable.Get(kNvidiaGpuShared);
  inv.product = std::string(Label(labels, kGpuProductLabel));
  if (auto mib = ParseInt(Label(labels, kGpuMemoryLabel)); mib.has_value() && *mib > 0) {
    inv.memory_bytes = *mib * 1024 * 1024;
  }
  inv.mig_sevenths = MigSevenths(node.allocatable);
  auto count = ParseInt(Label(labels, kGpuCountLabel));
  if (!count.has_value() || *count < 0 || *count > 1024) {
    // No GFD labels: the device plugin's count, whole and unshared.
    inv.count = static_cast<int32_t>(std::clamp<int64_t>(gpu / kMilliPerGpu, 0, 1024));
    return inv;
  }
  inv.count = static_cast<int32_t>(*count);
  std::string_view strategy = Label(labels, kGpuSharingStrategyLabel);
  auto replicas = ParseInt(Label(labels, kGpuReplicasLabel));
  if (replicas.has_value() && *replicas > 1 && *replicas <= 1000 && strategy != "none") {
    inv.replicas = static_cast<int32_t>(*replicas);
    inv.strategy = strategy == "mps" ? SharingStrategy::kMps : SharingStrategy::kTimeSlicing;
    if (shared > 0 && gpu == 0) inv.replica_resource = kNvidiaGpuShared;
  }
  return inv;
}

int64_t GpuRequest::total_milli() const {
  switch (kind) {
    case Kind::kNone: return 0;
    case Kind::kWhole: return int64_t{count} * kMilliPerGpu;
    case Kind::kFraction: return milli;
    case Kind::kReplicas: return int64_t{count} * kMilliPerGpu;
  }
  return 0;
}

namespace {
// Whole GPUs in `milli`, at most INT32_MAX: a request beyond that (a bound pod charged in full
// because its request did not read) still holds every device, never a truncated count.
int32_t CountOf(int64_t milli) {
  return static_cast<int32_t>(std::min<int64_t>(milli / kMilliPerGpu, std::numeric_limits<int32_t>::max()));
}
}  // namespace

GpuRequest ReadGpuRequest(const Pod& pod) {
  GpuRequest req;
  const int64_t gpu = pod.requests.Get(kNvidiaGpu);
  const int64_t shared = pod.requests.Get(kNvidiaGpuShared);
  req.mig_sevenths = MigSevenths(pod.requests);
  const StringMap& ann = pod.meta.annotations;
  if (shared > 0) req.sharing = GpuRequest::Sharing::kAllowed;
  if (auto it = ann.find(kGpuSharingAnnotation); it != ann.end()) {
    if (it->second == kGpuSharingAllowed) {
      req.sharing = GpuRequest::Sharing::kAllowed;
    } else if (it->second == kGpuSharingNever && shared == 0) {
      req.sharing = GpuRequest::Sharing::kNever;
    } else if (it->second == kGpuSharingNever) {
      req.error = StrCat("annotation ", kGpuSharingAnnotation, ": \"", kGpuSharingNever, "\" contradicts the request for ",
                         kNvidiaGpuShared);
    } else {
      req.error = StrCat("annotation ", kGpuSharingAnnotation, ": \"", it->second, "\" is not one of ",
                         kGpuSharingAllowed, ", ", kGpuSharingNever);
    }
  }
  if (auto it = ann.find(kGpuMemoryAnnotation); it != ann.end()) {
    auto bytes = ParseValue(it->second);
    if (!bytes.ok() || *bytes < 0) {
      req.error = StrCat("annotation ", kGpuMemoryAnnotation, ": \"", it->second,
                         "\" is not a quantity");
    } else {
      req.memory_bytes = *bytes;
    }
  }
  if (gpu % kMilliPerGpu != 0 || shared % kMilliPerGpu != 0) {
    req.error = "GPU requests must be whole numbers (use the tessel.io/gpu-milli annotation)";
  }
  if (gpu > 0 && shared > 0) {
    req.error = StrCat("requests both ", kNvidiaGpu, " and ", kNvidiaGpuShared);
  }
  if (shared > 0) {
    req.kind = GpuRequest::Kind::kReplicas;
    req.count = CountOf(shared);
  } else if (gpu > 0) {
    req.kind = GpuRequest::Kind::kWhole;
    req.count = CountOf(gpu);
  }
  if (auto it = ann.find(kGpuMilliAnnotation); it != ann.end()) {
    auto milli = ParseInt(it->second);
    if (!milli.has_value() || *milli < 1 || *milli > kMilliPerGpu) {
      req.error = StrCat("annotation ", kGpuMilliAnnotation, ": \"", it->second,
                         "\" is not an integer 1..1000");
    } else if (req.kind != GpuRequest::Kind::kWhole || req.count != 1) {
      req.error = StrCat("annotation ", kGpuMilliAnnotation, " needs a request of exactly ",
                         kNvidiaGpu, ": 1");
    } else if (*milli < kMilliPerGpu) {
      req.kind = GpuRequest::Kind::kFraction;
      req.milli = *milli;
    }
  }
  return req;
}

int64_t HeldGpuMilli(const GpuRequest& req, const GpuInventory& inv) {
  const GpuDemand d = DemandOn(req, inv);
  switch (d.kind) {
    case GpuDemand::Kind::kNone: return 0;
    case GpuDemand::Kind::kWhole: return int64_t{d.count} * kMilliPerGpu;
    case GpuDemand::Kind::kMilli: return d.milli;
    case GpuDemand::Kind::kSlots:
      return int64_t{d.count} * kMilliPerGpu / std::max<int32_t>(1, inv.replicas);
  }
  return 0;
}

GpuDemand DemandOn(const GpuRequest& req, const GpuInventory& inv) {
  GpuDemand d;
  d.memory_bytes = req.memory_bytes;
  if (!req.needs_devices()) return d;
  if (inv.shared()) {
    // The node's GPUs are replicas: each GPU asked for is one slot, whether or not the pod
    // said anything about sharing (the device plugin's default setup needs no annotation).
    d.kind = GpuDemand::Kind::kSlots;
    d.count = req.kind == GpuRequest::Kind::kFraction ? 1 : req.count;
    if (req.sharing == GpuRequest::Sharing::kNever) {
      d.ineligible = inv.strategy == SharingStrategy::kMps
                         ? "node(s) share GPUs (mps) and the pod opted out (tessel.io/gpu-sharing: never)"
                         : "node(s) share GPUs (time-slicing) and the pod opted out (tessel.io/gpu-sharing: never)";
    } else if (inv.replica_resource == kNvidiaGpuShared && req.kind != GpuRequest::Kind::kReplicas) {
      d.ineligible = "node(s) advertise GPU replicas only as nvidia.com/gpu.shared";
    } else if (inv.replica_resource != kNvidiaGpuShared && req.kind == GpuRequest::Kind::kReplicas) {
      d.ineligible = "Insufficient nvidia.com/gpu.shared";
    }
    return d;
  }
  switch (req.kind) {
    case GpuRequest::Kind::kReplicas:
      d.kind = GpuDemand::Kind::kSlots;
      d.count = req.count;
      d.ineligible = "Insufficient nvidia.com/gpu.shared";
      break;
    case GpuRequest::Kind::kWhole:
      d.kind = GpuDemand::Kind::kWhole;
      d.count = req.count;
      break;
    case GpuRequest::Kind::kFraction:
      d.kind = GpuDemand::Kind::kMilli;
      d.count = 1;
      d.milli = req.milli;
      break;
    case GpuRequest::Kind::kNone:
      break;
  }
  return d;
}

void GpuDevices::SetInventory(GpuInventory inventory) {
  inventory_ = std::move(inventory);
  devices_.assign(static_cast<size_t>(inventory_.count), Device{});
  holdings_.clear();
  allocated_milli_ = 0;
  whole_free_ = inventory_.count;
  unplaced_milli_ = 0;
  unplaced_slots_ = 0;
  mig_allocated_sevenths_ = 0;
  sharing_pods_ = 0;
  gpu_pods_ = 0;
  whole_pods_.clear();
}

bool GpuDevices::DeviceFits(int32_t device, int64_t milli, int64_t memory_bytes) const {
  const Device& d = devices_[device];
  if (kMilliPerGpu - d.used_milli < milli) return false;
  return memory_bytes == 0 || inventory_.memory_bytes == 0 ||
         d.memory + memory_bytes <= inventory_.memory_bytes;
}

bool GpuDevices::Fits(const GpuDemand& demand) const {
  return FitsOnDevices(demand) && FitsBesideUnplaced(demand);
}

bool GpuDevices::FitsBesideUnplaced(const GpuDemand& demand) const {
  switch (demand.kind) {
    case GpuDemand::Kind::kNone:
      return true;
    case GpuDemand::Kind::kWhole:
      return total_free_milli() - unplaced_milli_ >= int64_t{demand.count} * kMilliPerGpu;
    case GpuDemand::Kind::kMilli:
      return total_free_milli() - unplaced_milli_ >= demand.milli;
    case GpuDemand::Kind::kSlots: {
      int64_t free = 0;
      for (int32_t i = 0; i < count(); ++i) free += FreeSlots(i);
      return free - unplaced_slots_ >= demand.count;
    }
  }
  return false;
}

bool GpuDevices::FitsOnDevices(const GpuDemand& demand) const {
  switch (demand.kind) {
    case GpuDemand::Kind::kNone:
      return true;
    case GpuDemand::Kind::kWhole: {
      if (demand.memory_bytes == 0 || inventory_.memory_bytes == 0) return whole_free_ >= demand.count;
      int32_t n = 0;
      for (int32_t i = 0; i < count(); ++i) n += devices_[i].used_milli == 0 && DeviceFits(i, kMilliPerGpu, demand.memory_bytes);
      return n >= demand.count;
    }
    case GpuDemand::Kind::kMilli:
      for (int32_t i = 0; i < count(); ++i) {
        if (DeviceFits(i, demand.milli, demand.memory_bytes)) return true;
      }
      return false;
    case GpuDemand::Kind::kSlots: {
      int64_t n = 0;
      for (int32_t i = 0; i < count(); ++i) {
        if (FreeSlots(i) > 0 && DeviceFits(i, 0, demand.memory_bytes)) n += FreeSlots(i);
      }
      return n >= demand.count;
    }
  }
  return false;
}

std::optional<DeviceList> GpuDevices::DefaultChoice(const GpuDemand& demand) const {
  DeviceList out;
  switch (demand.kind) {
    case GpuDemand::Kind::kNone:
      return out;
    case GpuDemand::Kind::kWhole:
      for (int32_t i = 0; i < count() && static_cast<int32_t>(out.size()) < demand.count; ++i) {
        if (devices_[i].used_milli == 0 && DeviceFits(i, kMilliPerGpu, demand.memory_bytes)) out.push_back(i);
      }
      if (static_cast<int32_t>(out.size()) < demand.count || demand.count <= 0) return std::nullopt;
      return out;
    case GpuDemand::Kind::kMilli: {
      int32_t best = -1;
      for (int32_t i = 0; i < count(); ++i) {
        if (!DeviceFits(i, demand.milli, demand.memory_bytes)) continue;
        if (best < 0 || FreeMilli(i) < FreeMilli(best)) best = i;
      }
      if (best < 0) return std::nullopt;
      out.push_back(best);
      return out;
    }
    case GpuDemand::Kind::kSlots: {
      std::vector<int32_t> free(static_cast<size_t>(count()));
      for (int32_t i = 0; i < count(); ++i) {
        free[i] = DeviceFits(i, 0, demand.memory_bytes) ? FreeSlots(i) : 0;
      }
      for (int32_t k = 0; k < demand.count; ++k) {
        int32_t best = -1;
        for (int32_t i = 0; i < count(); ++i) {
          if (free[i] > 0 && (best < 0 || free[i] > free[best])) best = i;
        }
        if (best < 0) return std::nullopt;
        --free[best];
        out.push_back(best);
      }
      if (out.empty()) return std::nullopt;
      return out;
    }
  }
  return std::nullopt;
}

bool GpuDevices::ValidChoice(const GpuDemand& demand, const DeviceList& devices) const {
  for (int32_t d : devices) {
    if (d < 0 || d >= count()) return false;
  }
  switch (demand.kind) {
    case GpuDemand::Kind::kNone:
      return devices.empty();
    case GpuDemand::Kind::kWhole: {
      if (static_cast<int32_t>(devices.size()) != demand.count) return false;
      for (size_t i = 0; i < devices.size(); ++i) {
        for (size_t j = 0; j < i; ++j) {
          if (devices[i] == devices[j]) return false;
        }
        if (devices_[devices[i]].used_milli != 0 ||
            !DeviceFits(devices[i], kMilliPerGpu, demand.memory_bytes)) {
          return false;
        }
      }
      return true;
    }
    case GpuDemand::Kind::kMilli:
      return devices.size() == 1 && DeviceFits(devices[0], demand.milli, demand.memory_bytes);
    case GpuDemand::Kind::kSlots: {
      if (static_cast<int32_t>(devices.size()) != demand.count) return false;
      for (int32_t d : devices) {
        const auto n = std::count(devices.begin(), devices.end(), d);
        if (n > FreeSlots(d) || !DeviceFits(d, 0, demand.memory_bytes)) return false;
      }
      return true;
    }
  }
  return false;
}

void GpuDevices::Recount(int32_t device) {
  Device& d = devices_[device];
  if (inventory_.shared()) d.used_milli = int64_t{d.slots} * kMilliPerGpu / inventory_.replicas;
}

void GpuDevices::Take(const Holding& h, int sign) {
  for (size_t k = 0; k < h.devices.size(); ++k) {
    const int32_t i = h.devices[k];
    Device& d = devices_[i];
    // Memory and the pod count are per distinct device.
    const bool first = std::find(h.devices.begin(), h.devices.begin() + static_cast<long>(k), i) ==
                       h.devices.begin() + static_cast<long>(k);
    switch (h.kind) {
      case GpuDemand::Kind::kWhole: d.used_milli += sign * kMilliPerGpu; break;
      case GpuDemand::Kind::kMilli: d.used_milli += sign * h.milli; break;
      case GpuDemand::Kind::kSlots:
        d.slots += sign;
        Recount(i);
        break;
      case GpuDemand::Kind::kNone: break;
    }
    if (first) {
      d.memory += sign * h.memory_bytes;
      d.pods += sign;
    }
  }
  allocated_milli_ = 0;
  whole_free_ = 0;
  for (const Device& d : devices_) {
    allocated_milli_ += d.used_milli;
    whole_free_ += d.used_milli == 0;
  }
  unplaced_milli_ += sign * h.unplaced_milli;
  unplaced_slots_ += sign * h.unplaced_slots;
  mig_allocated_sevenths_ += sign * h.mig_sevenths;
  if (h.kind == GpuDemand::Kind::kMilli || h.kind == GpuDemand::Kind::kSlots) sharing_pods_ += sign;
  if (h.kind != GpuDemand::Kind::kNone) gpu_pods_ += sign;
  if (h.kind == GpuDemand::Kind::kWhole) {
    auto it = std::find_if(whole_pods_.begin(), whole_pods_.end(),
                           [&](const auto& p) { return p.first == h.whole_count; });
    if (it == whole_pods_.end()) it = whole_pods_.insert(whole_pods_.end(), {h.whole_count, 0});
    it->second += sign;
  }
}

void GpuDevices::AddPod(const Pod* pod) {
  GpuRequest req = ReadGpuRequest(*pod);
  if (!req.needs_devices() && req.mig_sevenths == 0) return;
  GpuDemand demand = DemandOn(req, inventory_);
  Holding h{.pod = pod,
            .kind = demand.kind,
            .milli = demand.milli,
            .memory_bytes = demand.memory_bytes,
            .mig_sevenths = req.mig_sevenths,
            .whole_count = demand.kind == GpuDemand::Kind::kWhole ? demand.count : 0,
            .unplaced_milli = 0,
            .unplaced_slots = 0,
            .devices = {}};
  if (demand.kind != GpuDemand::Kind::kNone) {
    std::optional<DeviceList> chosen = pod->gpu_devices;
    if (chosen.has_value() && !ValidChoice(demand, *chosen)) chosen.reset();
    if (!chosen.has_value()) chosen = DefaultChoice(demand);
    if (chosen.has_value()) {
      h.devices = *std::move(chosen);
    } else if (demand.kind == GpuDemand::Kind::kSlots) {
      h.unplaced_milli = int64_t{demand.count} * kMilliPerGpu / inventory_.replicas;
      h.unplaced_slots = demand.count;
    } else {
      h.unplaced_milli = req.total_milli();
    }
  }
  Take(h, +1);
  holdings_.push_back(std::move(h));
}

bool GpuDevices::RemovePod(const Pod* pod) {
  for (auto it = holdings_.begin(); it != holdings_.end(); ++it) {
    if (it->pod != pod) continue;
    Take(*it, -1);
    holdings_.erase(it);
    return true;
  }
  return false;
}

DeviceList GpuDevices::DevicesOf(const Pod* pod) const {
  for (const Holding& h : holdings_) {
    if (h.pod == pod) return h.devices;
  }
  return {};
}

int32_t GpuDevices::whole_pods(int32_t gpus) const {
  for (const auto& [k, n] : whole_pods_) {
    if (k == gpus) return n;
  }
  return 0;
}

std::string GpuDevices::CheckInvariants() const {
  if (static_cast<int32_t>(devices_.size()) != count()) return "device vector size != count";
  std::vector<Device> expect(devices_.size());
  int64_t unplaced_milli = 0;
  int32_t unplaced_slots = 0;
  for (const Holding& h : holdings_) {
    unplaced_milli += h.unplaced_milli;
    unplaced_slots += h.unplaced_slots;
    for (size_t k = 0; k < h.devices.size(); ++k) {
      Device& d = expect[h.devices[k]];
      if (h.kind == GpuDemand::Kind::kWhole) d.used_milli += kMilliPerGpu;
      if (h.kind == GpuDemand::Kind::kMilli) d.used_milli += h.milli;
      if (h.kind == GpuDemand::Kind::kSlots) ++d.slots;
    }
  }
  int64_t total = 0;
  int32_t whole_free = 0;
  for (int32_t i = 0; i < count(); ++i) {
    if (inventory_.shared()) expect[i].used_milli = int64_t{expect[i].slots} * kMilliPerGpu / inventory_.replicas;
    if (expect[i].used_milli != devices_[i].used_milli || expect[i].slots != devices_[i].slots) {
      return StrCat("device ", i, ": holds ", devices_[i].used_milli, " milli / ", devices_[i].slots,
                    " slots but its pods hold ", expect[i].used_milli, " / ", expect[i].slots);
    }
    if (AllocatedMilli(i) < 0 || FreeMilli(i) < 0 || AllocatedMilli(i) + FreeMilli(i) != CapacityMilli(i)) {
      return StrCat("device ", i, ": allocated ", AllocatedMilli(i), " + free ", FreeMilli(i),
                    " != capacity ", CapacityMilli(i));
    }
    if (devices_[i].slots < 0 || devices_[i].slots > inventory_.replicas) {
      return StrCat("device ", i, ": ", devices_[i].slots, " slots of ", inventory_.replicas);
    }
    total += devices_[i].used_milli;
    whole_free += devices_[i].used_milli == 0;
  }
  if (total != allocated_milli_ || total + total_free_milli() != inventory_.capacity_milli()) {
    return StrCat("node: allocated ", allocated_milli_, " but devices sum to ", total);
  }
  if (whole_free != whole_free_) return StrCat("node: ", whole_free_, " whole free, devices say ", whole_free);
  if (unplaced_milli != unplaced_milli_ || unplaced_slots != unplaced_slots_) {
    return StrCat("node: ", unplaced_milli_, " milli / ", unplaced_slots_, " slots unplaced but its pods hold ",
                  unplaced_milli, " / ", unplaced_slots);
  }
  return "";
}

void AddGpuRoom(const GpuDevices& gpus, Resources& room) {
  if (gpus.count() == 0) return;
  int64_t units = 0, milli = 0;
  if (gpus.inventory().shared()) {
    int64_t slots = -int64_t{gpus.unplaced_slots()};
    for (int32_t i = 0; i < gpus.count(); ++i) slots += gpus.FreeSlots(i);
    units = milli = std::max<int64_t>(0, slots) * kMilliPerGpu;
  } else {
    milli = std::max<int64_t>(0, gpus.total_free_milli() - gpus.unplaced_milli());
    units = std::min<int64_t>(int64_t{gpus.whole_free_devices()} * kMilliPerGpu, milli);
  }
  room.Set(kRoomGpuUnits, units);
  room.Set(kRoomGpuMilli, milli);
}

void AddGpuNeed(const GpuRequest& request, Resources& need) {
  switch (request.kind) {
    case GpuRequest::Kind::kWhole:
    case GpuRequest::Kind::kReplicas:
      need.Set(kRoomGpuUnits, std::max(need.Get(kRoomGpuUnits), int64_t{request.count} * kMilliPerGpu));
      break;
    case GpuRequest::Kind::kFraction:
      need.Set(kRoomGpuMilli, std::max(need.Get(kRoomGpuMilli), request.milli));
      break;
    case GpuRequest::Kind::kNone:
      break;
  }
}

}  // namespace tessel::gpu
