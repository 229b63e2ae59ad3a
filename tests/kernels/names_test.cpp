// Every name that the linter's fix-its print (rules/include/nosync/kernel_names.h)
// resolves to a real symbol of <nosync/kernels.h>: this file only compiles if
// each one exists with the call shape the rule docs show.
#include <gtest/gtest.h>
#include <nosync/kernel_names.h>
#include <nosync/kernels.h>

#include <set>
#include <string>

namespace names = nosync::rules::kernel_names;

TEST(KernelsNames, EveryFixItNameResolves) {
  // name -> a use of the symbol with the documented call shape.
  std::set<std::string> resolved;
  auto use = [&](std::string_view name, auto&& symbol_use) {
    (void)symbol_use;
    resolved.insert(std::string(name));
  };
  use(names::kSum, static_cast<at::Tensor (*)(at::TensorList)>(&nosync::kernels::sum));
  use(names::kSumPerTensor, static_cast<at::Tensor (*)(at::TensorList)>(&nosync::kernels::sum_per_tensor));
  use(names::kMean, static_cast<at::Tensor (*)(at::TensorList)>(&nosync::kernels::mean));
  use(names::kL2Norm, static_cast<at::Tensor (*)(at::TensorList)>(&nosync::kernels::l2_norm));
  use(names::kL2NormPerTensor, static_cast<at::Tensor (*)(at::TensorList)>(&nosync::kernels::l2_norm_per_tensor));
  use(names::kNonfiniteFlag, static_cast<at::Tensor (*)(at::TensorList)>(&nosync::kernels::nonfinite_flag));
  use(names::kNonfiniteFlag,
      static_cast<at::Tensor& (*)(at::TensorList, at::Tensor&)>(&nosync::kernels::nonfinite_flag));
  use(names::kClipGradNorm,
      static_cast<at::Tensor (*)(at::TensorList, double, double)>(&nosync::kernels::clip_grad_norm_));
  use(names::kMetricAccumulator, [](c10::Device d) { return nosync::kernels::MetricAccumulator(d).read(); });
  use(names::kPinnedStager, [](c10::Device d, const at::Tensor& t) {
    return nosync::kernels::PinnedStager(d).stage(t);
  });
  use(names::kGradsOf, &nosync::kernels::grads_of);
  EXPECT_EQ(resolved.size(), 10u) << "a name in kernel_names.h has no use above";
  EXPECT_EQ(std::string(names::kHeader), "<nosync/kernels.h>");
  for (const auto& n : resolved) EXPECT_EQ(n.rfind("nosync::kernels::", 0), 0u) << n;
}
