// Per-call-site aggregation with bounded memory. A site is one unique
// (API kind, direction, call stack); blocking calls from the same site only
// bump its counters, so a week-long run costs as much memory as its distinct
// stacks, capped at max_sites (the rest fold into one overflow site).
//
// Sharded by stack hash so 16 threads syncing at once rarely share a lock;
// the blocking call being recorded took microseconds already, a short
// uncontended lock is noise next to it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "classifier.h"
#include "events.h"
#include "frames.h"

namespace nosync::san {

struct Site {
  std::uint32_t id = 0;
  bool overflow = false;
  std::uint8_t shard = 0;  // which SiteTable shard's lock guards the statistics
  ApiKind kind{};
  std::string api;
  Direction direction = Direction::None;
  Direction last_copy = Direction::None;
  MemKind src = MemKind::Unknown, dst = MemKind::Unknown;
  std::vector<std::uintptr_t> pcs;
  std::string python_stack;  // faulthandler text, "" without Python frames

  // Statistics: written under the owning shard's lock, read under it too.
  std::uint64_t count = 0, total_ns = 0, max_ns = 0, bytes = 0;

  // Resolution, filled once (under Engine's resolve lock) when first needed.
  bool resolved = false;
  std::vector<Frame> frames;
  std::size_t user_frame = 0;
  Classification cls;
  int suppression = -1;  // index into Suppressions, -1 = reported
};

struct SiteStats {
  std::uint64_t count = 0, total_ns = 0, max_ns = 0, bytes = 0;
};

class SiteTable {
 public:
  explicit SiteTable(std::size_t max_sites);

  struct AddResult {
    Site* site;
    bool is_new;
  };
  // Records one blocking call; `depth` caps the stored stack.
  AddResult add(const SyncEvent& e, std::size_t depth);

  std::vector<Site*> sites() const;  // overflow site last, if used
  SiteStats stats(const Site* s) const;
  std::size_t size() const { return num_sites_.load(); }
  std::uint64_t overflowed_calls() const;

  // fork(): hold every lock across fork so the child never inherits a lock
  // owned by a thread that does not exist there; then the child starts empty.
  void lock_all();
  void unlock_all();
  void clear();

  static std::uint64_t hash(const SyncEvent& e, std::size_t depth);

 private:
  static constexpr std::size_t kShards = 16;
  struct Shard {
    mutable std::mutex mu;
    std::unordered_map<std::uint64_t, Site*> by_hash;
    std::vector<std::unique_ptr<Site>> owned;
  };
  const std::size_t max_sites_;
  std::atomic<std::size_t> num_sites_{0};
  std::atomic<std::uint32_t> next_id_{1};
  mutable Shard shards_[kShards];
  mutable std::mutex overflow_mu_;
  std::unique_ptr<Site> overflow_;
};

}  // namespace nosync::san
