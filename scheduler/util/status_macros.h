// Early-return helpers for absl::Status / absl::StatusOr, which Debian 12's Abseil (20220623)
// does not ship.
//
//   RETURN_IF_ERROR(DoThing());
//   ASSIGN_OR_RETURN(auto value, ParseThing(text));
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define TESSEL_CONCAT_INNER_(a, b) a##b
#define TESSEL_CONCAT_(a, b) TESSEL_CONCAT_INNER_(a, b)

#define RETURN_IF_ERROR(expr)                    \
  do {                                           \
    if (absl::Status _st = (expr); !_st.ok()) {  \
      return _st;                                \
    }                                            \
  } while (false)

#define ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                           \
  if (!tmp.ok()) return std::move(tmp).status(); \
  lhs = std::move(*tmp)

#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL_(TESSEL_CONCAT_(_statusor_, __LINE__), lhs, expr)
