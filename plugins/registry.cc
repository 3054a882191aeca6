// The in-tree registry. Registration is explicit: no static initialisers.
#include "plugins/registry.h"

#include <cstdlib>
#include <iostream>

#include "plugins/default_binder/default_binder.h"
#include "plugins/node_affinity/node_affinity.h"
#include "plugins/node_name/node_name.h"
#include "plugins/node_resources_fit/node_resources_fit.h"
#include "plugins/node_unschedulable/node_unschedulable.h"
#include "plugins/priority_sort/priority_sort.h"
#include "plugins/taint_toleration/taint_toleration.h"

namespace tessel {

Registry InTreeRegistry() {
  Registry r;
  auto add = [&r](std::string_view name, PluginFactory f) {
    if (absl::Status st = r.Register(name, std::move(f)); !st.ok()) {
      std::cerr << "tessel: " << st.message() << "\n";  // a programming error: fail loudly
      std::abort();
    }
  };
  add(priority_sort::PrioritySort::kName, FactoryOf<priority_sort::PrioritySort>());
  add(node_name::NodeName::kName, FactoryOf<node_name::NodeName>());
  add(node_unschedulable::NodeUnschedulable::kName, FactoryOf<node_unschedulable::NodeUnschedulable>());
  add(node_affinity::NodeAffinity::kName, FactoryOf<node_affinity::NodeAffinity>());
  add(taint_toleration::TaintToleration::kName, FactoryOf<taint_toleration::TaintToleration>());
  add(node_resources_fit::NodeResourcesFit::kName, FactoryOf<node_resources_fit::NodeResourcesFit>());
  add(default_binder::DefaultBinder::kName, FactoryOf<default_binder::DefaultBinder>());
  return r;
}

}  // namespace tessel
