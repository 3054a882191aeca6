// The inflate experiment's LP bound (see bound.h), solved with GLPK's simplex when found at build
// time (TESSEL_HAVE_GLPK).
#include "bench/inflate/bound.h"

#include <algorithm>
#include <map>
#include <tuple>

#ifdef TESSEL_HAVE_GLPK
#include <glpk.h>
#endif

namespace tessel::bench {

#ifndef TESSEL_HAVE_GLPK

absl::StatusOr<double> LpMostPlacedGpuMilli(const std::vector<TraceNode>&, const std::vector<TracePod>&) {
  return absl::UnavailableError("built without GLPK (libglpk-dev): no LP bound");
}

#else

namespace {

constexpr int64_t kDeviceMilli = 1000;

using NodeKey = std::tuple<int64_t, int64_t, int32_t, std::string>;  // cpu, memory, GPUs, model
using PodKey = std::tuple<int64_t, int64_t, int32_t, int64_t, std::vector<std::string>>;

// Rows and a sparse matrix built up, then loaded into GLPK at once (its arrays are 1-based).
class Lp {
 public:
  Lp() : p_(glp_create_prob()) { glp_set_obj_dir(p_, GLP_MAX); }
  ~Lp() { glp_delete_prob(p_); }
  Lp(const Lp&) = delete;
  Lp& operator=(const Lp&) = delete;

  int Col(double objective) {
    const int j = glp_add_cols(p_, 1);
    glp_set_col_bnds(p_, j, GLP_LO, 0, 0);
    glp_set_obj_coef(p_, j, objective);
    return j;
  }
  // sum(coef * col) <= bound.
  void Row(const std::vector<std::pair<int, double>>& terms, double bound) {
    if (terms.empty()) return;
    const int i = glp_add_rows(p_, 1);
    glp_set_row_bnds(p_, i, GLP_UP, 0, bound);
    for (const auto& [j, a] : terms) {
      ia_.push_back(i), ja_.push_back(j), ar_.push_back(a);
    }
  }
  absl::StatusOr<double> Solve() {
    glp_load_matrix(p_, static_cast<int>(ia_.size()) - 1, ia_.data(), ja_.data(), ar_.data());
    glp_smcp parm;
    glp_init_smcp(&parm);
    parm.msg_lev = GLP_MSG_OFF;
    parm.presolve = GLP_ON;
    if (glp_simplex(p_, &parm) != 0 || glp_get_status(p_) != GLP_OPT) {
      return absl::InternalError("GLPK found no optimum for the LP bound");
    }
    return glp_get_obj_val(p_);
  }

 private:
  glp_prob* p_;
  std::vector<int> ia_{0}, ja_{0};
  std::vector<double> ar_{0};
};

}  // namespace

absl::StatusOr<double> LpMostPlacedGpuMilli(const std::vector<TraceNode>& nodes, const std::vector<TracePod>& pods) {
  std::map<NodeKey, int64_t> types;
  for (const TraceNode& n : nodes) ++types[{n.cpu_milli, n.memory_mib, n.gpus, n.model}];
  std::map<PodKey, int64_t> classes;
  for (const TracePod& p : pods) {
    std::vector<std::string> spec = p.gpu_spec;
    std::sort(spec.begin(), spec.end());
    ++classes[{p.cpu_milli, p.memory_mib, p.num_gpu, p.num_gpu > 0 ? p.gpu_milli : 0, spec}];
  }
  glp_term_out(GLP_OFF);
  Lp lp;
  std::map<PodKey, std::vector<int>> cols_of_class;
  for (const auto& [tk, count] : types) {
    const auto& [cpu, mem, gpus, model] = tk;
    const double n = static_cast<double>(count);
    std::vector<std::pair<int, double>> cpu_row, mem_row, device_row;
    struct Small {
      int col;
      int64_t milli;
    };
    std::vector<Small> small;
    std::vector<std::pair<int, int64_t>> big;  // column, remainder it leaves
    std::vector<std::pair<int, int32_t>> multi;  // column, GPUs
    for (const auto& [ck, c_count] : classes) {
      const auto& [p_cpu, p_mem, p_gpus, p_milli, p_spec] = ck;
      if (p_cpu > cpu || p_mem > mem || p_gpus > gpus) continue;
      if (p_gpus > 0 && !p_spec.empty() && !std::binary_search(p_spec.begin(), p_spec.end(), model)) continue;
      const int col = lp.Col(static_cast<double>(int64_t{p_gpus} * p_milli));
      cols_of_class[ck].push_back(col);
      cpu_row.push_back({col, static_cast<double>(p_cpu)});
      mem_row.push_back({col, static_cast<double>(p_mem)});
      if (p_gpus == 0) continue;
      multi.push_back({col, p_gpus});
      if (p_milli >= kDeviceMilli) {
        device_row.push_back({col, static_cast<double>(p_gpus)});
      } else if (2 * p_milli > kDeviceMilli) {
        device_row.push_back({col, 1});
        big.push_back({col, kDeviceMilli - p_milli});
      } else {
        small.push_back({col, p_milli});
      }
    }
    lp.Row(cpu_row, n * static_cast<double>(cpu));
    lp.Row(mem_row, n * static_cast<double>(mem));
    if (gpus == 0) continue;
    // Devices holding neither a whole-GPU pod nor one above 500 milli: free for small pods.
    const int open = lp.Col(0);
    device_row.push_back({open, 1});
    lp.Row(device_row, n * gpus);
    // For each small size m: small pods of m or more fit only remainders of m or more.
    std::vector<int64_t> sizes;
    for (const Small& s : small) sizes.push_back(s.milli);
    std::sort(sizes.begin(), sizes.end());
    sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
    for (int64_t m : sizes) {
      std::vector<std::pair<int, double>> row;
      for (const Small& s : small) {
        if (s.milli >= m) row.push_back({s.col, static_cast<double>(s.milli)});
      }
      for (const auto& [col, rest] : big) {
        if (rest >= m) row.push_back({col, -static_cast<double>(rest)});
      }
      row.push_back({open, -static_cast<double>(kDeviceMilli)});
      lp.Row(row, 0);
    }
    // At most floor(G/k) pods of k or more GPUs on a G-GPU node.
    for (int32_t k = 2; k <= gpus; ++k) {
      std::vector<std::pair<int, double>> row;
      for (const auto& [col, g] : multi) {
        if (g >= k) row.push_back({col, 1});
      }
      lp.Row(row, n * static_cast<double>(gpus / k));
    }
  }
  for (const auto& [ck, cols] : cols_of_class) {
    std::vector<std::pair<int, double>> row;
    for (int col : cols) row.push_back({col, 1});
    lp.Row(row, static_cast<double>(classes[ck]));
  }
  return lp.Solve();
}

#endif

}  // namespace tessel::bench
