#include "classifier.h"

#include <string_view>

#include <nosync/ops.h>

#include "attribution.h"

namespace nosync::san {

using nosync::rules::RuleId;

namespace {

using nosync::rules::kOps;
using nosync::rules::Op;
using nosync::rules::OpEntry;
using nosync::rules::OpForm;

// Whether a frame's function name (or, for Form Module, its library's file
// name) matches one of the op's frame patterns (rules/include/nosync/ops.def).
bool matches(const OpEntry& op, std::string_view text) {
  if (op.form == OpForm::Module)
    return nosync::rules::any_word(op.frames, [text](std::string_view p) { return text.rfind(p, 0) == 0; });
  return nosync::rules::any_word(op.frames,
                                 [text](std::string_view p) { return text.find(p) != std::string_view::npos; });
}

bool is_collective(const OpEntry& op) { return op.at_runtime == RuleId::CollectiveWait; }

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
  const OpEntry* op = nullptr;  // null: not inside a collective
  std::size_t innermost = 0;    // index of the collective frame nearest the call
};

// The collective a wait happened in: the best c10d or NCCL frame between the
// call and the user's code (the user frame, or the Python interpreter: c10d
// frames beyond it, such as a DDP comm hook running Python, are not the
// collective this call belongs to).
Collective collective_of(const std::vector<Frame>& frames, std::size_t end) {
  Collective c;
  for (std::size_t i = 0; i < end && !is_interpreter_frame(frames[i]); ++i) {
    const std::string_view fn = name_part(frames[i].function);
    const std::string module = basename_of(frames[i].module);
    for (const OpEntry& op : kOps) {
      if (!is_collective(op) || !matches(op, op.form == OpForm::Module ? std::string_view(module) : fn)) continue;
      if (!c.op) c.innermost = i;
      if (!c.op || op.priority <= c.op->priority) c.op = &op;
      break;
    }
  }
  return c;
}

// The innermost caching-allocator frame before `end`, or `end`.
std::size_t allocator_frame(const std::vector<Frame>& frames, std::size_t end) {
  for (std::size_t i = 0; i < end; ++i)
    if (matches(nosync::rules::get(Op::CachingAllocator), name_part(frames[i].function))) return i;
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
    out.rule = c.op->at_runtime;
    out.op = std::string(c.op->display);
    return out;
  }
  out.rule = rule_for_api(e);
  // An allocator call is an allocator hazard whichever op caused it (a
  // caching-allocator miss inside .cpu() is not a device-to-host problem).
  if (e.kind == ApiKind::Free || e.kind == ApiKind::Malloc) {
    // Name it by the outermost allocator frame: emptyCache() rather than the
    // release helper it calls.
    for (std::size_t i = 0; i < frames.size() && i < user_frame; ++i)
      for (const OpEntry& op : kOps)
        if (op.at_runtime == RuleId::AllocatorSync && matches(op, name_part(frames[i].function))) {
          out.op = std::string(op.display);
          break;
        }
    return out;
  }
  const OpEntry* best = nullptr;
  for (std::size_t i = 0; i < end; ++i) {
    const std::string_view fn = name_part(frames[i].function);
    if (fn.empty()) continue;
    for (const OpEntry& op : kOps) {
      if (is_collective(op) || !matches(op, fn)) continue;
      // Frames are scanned inner to outer; on a tie the outer frame wins
      // because it is the one the user called (at::Tensor::cpu over copy_).
      if (!best || op.priority <= best->priority) best = &op;
      break;  // the first op that matches this frame is its meaning
    }
  }
  if (!best || best->display.empty()) return out;
  out.op = std::string(best->display);
  if (best->form != OpForm::Copy) {
    out.rule = best->at_runtime;
  } else {
    // A memcpy carries its own direction; a stream sync inside a copy op
    // inherits the direction of the copy the thread issued just before.
    Direction d = (e.kind == ApiKind::Memcpy || e.kind == ApiKind::MemcpyAsync) ? e.direction : e.last_copy;
    out.rule = rule_for_direction(d, best->at_runtime);
  }
  return out;
}

}  // namespace nosync::san
