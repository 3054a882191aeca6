// Timestamps as the Kubernetes API writes them: metav1.Time (RFC 3339, seconds, UTC) and
// metav1.MicroTime (microseconds), for the status fields, Events and Leases the scheduler writes.
#pragma once

#include <string>

#include "absl/time/time.h"

namespace tessel {

// "2006-01-02T15:04:05Z"
inline std::string FormatRfc3339(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", t, absl::UTCTimeZone());
}

// "2006-01-02T15:04:05.000000Z"
inline std::string FormatMicroTime(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", t, absl::UTCTimeZone());
}

}  // namespace tessel
