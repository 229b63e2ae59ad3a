// Shared by the kernels tests: random tensor lists, float64 references and
// per-dtype tolerances. Every check draws fresh random inputs.
#pragma once

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace nosync::kernels::testing {

inline std::mt19937_64& rng() {
  static std::mt19937_64 r(std::random_device{}());
  return r;
}

inline int64_t uniform_int(int64_t lo, int64_t hi) {  // [lo, hi]
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng());
}

inline std::string dtype_name(at::ScalarType t) { return c10::toString(t); }

// A size drawn from the regimes the engine treats differently: empty, packed
// (<= 4096), one segment, several segments with a ragged last one.
inline int64_t random_numel() {
  switch (uniform_int(0, 9)) {
    case 0: return 0;
    case 1: return uniform_int(1, 7);
    case 2:
    case 3: return uniform_int(8, 4096);
    case 4: return uniform_int(4097, 65536);
    case 5: return 65536;
    case 6: return uniform_int(65537, 300000);
    default: return uniform_int(1, 2000);
  }
}

// A random contiguous tensor whose data may start off 16-byte alignment (a
// narrow() of a larger buffer), so vector heads and tails get exercised.
inline at::Tensor random_tensor(int64_t numel, at::ScalarType dtype, c10::Device device) {
  const int64_t offset = uniform_int(0, 3) == 0 ? uniform_int(1, 7) : 0;
  at::Tensor base = at::randn({numel + offset}, at::TensorOptions().dtype(at::kFloat).device(device)).to(dtype);
  return base.narrow(0, offset, numel);
}

inline std::vector<at::Tensor> random_list(int64_t count, at::ScalarType dtype, c10::Device device) {
  std::vector<at::Tensor> v;
  v.reserve(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) v.push_back(random_tensor(random_numel(), dtype, device));
  return v;
}

// float64 references, computed from the inputs upcast.
inline double ref_sum(const std::vector<at::Tensor>& ts) {
  double s = 0;
  for (const auto& t : ts) s += t.to(at::kDouble).sum().item<double>();
  return s;
}
inline double ref_abs_sum(const std::vector<at::Tensor>& ts) {
  double s = 0;
  for (const auto& t : ts) s += t.to(at::kDouble).abs().sum().item<double>();
  return s;
}
inline double ref_sumsq(const std::vector<at::Tensor>& ts) {
  double s = 0;
  for (const auto& t : ts) s += t.to(at::kDouble).square().sum().item<double>();
  return s;
}
inline int64_t total_numel(const std::vector<at::Tensor>& ts) {
  int64_t n = 0;
  for (const auto& t : ts) n += t.numel();
  return n;
}

// Accumulation error allowed, relative to sum |x| (the sum's condition), and
// the rounding of the result to its output dtype, relative to |result|.
inline double acc_tol(at::ScalarType t) { return t == at::kDouble ? 1e-12 : 2e-5; }
inline double out_tol(at::ScalarType t) {
  switch (t) {
    case at::kHalf: return 1e-3;
    case at::kBFloat16: return 8e-3;
    case at::kFloat: return 1e-6;
    default: return 1e-14;
  }
}

// |got - want| <= acc_tol * scale + out_tol * |want|, with NaN never passing.
inline ::testing::AssertionResult close(double got, double want, double scale, at::ScalarType dtype,
                                        const std::string& what) {
  const double bound = acc_tol(dtype) * scale + out_tol(dtype) * std::abs(want) + 1e-30;
  if (std::isnan(got) || std::isnan(want) || std::abs(got - want) > bound)
    return ::testing::AssertionFailure() << what << " (" << dtype_name(dtype) << "): got " << got << ", want "
                                         << want << ", |diff| " << std::abs(got - want) << " > " << bound;
  return ::testing::AssertionSuccess();
}

inline double scalar_of(const at::Tensor& t) { return t.to(at::kDouble).cpu().item<double>(); }

}  // namespace nosync::kernels::testing
