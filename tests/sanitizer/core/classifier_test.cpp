// Classification and attribution on stacks shaped like the real ones
// (function names as dladdr/libbacktrace demangle them from torch 2.11).
#include "attribution.h"
#include "classifier.h"
#include "fake_stack.h"

#include <gtest/gtest.h>

using namespace nosync::san;
using namespace nosync::san::testing;
using nosync::rules::RuleId;

namespace {
const char* kCpu = "/venv/torch/lib/libtorch_cpu.so";
const char* kCuda = "/venv/torch/lib/libtorch_cuda.so";
const char* kCudart = "/venv/nvidia/cu13/lib/libcudart.so.13";

std::vector<Frame> with_user(std::vector<Frame> inner) {
  std::vector<Frame> f = observer_frames();
  f.insert(f.end(), inner.begin(), inner.end());
  f.push_back(user("train_step(Model&, at::Tensor const&)", "/work/app/train.cpp", 42));
  f.push_back(user("main", "/work/app/train.cpp", 97));
  f.push_back(lib("__libc_start_main", "/lib/x86_64-linux-gnu/libc.so.6"));
  return f;
}

std::vector<Frame> item_path(const char* typed_item) {
  return with_user({lib("cudaStreamSynchronize", kCudart),
                    lib("at::native::_local_scalar_dense_cuda(at::Tensor const&)", kCuda),
                    lib("at::_ops::_local_scalar_dense::call(at::Tensor const&)", kCpu),
                    lib("at::native::item(at::Tensor const&)", kCpu),
                    lib("at::_ops::item::call(at::Tensor const&)", kCpu),
                    lib("at::Tensor::item() const", kCpu), lib(typed_item, kCpu)});
}

std::vector<Frame> copy_path(const char* api, const char* entry) {
  return with_user({lib(api, kCudart), lib("at::native::copy_kernel_cuda(at::TensorIterator&, bool)", kCuda),
                    lib("at::native::copy_(at::Tensor&, at::Tensor const&, bool)", kCpu),
                    lib("at::_ops::copy_::call(at::Tensor&, at::Tensor const&, bool)", kCpu),
                    lib("at::native::_to_copy(at::Tensor const&, std::optional<c10::ScalarType>)", kCpu),
                    lib("at::_ops::_to_copy::call(at::Tensor const&)", kCpu), lib(entry, kCpu)});
}

Classification run(const SyncEvent& e, const std::vector<Frame>& frames) {
  std::vector<Frame> f(frames.begin() + static_cast<long>(first_printed_frame(frames)), frames.end());
  return classify(e, f, first_user_frame(f));
}

SyncEvent ev(ApiKind k, Direction d = Direction::None, Direction last = Direction::None) {
  SyncEvent e;
  e.kind = k;
  e.direction = d;
  e.last_copy = last;
  return e;
}
}  // namespace

TEST(Attribution, FirstUserFrameSkipsObserverTorchCudaAndStdFrames) {
  std::vector<Frame> f = item_path("float at::Tensor::item<float>() const");
  f.insert(f.begin() + 10, lib("std::function<void ()>::operator()() const", "/usr/lib/libstdc++.so.6"));
  std::size_t u = first_user_frame(f);
  ASSERT_LT(u, f.size());
  EXPECT_EQ(f[u].file, "/work/app/train.cpp");
  EXPECT_EQ(f[u].line, 42);
  EXPECT_EQ(first_printed_frame(f), 3u) << "sanitizer, CUPTI and libcuda frames are not printed";
}

TEST(Attribution, LibTorchHeaderCodeInlinedIntoTheUserBinaryIsNotTheUser) {
  std::vector<Frame> f = {
      user("float at::Tensor::item<float>() const", "/venv/torch/include/ATen/core/TensorBody.h", 300),
      user("c10::Scalar::toFloat() const", "/venv/torch/include/c10/core/Scalar.h", 80),
      user("void helper<float>(at::Tensor const&)", "/work/app/helper.h", 12)};
  ASSERT_EQ(first_user_frame(f), 2u);
}

TEST(Attribution, PythonOnlyStacksHaveNoUserFrame) {
  std::vector<Frame> f = {lib("at::Tensor::item() const", kCpu),
                          lib("_PyEval_EvalFrameDefault", "/usr/bin/python3.12"),
                          lib("Py_RunMain", "/usr/lib/libpython3.12.so.1.0")};
  EXPECT_EQ(first_user_frame(f), f.size());
}

TEST(Classifier, ItemIsNosyncItem) {
  Classification c = run(ev(ApiKind::StreamSync), item_path("float at::Tensor::item<float>() const"));
  EXPECT_EQ(c.rule, RuleId::Item);
  EXPECT_EQ(c.op, "at::Tensor::item");
}

TEST(Classifier, ItemBoolIsABoolConditionNotAnItem) {
  Classification c = run(ev(ApiKind::StreamSync), item_path("bool at::Tensor::item<bool>() const"));
  EXPECT_EQ(c.rule, RuleId::BoolCondition);
  EXPECT_EQ(c.op, "at::Tensor::item<bool>");
}

TEST(Classifier, CpuIsDeviceToHostForTheCopyAndTheSyncAfterIt) {
  const auto frames = copy_path("cudaMemcpyAsync", "at::Tensor::cpu() const");
  Classification copy = run(ev(ApiKind::MemcpyAsync, Direction::DeviceToHost), frames);
  EXPECT_EQ(copy.rule, RuleId::DeviceToHost);
  EXPECT_EQ(copy.op, "at::Tensor::cpu") << "the outermost op of the copy family names the call";
  Classification sync =
      run(ev(ApiKind::StreamSync, Direction::None, Direction::DeviceToHost), copy_path("cudaStreamSynchronize", "at::Tensor::cpu() const"));
  EXPECT_EQ(sync.rule, RuleId::DeviceToHost);
}

TEST(Classifier, UploadThroughToIsPageableH2D) {
  const auto frames = copy_path("cudaMemcpyAsync",
                                "at::Tensor::to(c10::TensorOptions, bool, bool, std::optional<c10::MemoryFormat>) const");
  Classification c = run(ev(ApiKind::MemcpyAsync, Direction::HostToDevice), frames);
  EXPECT_EQ(c.rule, RuleId::PageableH2D);
  EXPECT_EQ(c.op, "at::Tensor::to");
}

TEST(Classifier, NonzeroAndClipGradNormAreHiddenSyncs) {
  Classification nz = run(ev(ApiKind::StreamSync),
                          with_user({lib("cudaStreamSynchronize", kCudart),
                                     lib("at::native::nonzero_out_cuda(at::Tensor const&, at::Tensor&)", kCuda),
                                     lib("at::_ops::nonzero::call(at::Tensor const&)", kCpu),
                                     lib("at::Tensor::nonzero() const", kCpu)}));
  EXPECT_EQ(nz.rule, RuleId::HiddenSync);
  EXPECT_EQ(nz.op, "nonzero");
  std::vector<Frame> clip = item_path("double at::Tensor::item<double>() const");
  clip.insert(clip.end() - 3, lib("torch::nn::utils::clip_grad_norm_(std::vector<at::Tensor> const&, double)", kCpu));
  Classification c = run(ev(ApiKind::StreamSync), clip);
  EXPECT_EQ(c.rule, RuleId::HiddenSync) << "clip_grad_norm_'s item() is the op's hidden sync";
}

TEST(Classifier, NonzeroStaticDoesNotSyncAndIsNotNamed) {
  Classification c = run(ev(ApiKind::StreamSync),
                         with_user({lib("cudaStreamSynchronize", kCudart),
                                    lib("at::_ops::nonzero_static::call(at::Tensor const&, long, long)", kCpu)}));
  EXPECT_EQ(c.rule, RuleId::ExplicitSync) << "falls back to the API's rule";
  EXPECT_EQ(c.op, "");
}

TEST(Classifier, ParameterTypesDoNotMatchOpNames) {
  Classification c = run(ev(ApiKind::StreamSync),
                          with_user({lib("cudaStreamSynchronize", kCudart),
                                     lib("at::native::launch(std::unique_ptr<int>, at::Tensor& copy_)", kCpu)}));
  EXPECT_EQ(c.rule, RuleId::ExplicitSync);
  EXPECT_EQ(c.op, "");
}

TEST(Classifier, ExplicitSynchronizeWithAndWithoutTorch) {
  Classification t = run(ev(ApiKind::DeviceSync), with_user({lib("cudaDeviceSynchronize", kCudart),
                                                             lib("c10::cuda::device_synchronize()", kCuda),
                                                             lib("torch::cuda::synchronize(long)", kCpu)}));
  EXPECT_EQ(t.rule, RuleId::ExplicitSync);
  EXPECT_EQ(t.op, "torch::cuda::synchronize");
  Classification raw = run(ev(ApiKind::EventSync), with_user({lib("cudaEventSynchronize", kCudart)}));
  EXPECT_EQ(raw.rule, RuleId::ExplicitSync);
  EXPECT_EQ(raw.op, "");
}

TEST(Classifier, TorchCudaSynchronizeIsNamedEvenThoughItsFrameWasTailCalled) {
  // The stack as captured on the H200 (torch 2.11): torch::cuda::synchronize
  // jumps to the hooks, leaving no frame of its own.
  Classification c = run(ev(ApiKind::DeviceSync),
                         with_user({lib("cudaDeviceSynchronize", kCudart),
                                    lib("c10::cuda::device_synchronize()", "/venv/torch/lib/libc10_cuda.so"),
                                    lib("at::cuda::detail::CUDAHooks::deviceSynchronize(signed char) const", kCuda)}));
  EXPECT_EQ(c.rule, RuleId::ExplicitSync);
  EXPECT_EQ(c.op, "torch::cuda::synchronize");
}

TEST(Classifier, AllocatorCallsAreAllocatorSyncsWhateverOpCausedThem) {
  Classification empty = run(ev(ApiKind::Free), with_user({lib("cudaFree", kCudart),
                                                          lib("c10::cuda::CUDACachingAllocator::Native::"
                                                              "DeviceCachingAllocator::release_block(Block*)",
                                                              "/venv/torch/lib/libc10_cuda.so"),
                                                          lib("c10::cuda::CUDACachingAllocator::Native::"
                                                              "NativeCachingAllocator::emptyCache()",
                                                              "/venv/torch/lib/libc10_cuda.so")}));
  EXPECT_EQ(empty.rule, RuleId::AllocatorSync);
  EXPECT_EQ(empty.op, "c10::cuda::CUDACachingAllocator::emptyCache");
  Classification miss = run(ev(ApiKind::Free), copy_path("cudaFree", "at::Tensor::cpu() const"));
  EXPECT_EQ(miss.rule, RuleId::AllocatorSync);
}

// A wait on NCCL work in torch 2.11: WorkNCCL::wait synchronizes the current
// stream when the work is a barrier's (ProcessGroupNCCL.cpp,
// synchronizeInternal). On the H200, dist.barrier() showed
// ProcessGroupNCCL::barrier further out as well (tested below).
std::vector<Frame> barrier_path() {
  return with_user({lib("cudaStreamSynchronize", kCudart),
                    lib("c10::cuda::CUDAStream::synchronize() const", "/venv/torch/lib/libc10_cuda.so"),
                    lib("c10d::ProcessGroupNCCL::WorkNCCL::synchronizeInternal(std::chrono::duration<long, "
                        "std::ratio<1l, 1000l> >)", kCuda),
                    lib("c10d::ProcessGroupNCCL::WorkNCCL::wait(std::chrono::duration<long, std::ratio<1l, "
                        "1000l> >)", kCuda)});
}

TEST(Classifier, WaitsInsideACollectiveAreCollectiveWaitsNotExplicitSyncs) {
  Classification c = run(ev(ApiKind::StreamSync), barrier_path());
  EXPECT_EQ(c.rule, RuleId::CollectiveWait);
  EXPECT_EQ(c.op, "c10d::ProcessGroupNCCL::WorkNCCL::wait");
  // From Python the binding frames above it are c10d:: too; the named wait still names it.
  std::vector<Frame> py = barrier_path();
  py.insert(py.begin() + 7, lib("torch::distributed::c10d::(anonymous namespace)::c10d_init(_object*, _object*)::"
                                "{lambda(c10d::Work&)#1}::operator()(c10d::Work&) const",
                                "/venv/torch/lib/libtorch_python.so"));
  EXPECT_EQ(run(ev(ApiKind::StreamSync), py).op, "c10d::ProcessGroupNCCL::WorkNCCL::wait");
  // With the barrier's own frame outside the wait, the outer named frame names it.
  std::vector<Frame> barrier = barrier_path();
  barrier.insert(barrier.begin() + 7, lib("c10d::ProcessGroupNCCL::barrier(c10d::BarrierOptions const&)", kCuda));
  EXPECT_EQ(run(ev(ApiKind::StreamSync), barrier).op, "c10d::ProcessGroupNCCL::barrier");
  // The same CUDAStream::synchronize without the c10d frames is the user's.
  Classification plain = run(ev(ApiKind::StreamSync),
                             with_user({lib("cudaStreamSynchronize", kCudart),
                                        lib("c10::cuda::CUDAStream::synchronize() const",
                                            "/venv/torch/lib/libc10_cuda.so")}));
  EXPECT_EQ(plain.rule, RuleId::ExplicitSync);
}

TEST(Classifier, NcclFramesMakeEvenAnAllocationACollectiveWait) {
  // Communicator setup at the first collective: NCCL's hidden symbols leave
  // no function name, only the module.
  Classification c = run(ev(ApiKind::Malloc),
                         with_user({lib("cudaMalloc", kCudart), lib("", "/venv/nvidia/nccl/lib/libnccl.so.2"),
                                    lib("ncclCommInitRankConfig", "/venv/nvidia/nccl/lib/libnccl.so.2"),
                                    lib("c10d::NCCLComm::create(int, int, ncclUniqueId, signed char)", kCuda),
                                    lib("c10d::ProcessGroupNCCL::initNCCLComm(std::string const&, c10::Device&, "
                                        "c10d::OpType, int, bool)", kCuda)}));
  EXPECT_EQ(c.rule, RuleId::CollectiveWait);
  EXPECT_EQ(c.op, "c10d (torch.distributed)") << "a c10d frame names it before NCCL's module does";
  Classification inner_only = run(ev(ApiKind::StreamSync),
                                  with_user({lib("cudaStreamSynchronize", kCudart),
                                             lib("", "/venv/nvidia/nccl/lib/libnccl.so.2")}));
  EXPECT_EQ(inner_only.rule, RuleId::CollectiveWait);
  EXPECT_EQ(inner_only.op, "NCCL");
}

TEST(Classifier, AnItemOnAnAllReducedTensorIsStillAnItem) {
  // No c10d frame between the CUDA call and the user: the .item() is the user's.
  Classification c = run(ev(ApiKind::StreamSync), item_path("float at::Tensor::item<float>() const"));
  EXPECT_EQ(c.rule, RuleId::Item);
  // c10d frames outside the user frame (the user's code called from a
  // distributed hook) do not count.
  std::vector<Frame> f = item_path("float at::Tensor::item<float>() const");
  f.push_back(lib("c10d::Reducer::autograd_hook(unsigned long)", kCuda));
  EXPECT_EQ(run(ev(ApiKind::StreamSync), f).rule, RuleId::Item);
}

TEST(Classifier, PythonCalledFromACollectiveCallbackKeepsItsOwnRule) {
  // A DDP comm hook (Python) calling .item(): the c10d frames that ran the
  // hook are beyond the interpreter frames, so they are not the call's collective.
  const char* kPy = "/usr/bin/python3.12";
  std::vector<Frame> f = observer_frames();
  for (const Frame& x : {lib("cudaStreamSynchronize", kCudart),
                         lib("at::native::_local_scalar_dense_cuda(at::Tensor const&)", kCuda),
                         lib("at::native::item(at::Tensor const&)", kCpu),
                         lib("torch::autograd::THPVariable_item(_object*, _object*)",
                             "/venv/torch/lib/libtorch_python.so"),
                         lib("_PyEval_EvalFrameDefault", kPy), lib("PyObject_Call", kPy),
                         lib("c10d::PythonCommHook::runHook(c10d::GradBucket&)", "/venv/torch/lib/libtorch_python.so"),
                         lib("c10d::Reducer::run_comm_hook(c10d::GradBucket&)", kCpu)})
    f.push_back(x);
  Classification c = run(ev(ApiKind::StreamSync), f);
  EXPECT_EQ(c.rule, RuleId::Item);
  EXPECT_EQ(c.op, "at::_local_scalar_dense");
}

TEST(Classifier, AnAllocatorMissInsideACollectiveIsStillTheAllocators) {
  // all_gather allocating its output through the caching allocator.
  std::vector<Frame> frames = with_user(
      {lib("cudaFree", kCudart),
       lib("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::release_cached_blocks()",
           "/venv/torch/lib/libc10_cuda.so"),
       lib("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long, "
           "CUstream_st*)",
           "/venv/torch/lib/libc10_cuda.so"),
       lib("at::native::empty_cuda(c10::ArrayRef<long>, std::optional<c10::ScalarType>)", kCuda),
       lib("c10d::ProcessGroupNCCL::allgather(std::vector<std::vector<at::Tensor> >&, std::vector<at::Tensor>&, "
           "c10d::AllgatherOptions const&)",
           kCuda)});
  EXPECT_EQ(run(ev(ApiKind::Free), frames).rule, RuleId::AllocatorSync);
  // The same collective's stream sync is the collective's.
  EXPECT_EQ(run(ev(ApiKind::StreamSync), barrier_path()).rule, RuleId::CollectiveWait);
}

TEST(Classifier, ApiFallbacksWithoutAnyFrames) {
  EXPECT_EQ(rule_for_api(ev(ApiKind::Memcpy, Direction::DeviceToHost)), RuleId::DeviceToHost);
  EXPECT_EQ(rule_for_api(ev(ApiKind::MemcpyAsync, Direction::HostToDevice)), RuleId::PageableH2D);
  EXPECT_EQ(rule_for_api(ev(ApiKind::StreamSync)), RuleId::ExplicitSync);
  EXPECT_EQ(rule_for_api(ev(ApiKind::Free)), RuleId::AllocatorSync);
  EXPECT_EQ(rule_for_api(ev(ApiKind::Memset)), RuleId::HiddenSync);
}
