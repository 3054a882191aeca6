// Resource vector arithmetic and unit selection per resource name.
#include "scheduler/api/resources.h"

#include "scheduler/util/strings.h"
#include "scheduler/util/strings.h"
#include "scheduler/util/strings.h"
#include "scheduler/api/quantity.h"

namespace tessel {

bool IsMilliResource(std::string_view name) {
  return !(name == kMemory || name == kEphemeralStorage || name == kPods || name == "storage" ||
           name.starts_with("hugepages-"));
}

absl::StatusOr<int64_t> ParseResourceQuantity(std::string_view name, std::string_view text) {
  return IsMilliResource(name) ? ParseMilli(text) : ParseValue(text);
}

std::string FormatResourceQuantity(std::string_view name, int64_t amount) {
  if (IsMilliResource(name)) return FormatMilli(amount);
  if (name == kPods) return StrCat(amount);
  static constexpr std::pair<std::string_view, int> kBinary[] = {
      {"Ei", 60}, {"Pi", 50}, {"Ti", 40}, {"Gi", 30}, {"Mi", 20}, {"Ki", 10}};
  for (const auto& [suffix, shift] : kBinary) {
    int64_t unit = int64_t{1} << shift;
    if (amount != 0 && amount % unit == 0) return StrCat(amount / unit, suffix);
  }
  return StrCat(amount);
}

int64_t Resources::Get(std::string_view name) const {
  if (name == kCpu) return milli_cpu;
  if (name == kMemory) return memory;
  if (name == kEphemeralStorage) return ephemeral_storage;
  if (name == kPods) return pods;
  auto it = scalar.find(name);
  return it == scalar.end() ? 0 : it->second;
}

void Resources::Set(std::string_view name, int64_t amount) {
  if (name == kCpu) {
    milli_cpu = amount;
  } else if (name == kMemory) {
    memory = amount;
  } else if (name == kEphemeralStorage) {
    ephemeral_storage = amount;
  } else if (name == kPods) {
    pods = amount;
  } else if (amount == 0) {
    scalar.erase(std::string(name));
  } else {
    scalar[std::string(name)] = amount;
  }
}

namespace {
bool AddChecked(int64_t& into, int64_t v) { return !__builtin_add_overflow(into, v, &into); }
}  // namespace

absl::Status Resources::Add(const Resources& other) {
  bool ok = AddChecked(milli_cpu, other.milli_cpu) && AddChecked(memory, other.memory) &&
            AddChecked(ephemeral_storage, other.ephemeral_storage) && AddChecked(pods, other.pods);
  for (const auto& [name, v] : other.scalar) ok = ok && AddChecked(scalar[name], v);
  if (!ok) return absl::OutOfRangeError("resource sum overflows a 64-bit integer");
  return absl::OkStatus();
}

void Resources::Sub(const Resources& other) {
  milli_cpu -= other.milli_cpu;
  memory -= other.memory;
  ephemeral_storage -= other.ephemeral_storage;
  pods -= other.pods;
  for (const auto& [name, v] : other.scalar) Set(name, Get(name) - v);
}

void Resources::SetMax(const Resources& other) {
  milli_cpu = std::max(milli_cpu, other.milli_cpu);
  memory = std::max(memory, other.memory);
  ephemeral_storage = std::max(ephemeral_storage, other.ephemeral_storage);
  pods = std::max(pods, other.pods);
  for (const auto& [name, v] : other.scalar) Set(name, std::max(Get(name), v));
}

bool Resources::IsZero() const {
  if (milli_cpu != 0 || memory != 0 || ephemeral_storage != 0 || pods != 0) return false;
  for (const auto& [name, v] : scalar) {
    if (v != 0) return false;
  }
  return true;
}

bool Resources::FitsIn(const Resources& capacity) const {
  if (milli_cpu > capacity.milli_cpu || memory > capacity.memory ||
      ephemeral_storage > capacity.ephemeral_storage || pods > capacity.pods) {
    return false;
  }
  for (const auto& [name, v] : scalar) {
    if (v > capacity.Get(name)) return false;
  }
  return true;
}

std::vector<std::pair<std::string, int64_t>> Resources::Entries() const {
  std::vector<std::pair<std::string, int64_t>> out;
  if (milli_cpu != 0) out.emplace_back(kCpu, milli_cpu);
  if (ephemeral_storage != 0) out.emplace_back(kEphemeralStorage, ephemeral_storage);
  if (memory != 0) out.emplace_back(kMemory, memory);
  for (const auto& [name, v] : scalar) {
    if (v != 0) out.emplace_back(name, v);
  }
  if (pods != 0) out.emplace_back(kPods, pods);
  std::sort(out.begin(), out.end());
  return out;
}

std::string Resources::DebugString() const {
  std::string out;
  for (const auto& [name, amount] : Entries()) {
    StrAppend(&out, out.empty() ? "" : ",", name, ":", FormatResourceQuantity(name, amount));
  }
  return out;
}

}  // namespace tessel
