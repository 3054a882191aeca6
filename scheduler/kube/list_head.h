// The head of a list reply: what the informer needs before it parses the items. The API server
// writes a list's metadata (resourceVersion, continue) ahead of its items, so the informer can
// ask for the next page while it decodes this one.
//
//   std::optional<std::string> next = ListContinueToken(reply.body);  // "" on the last page
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace tessel::kube {

// The "continue" token of a list reply read from its head (the top-level metadata, which the
// API server writes ahead of the items) without parsing the items: "" on the last page, nullopt
// when the head does not say (items first, or not JSON).
std::optional<std::string> ListContinueToken(std::string_view body);

}  // namespace tessel::kube
