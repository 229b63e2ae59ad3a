// The nosync::kernels entry points that fix-its and sanitizer advice name.
// Kept here, beside the rule catalog, so the linter's fix-its and the kernels'
// API cannot drift apart: tests/kernels checks each name resolves to a symbol.
// The macros are the same names as string literals, for the advice texts of
// ops.def (literals concatenate; string_views do not).
#pragma once

#include <string_view>

#define NOSYNC_KERNELS_HEADER "<nosync/kernels.h>"
#define NOSYNC_KERNEL_CLIP_GRAD_NORM "nosync::kernels::clip_grad_norm_"
#define NOSYNC_KERNEL_PINNED_STAGER "nosync::kernels::PinnedStager"
#define NOSYNC_KERNEL_NONFINITE_FLAG "nosync::kernels::nonfinite_flag"
#define NOSYNC_KERNEL_METRIC_ACCUMULATOR "nosync::kernels::MetricAccumulator"

namespace nosync::rules::kernel_names {

inline constexpr std::string_view kHeader = NOSYNC_KERNELS_HEADER;
inline constexpr std::string_view kSum = "nosync::kernels::sum";
inline constexpr std::string_view kSumPerTensor = "nosync::kernels::sum_per_tensor";
inline constexpr std::string_view kMean = "nosync::kernels::mean";
inline constexpr std::string_view kL2Norm = "nosync::kernels::l2_norm";
inline constexpr std::string_view kL2NormPerTensor = "nosync::kernels::l2_norm_per_tensor";
inline constexpr std::string_view kNonfiniteFlag = NOSYNC_KERNEL_NONFINITE_FLAG;
inline constexpr std::string_view kClipGradNorm = NOSYNC_KERNEL_CLIP_GRAD_NORM;
inline constexpr std::string_view kMetricAccumulator = NOSYNC_KERNEL_METRIC_ACCUMULATOR;
inline constexpr std::string_view kGradsOf = "nosync::kernels::grads_of";
inline constexpr std::string_view kPinnedStager = NOSYNC_KERNEL_PINNED_STAGER;

}  // namespace nosync::rules::kernel_names
