// Maps a blocking call plus its symbolized stack to a rule of the catalog
// (nosync/rules.h). The LibTorch op frames between the CUDA call and the user
// frame say which hazard it was; the API kind decides when no op is visible
// (raw CUDA calls from user code, stripped libraries). A call made inside
// torch.distributed (c10d:: or libnccl frames) is a collective wait whatever
// the API or op.
#pragma once

#include <string>
#include <vector>

#include <nosync/rules.h>

#include "events.h"
#include "frames.h"

namespace nosync::san {

struct Classification {
  nosync::rules::RuleId rule = nosync::rules::RuleId::ExplicitSync;
  std::string op;  // the LibTorch op that synced ("at::Tensor::item"), or "" if none seen
};

// The rule an API kind maps to when no op frame says better.
nosync::rules::RuleId rule_for_api(const SyncEvent& e);

// `frames` innermost first; only frames before `user_frame` are searched for ops.
Classification classify(const SyncEvent& e, const std::vector<Frame>& frames, std::size_t user_frame);

}  // namespace nosync::san
