// StepGraph: warm-up on a side stream, capture into a private pool, replay.
// See include/nosync/step_graph.h for the contract.
#include <ATen/core/CachingHostAllocator.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <nosync/kernels.h>

#include <algorithm>
#include <optional>
#include <sstream>

#include "capture_sync.h"
#include "device.h"

namespace nosync::kernels {
namespace {

// What a graph depends on: count, dtypes and sizes of the inputs.
std::vector<int64_t> signature_of(at::TensorList inputs) {
  std::vector<int64_t> key{static_cast<int64_t>(inputs.size())};
  for (const at::Tensor& t : inputs) {
    TORCH_CHECK(t.defined(), "StepGraph: an input is an undefined tensor");
    key.push_back(static_cast<int64_t>(t.scalar_type()));
    key.push_back(t.dim());
    key.insert(key.end(), t.sizes().begin(), t.sizes().end());
  }
  return key;
}

std::string describe(at::TensorList inputs) {
  std::ostringstream s;
  for (size_t i = 0; i < inputs.size(); ++i) s << (i ? ", " : "") << inputs[i].scalar_type() << inputs[i].sizes();
  return s.str();
}

// Work on `to` waits for the work queued so far on `from` (on the device).
void order_after(const at::cuda::CUDAStream& from, const at::cuda::CUDAStream& to) {
  if (from == to) return;
  at::cuda::CUDAEvent done;
  done.record(from);
  done.block(to);
}

bool is_capture_error(const std::string& what) {
  // CUDA: "operation not permitted when stream is capturing", cudaErrorStreamCapture*;
  // torch, before a pageable copy: "Cannot copy between CPU and CUDA tensors during CUDA graph capture ..."
  return what.find("capturing") != std::string::npos || what.find("StreamCapture") != std::string::npos ||
         what.find("during CUDA graph capture") != std::string::npos;
}

}  // namespace

struct StepGraph::Impl {
  struct Entry {
    std::vector<int64_t> key;
    std::string shapes;               // for messages
    std::vector<at::Tensor> inputs;   // static: allocated outside the graph's pool
    int warmups_left = 0;
    std::unique_ptr<at::cuda::CUDAGraph> graph;
    std::vector<at::Tensor> outputs;  // static: the graph writes them on every replay
    uint64_t last_use = 0;
  };

  c10::Device device;
  Step step;
  StepGraphOptions options;
  std::vector<std::unique_ptr<Entry>> entries;
  std::optional<at::cuda::CUDAStream> side;  // warm-up and capture
  c10::MempoolId_t pool{0, 0};                // shared by this object's graphs
  std::unique_ptr<PinnedStager> stager;       // for pageable inputs, made on first need
  bool replayed = false;
  int captures = 0;
  uint64_t clock = 0;

  Impl(c10::Device d, Step s, StepGraphOptions o)
      : device(detail::resolve_device(d)), step(std::move(s)), options(o) {
    TORCH_CHECK(step, "StepGraph: the step function is empty");
    TORCH_CHECK(options.warmup_steps >= 1, "StepGraph: warmup_steps must be >= 1 (lazy state such as optimizer "
                "buffers must exist before capture), got ", options.warmup_steps);
    TORCH_CHECK(options.max_graphs >= 1, "StepGraph: max_graphs must be >= 1, got ", options.max_graphs);
    if (device.is_cuda()) {
      side = at::cuda::getStreamFromPool(/*isHighPriority=*/false, device.index());
      pool = at::cuda::graph_pool_handle();
    }
  }

  ~Impl() {
    // Graphs may still run on the caller's stream: order the side stream
    // (where the pool's blocks return) after them before they are released.
    if (side && !entries.empty()) {
      try {
        order_after(at::cuda::getCurrentCUDAStream(device.index()), *side);
      } catch (...) {
      }
    }
  }

  Entry& entry_for(at::TensorList inputs) {
    std::vector<int64_t> key = signature_of(inputs);
    for (auto& e : entries)
      if (e->key == key) return *e;
    if (!entries.empty() && !options.recapture_on_shape_change) {
      TORCH_CHECK(false, "StepGraph: the inputs changed from (", entries.front()->shapes, ") to (",
                  describe(inputs), "), and recapture_on_shape_change is off. A CUDA graph replays fixed shapes: "
                  "pad the batch to the captured shape, or allow a graph per shape");
    }
    if (static_cast<int>(entries.size()) >= options.max_graphs) evict_least_recent();
    auto e = std::make_unique<Entry>();
    e->key = std::move(key);
    e->shapes = describe(inputs);
    for (const at::Tensor& t : inputs) e->inputs.push_back(at::empty(t.sizes(), t.options().device(device)));
    e->warmups_left = options.warmup_steps;
    entries.push_back(std::move(e));
    return *entries.back();
  }

  void evict_least_recent() {
    auto victim = std::min_element(entries.begin(), entries.end(),
                                   [](const auto& a, const auto& b) { return a->last_use < b->last_use; });
    order_after(at::cuda::getCurrentCUDAStream(device.index()), *side);
    entries.erase(victim);
  }

  // Into the static buffers, on the current stream, never blocking the host
  // (a PinnedStager waits only when the host runs its ring's length ahead).
  void copy_inputs(at::TensorList inputs, Entry& e) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      const at::Tensor& src = inputs[i];
      at::Tensor& dst = e.inputs[i];
      if (src.device() == device || (src.is_cpu() && src.is_pinned())) {
        dst.copy_(src, /*non_blocking=*/true);
      } else {
        TORCH_CHECK(src.is_cpu(), "StepGraph: input ", i, " is on ", src.device(), ", not on the CPU or ", device);
        if (!stager) stager = std::make_unique<PinnedStager>(device);
        stager->stage_into(src, dst);
      }
    }
  }

  std::vector<at::Tensor> run_eagerly(Entry& e) {
    const auto current = at::cuda::getCurrentCUDAStream(device.index());
    order_after(current, *side);
    std::vector<at::Tensor> out;
    {
      at::cuda::CUDAStreamGuard on_side(*side);
      out = step(e.inputs);
    }
    order_after(*side, current);
    return out;
  }

  // Ends a capture that failed and gives its pool back, whatever state CUDA
  // left it in; the error that caused it is what the caller sees.
  void abandon(at::cuda::CUDAGraph& graph) {
    try {
      graph.capture_end();  // not invalidated (our handler threw first): ends and instantiates, then dropped
      return;
    } catch (...) {
    }
    // cudaStreamEndCapture failed on an invalidated capture: it has left
    // capture mode, but torch's capture_end stopped before handing the pool back.
    (void)cudaGetLastError();
    c10::cuda::CUDACachingAllocator::endAllocateToPool(device.index(), pool);
    c10::cuda::CUDACachingAllocator::releasePool(device.index(), pool);
    try {
      at::getHostAllocator(at::kCUDA)->end_allocate_to_pool(pool);
      at::getHostAllocator(at::kCUDA)->release_pool(pool);
    } catch (...) {
    }
  }

  void capture(Entry& e) {
    const auto current = at::cuda::getCurrentCUDAStream(device.index());
    order_after(current, *side);
    at::cuda::CUDAStreamGuard on_side(*side);
    auto graph = std::make_unique<at::cuda::CUDAGraph>();
    std::vector<at::Tensor> out;
    std::exception_ptr failure;
    {
      detail::CaptureSyncGuard sync_guard;  // a sync inside -> CaptureSyncError at its site
      graph->capture_begin(pool);
      try {
        out = step(e.inputs);
      } catch (const CaptureSyncError&) {
        failure = std::current_exception();
      } catch (const c10::Error& err) {
        failure = is_capture_error(err.what()) ? std::make_exception_ptr(detail::capture_error_from(err.what()))
                                               : std::current_exception();
      } catch (...) {
        failure = std::current_exception();
      }
    }
    if (failure) {
      abandon(*graph);
      graph.reset();
      std::rethrow_exception(failure);
    }
    try {
      graph->capture_end();
    } catch (const c10::Error& err) {
      // A sync that bypassed torch's check (a raw CUDA call whose error was
      // ignored) invalidates the capture silently until here.
      abandon(*graph);
      graph.reset();
      throw detail::capture_error_from(err.what());
    }
    e.graph = std::move(graph);
    e.outputs = std::move(out);
    ++captures;
  }

  std::vector<at::Tensor> run(at::TensorList inputs) {
    replayed = false;
    if (!device.is_cuda()) {  // CPU build: the step itself, every call
      for (const at::Tensor& t : inputs)
        TORCH_CHECK(t.device() == device, "StepGraph on ", device, ": input on ", t.device());
      return step(std::vector<at::Tensor>(inputs.begin(), inputs.end()));
    }
    c10::cuda::CUDAGuard guard(device);
    Entry& e = entry_for(inputs);
    e.last_use = ++clock;
    copy_inputs(inputs, e);
    if (e.warmups_left > 0) {
      --e.warmups_left;
      return run_eagerly(e);
    }
    if (!e.graph) capture(e);
    e.graph->replay();  // on the current stream, after the input copies
    replayed = true;
    return e.outputs;
  }
};

StepGraph::StepGraph(c10::Device device, Step step, StepGraphOptions options)
    : impl_(std::make_unique<Impl>(device, std::move(step), options)) {}
StepGraph::~StepGraph() = default;

std::vector<at::Tensor> StepGraph::operator()(at::TensorList inputs) { return impl_->run(inputs); }
bool StepGraph::replayed() const { return impl_->replayed; }
int StepGraph::captures() const { return impl_->captures; }
int StepGraph::graphs() const {
  return static_cast<int>(std::count_if(impl_->entries.begin(), impl_->entries.end(),
                                        [](const auto& e) { return e->graph != nullptr; }));
}

}  // namespace nosync::kernels
