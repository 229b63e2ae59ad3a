// Device-resident work plans, cached per tensor list.
//
// A list of 5000 tensors needs ~100 KB of tables, more than the 32 KB kernel
// parameter space, so the plan lives in a device buffer. Uploading it on every
// call would cost a host-to-device copy per call and would break CUDA-graph
// capture (the copy's source would change under the graph, the reason PyTorch
// reverted #119153). Instead the plan is built and uploaded once per distinct
// list (same pointers, sizes and element size) and found again by hash + exact
// compare. A list first seen inside graph capture (gradients that backward
// allocates in the graph's pool) is written by kernels whose parameters carry
// the plan: the graph then owns the bytes and rewrites them on every replay.
// Plans are immutable after upload, so any stream may use one; per-call
// scratch (the partials) is allocated per call from the caching allocator.
#pragma once

#include <ATen/ATen.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/plan.h"

namespace nosync::kernels::detail {

struct Gathered;

struct DevicePlan {
  engine::PlanShape shape;
  engine::PlanView view;  // pointers into the device buffer
};

// A plan built from `slots` (elements of `elem_size` bytes) and uploaded with
// one cudaMemcpyAsync from pinned memory on `stream`, or, inside capture, by
// write_from_params (no event then: the graph's own nodes write it first).
// Immutable afterwards; owns both buffers.
struct UploadedPlan {
  engine::PlanShape shape;
  at::Tensor host_blob;    // pinned (plain host memory for a plan built in capture)
  at::Tensor device_blob;
  cudaEvent_t uploaded = nullptr;  // null for a plan built in capture
  cudaStream_t upload_stream = nullptr;
  UploadedPlan() = default;
  UploadedPlan(const UploadedPlan&) = delete;
  UploadedPlan& operator=(const UploadedPlan&) = delete;
  ~UploadedPlan();
  DevicePlan device_plan() const;
};
std::shared_ptr<UploadedPlan> upload_plan(const std::vector<engine::TensorSlot>& slots, int64_t elem_size,
                                          c10::Device device, cudaStream_t stream, bool in_capture = false);

// Returns the plan for the gathered CUDA list, building and uploading it on a
// miss (inside capture too), and makes `stream` safe to use it.
DevicePlan plan_for(const Gathered& g, cudaStream_t stream);

// For tests and benchmarks: number of plans built so far, and a reset.
int64_t plans_built();
void clear_plan_cache();

}  // namespace nosync::kernels::detail
