// The nosync::kernels entry points that fix-its and sanitizer advice name.
// Kept here, beside the rule catalog, so the linter's fix-its and the kernels'
// API cannot drift apart: tests/kernels checks each name resolves to a symbol.
#pragma once

#include <string_view>

namespace nosync::rules::kernel_names {

inline constexpr std::string_view kHeader = "<nosync/kernels.h>";
inline constexpr std::string_view kSum = "nosync::kernels::sum";
inline constexpr std::string_view kSumPerTensor = "nosync::kernels::sum_per_tensor";
inline constexpr std::string_view kMean = "nosync::kernels::mean";
inline constexpr std::string_view kL2Norm = "nosync::kernels::l2_norm";
inline constexpr std::string_view kL2NormPerTensor = "nosync::kernels::l2_norm_per_tensor";
inline constexpr std::string_view kNonfiniteFlag = "nosync::kernels::nonfinite_flag";
inline constexpr std::string_view kClipGradNorm = "nosync::kernels::clip_grad_norm_";
inline constexpr std::string_view kMetricAccumulator = "nosync::kernels::MetricAccumulator";
inline constexpr std::string_view kPinnedStager = "nosync::kernels::PinnedStager";

}  // namespace nosync::rules::kernel_names
