#include "classifier.h"

#include <string_view>

#include "attribution.h"

namespace nosync::san {

using nosync::rules::RuleId;

namespace {

// How an op frame decides the rule. CopyFamily ops (.cpu(), .to(), copy_)
// take the rule from the copy direction: the same frame is a device-to-host
// read or a pageable upload.
enum class OpRule { Fixed, CopyFamily };

struct OpPattern {
  std::string_view needle;  // substring of the demangled function name
  std::string_view op;      // what reports call it
  OpRule how;
  RuleId rule;              // for Fixed
  int priority;             // lower wins when several ops are on the stack
};

// Priorities encode "the most specific explanation wins": item<bool> calls
// item() which calls _local_scalar_dense, and the user wrote a branch, so the
// bool rule beats the item rule; clip_grad_norm_ calls item() inside, so the
// hidden-sync rule beats the item rule; .cpu() calls copy_.
constexpr OpPattern kOps[] = {
    {"item<bool>", "at::Tensor::item<bool>", OpRule::Fixed, RuleId::BoolCondition, 0},
    {"is_nonzero", "at::Tensor::is_nonzero", OpRule::Fixed, RuleId::BoolCondition, 0},
    {"allclose", "allclose", OpRule::Fixed, RuleId::BoolCondition, 0},
    {"at::Tensor::equal", "at::Tensor::equal", OpRule::Fixed, RuleId::BoolCondition, 0},
    {"native::equal", "at::Tensor::equal", OpRule::Fixed, RuleId::BoolCondition, 0},
    {"_ops::equal::", "at::Tensor::equal", OpRule::Fixed, RuleId::BoolCondition, 0},

    {"clip_grad_norm_", "torch::nn::utils::clip_grad_norm_", OpRule::Fixed, RuleId::HiddenSync, 1},
    {"masked_select", "masked_select", OpRule::Fixed, RuleId::HiddenSync, 1},
    {"nonzero_static", "", OpRule::Fixed, RuleId::HiddenSync, 99},  // never syncs: shadows "nonzero"
    {"nonzero", "nonzero", OpRule::Fixed, RuleId::HiddenSync, 1},
    // Spelled out: a bare "unique" would match std::unique_ptr in signatures.
    {"at::_unique", "unique", OpRule::Fixed, RuleId::HiddenSync, 1},
    {"at::unique_", "unique", OpRule::Fixed, RuleId::HiddenSync, 1},
    {"_ops::_unique", "unique", OpRule::Fixed, RuleId::HiddenSync, 1},
    {"_ops::unique_", "unique", OpRule::Fixed, RuleId::HiddenSync, 1},
    {"native::_unique", "unique", OpRule::Fixed, RuleId::HiddenSync, 1},
    {"native::unique_", "unique", OpRule::Fixed, RuleId::HiddenSync, 1},
    {"repeat_interleave", "repeat_interleave", OpRule::Fixed, RuleId::HiddenSync, 1},
    {"multinomial", "multinomial", OpRule::Fixed, RuleId::HiddenSync, 1},
    {"randperm", "randperm", OpRule::Fixed, RuleId::HiddenSync, 1},
    {"_linalg_check_errors", "linalg error check", OpRule::Fixed, RuleId::HiddenSync, 1},
    {"at::print", "operator<<(Tensor)", OpRule::Fixed, RuleId::HiddenSync, 1},
    {"histc", "histc", OpRule::Fixed, RuleId::HiddenSync, 1},
    {"bincount", "bincount", OpRule::Fixed, RuleId::HiddenSync, 1},
    {"nanmedian", "nanmedian", OpRule::Fixed, RuleId::HiddenSync, 1},

    {"_local_scalar_dense", "at::_local_scalar_dense", OpRule::Fixed, RuleId::Item, 2},
    {"at::Tensor::item", "at::Tensor::item", OpRule::Fixed, RuleId::Item, 2},

    {"at::Tensor::cpu", "at::Tensor::cpu", OpRule::CopyFamily, RuleId::DeviceToHost, 3},
    {"at::Tensor::cuda", "at::Tensor::cuda", OpRule::CopyFamily, RuleId::PageableH2D, 3},
    {"at::Tensor::to", "at::Tensor::to", OpRule::CopyFamily, RuleId::DeviceToHost, 3},
    {"_to_copy", "at::_to_copy", OpRule::CopyFamily, RuleId::DeviceToHost, 3},
    {"copy_", "at::Tensor::copy_", OpRule::CopyFamily, RuleId::DeviceToHost, 3},

    {"torch::cuda::synchronize", "torch::cuda::synchronize", OpRule::Fixed, RuleId::ExplicitSync, 4},
    // torch::cuda::synchronize tail-calls the CUDA hooks, so on a real stack
    // (torch 2.11, seen on the H200) its own frame is gone and this one names it.
    {"CUDAHooks::deviceSynchronize", "torch::cuda::synchronize", OpRule::Fixed, RuleId::ExplicitSync, 4},
    {"device_synchronize", "c10::cuda::device_synchronize", OpRule::Fixed, RuleId::ExplicitSync, 4},
    {"CUDAStream::synchronize", "c10::cuda::CUDAStream::synchronize", OpRule::Fixed, RuleId::ExplicitSync, 4},
    {"CUDAEvent::synchronize", "at::cuda::CUDAEvent::synchronize", OpRule::Fixed, RuleId::ExplicitSync, 4},

    {"emptyCache", "c10::cuda::CUDACachingAllocator::emptyCache", OpRule::Fixed, RuleId::AllocatorSync, 5},
    {"empty_cache", "torch.cuda.empty_cache", OpRule::Fixed, RuleId::AllocatorSync, 5},
    {"CUDACachingAllocator", "CUDACachingAllocator", OpRule::Fixed, RuleId::AllocatorSync, 5},
};

// torch.distributed's C++ layer. A wait found under one of these frames is
// the collective's, whatever CUDA call or ATen op carried it out (a barrier
// synchronizes through CUDAStream::synchronize; communicator setup allocates).
// A named operation beats the generic namespace match (the Python binding
// frames above a barrier are c10d:: too), which beats NCCL's module; on a tie
// the outermost frame names it.
constexpr OpPattern kCollectiveOps[] = {
    {"ProcessGroupNCCL::barrier", "c10d::ProcessGroupNCCL::barrier", OpRule::Fixed, RuleId::CollectiveWait, 0},
    {"WorkNCCL::wait", "c10d::ProcessGroupNCCL::WorkNCCL::wait", OpRule::Fixed, RuleId::CollectiveWait, 0},
    {"WorkNCCL::synchronize", "c10d::ProcessGroupNCCL::WorkNCCL::wait", OpRule::Fixed, RuleId::CollectiveWait, 0},
    {"c10d::Reducer::", "c10d::Reducer (DDP)", OpRule::Fixed, RuleId::CollectiveWait, 0},
    {"c10d::", "c10d (torch.distributed)", OpRule::Fixed, RuleId::CollectiveWait, 1},
};
// NCCL's own frames: most of its symbols are hidden, so the module says it.
constexpr OpPattern kNcclModule{"libnccl", "NCCL", OpRule::Fixed, RuleId::CollectiveWait, 2};

// The part of a demangled name before its parameter list: needles must not
// match parameter types ("const at::Tensor&" is everywhere).
std::string_view name_part(const std::string& fn) {
  std::string_view s = fn;
  std::size_t paren = s.find('(');
  return paren == std::string_view::npos ? s : s.substr(0, paren);
}

RuleId rule_for_direction(Direction d, RuleId fallback) {
  if (d == Direction::DeviceToHost) return RuleId::DeviceToHost;
  if (d == Direction::HostToDevice) return RuleId::PageableH2D;
  return fallback;
}

struct Collective {
  const OpPattern* op = nullptr;  // null: not inside a collective
  std::size_t innermost = 0;      // index of the collective frame nearest the call
};

// The collective a wait happened in: the best c10d or NCCL frame between the
// call and the user's code (the user frame, or the Python interpreter: c10d
// frames beyond it, such as a DDP comm hook running Python, are not the
// collective this call belongs to).
Collective collective_of(const std::vector<Frame>& frames, std::size_t end) {
  Collective c;
  auto consider = [&c](const OpPattern* p, std::size_t i) {
    if (!c.op) c.innermost = i;
    if (!c.op || p->priority <= c.op->priority) c.op = p;
  };
  for (std::size_t i = 0; i < end && !is_interpreter_frame(frames[i]); ++i) {
    if (basename_of(frames[i].module).rfind(kNcclModule.needle, 0) == 0) {
      consider(&kNcclModule, i);
      continue;
    }
    const std::string_view fn = name_part(frames[i].function);
    for (const OpPattern& p : kCollectiveOps)
      if (fn.find(p.needle) != std::string_view::npos) {
        consider(&p, i);
        break;
      }
  }
  return c;
}

// The innermost caching-allocator frame before `end`, or `end`.
std::size_t allocator_frame(const std::vector<Frame>& frames, std::size_t end) {
  for (std::size_t i = 0; i < end; ++i)
    if (name_part(frames[i].function).find("CUDACachingAllocator") != std::string_view::npos) return i;
  return end;
}

}  // namespace

RuleId rule_for_api(const SyncEvent& e) {
  switch (e.kind) {
    case ApiKind::Memcpy:
    case ApiKind::MemcpyAsync:
      return rule_for_direction(e.direction, RuleId::DeviceToHost);
    case ApiKind::Memset:
      return RuleId::HiddenSync;
    case ApiKind::Free:
    case ApiKind::Malloc:
      return RuleId::AllocatorSync;
    default:
      return RuleId::ExplicitSync;
  }
}

Classification classify(const SyncEvent& e, const std::vector<Frame>& frames, std::size_t user_frame) {
  Classification out;
  const std::size_t end = user_frame < frames.size() ? user_frame : frames.size();
  const Collective c = collective_of(frames, end);
  // A caching-allocator miss inside a collective (its output tensor) is still
  // the allocator's hazard, fixable the same way as anywhere else.
  const bool allocator_inside =
      (e.kind == ApiKind::Free || e.kind == ApiKind::Malloc) && allocator_frame(frames, end) < c.innermost;
  if (c.op && !allocator_inside) {
    out.rule = c.op->rule;
    out.op = std::string(c.op->op);
    return out;
  }
  out.rule = rule_for_api(e);
  // An allocator call is an allocator hazard whichever op caused it (a
  // caching-allocator miss inside .cpu() is not a device-to-host problem).
  if (e.kind == ApiKind::Free || e.kind == ApiKind::Malloc) {
    // Name it by the outermost allocator frame: emptyCache() rather than the
    // release helper it calls.
    for (std::size_t i = 0; i < frames.size() && i < user_frame; ++i)
      for (const OpPattern& p : kOps)
        if (p.rule == RuleId::AllocatorSync && name_part(frames[i].function).find(p.needle) != std::string::npos) {
          out.op = std::string(p.op);
          break;
        }
    return out;
  }
  const OpPattern* best = nullptr;
  for (std::size_t i = 0; i < end; ++i) {
    const std::string_view fn = name_part(frames[i].function);
    if (fn.empty()) continue;
    for (const OpPattern& p : kOps) {
      if (fn.find(p.needle) == std::string::npos) continue;
      // Frames are scanned inner to outer; on a tie the outer frame wins
      // because it is the one the user called (at::Tensor::cpu over copy_).
      if (!best || p.priority <= best->priority) best = &p;
      break;  // first pattern that matches this frame is its meaning
    }
  }
  if (!best || best->op.empty()) return out;
  out.op = std::string(best->op);
  if (best->how == OpRule::Fixed) {
    out.rule = best->rule;
  } else {
    // A memcpy carries its own direction; a stream sync inside a copy op
    // inherits the direction of the copy the thread issued just before.
    Direction d = (e.kind == ApiKind::Memcpy || e.kind == ApiKind::MemcpyAsync) ? e.direction : e.last_copy;
    out.rule = rule_for_direction(d, best->rule);
  }
  return out;
}

}  // namespace nosync::san
