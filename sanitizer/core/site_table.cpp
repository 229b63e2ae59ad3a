#include "site_table.h"

namespace nosync::san {

SiteTable::SiteTable(std::size_t max_sites) : max_sites_(max_sites) {}

std::uint64_t SiteTable::hash(const SyncEvent& e, std::size_t depth) {
  // FNV-1a over the API kind, direction and return addresses. A 64-bit
  // collision between two distinct stacks of one process merges two sites;
  // at 4096 sites that is ~1e-12 likely, accepted.
  std::uint64_t h = 1469598103934665603ull;
  auto mix = [&h](std::uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xff;
      h *= 1099511628211ull;
    }
  };
  mix(static_cast<std::uint64_t>(e.kind));
  mix(static_cast<std::uint64_t>(e.direction));
  const std::size_t n = e.num_pcs < depth ? e.num_pcs : depth;
  for (std::size_t i = 0; i < n; ++i) mix(e.pcs[i]);
  for (std::uint32_t i = 0; e.python_stack && i < e.python_stack_len; ++i) {
    h ^= static_cast<unsigned char>(e.python_stack[i]);
    h *= 1099511628211ull;
  }
  return h;
}

namespace {
void bump(Site& s, const SyncEvent& e) {
  ++s.count;
  s.total_ns += e.duration_ns;
  if (e.duration_ns > s.max_ns) s.max_ns = e.duration_ns;
  s.bytes += e.bytes;
}

void fill(Site& s, const SyncEvent& e, std::size_t depth) {
  s.kind = e.kind;
  s.api = e.api ? e.api : "";
  s.direction = e.direction;
  s.last_copy = e.last_copy;
  s.src = e.src;
  s.dst = e.dst;
  const std::size_t n = e.num_pcs < depth ? e.num_pcs : depth;
  s.pcs.assign(e.pcs, e.pcs + n);
  if (e.python_stack && depth) s.python_stack.assign(e.python_stack, e.python_stack_len);
}
}  // namespace

SiteTable::AddResult SiteTable::add(const SyncEvent& e, std::size_t depth) {
  const std::uint64_t h = hash(e, depth);
  Shard& sh = shards_[h % kShards];
  {
    std::lock_guard<std::mutex> lock(sh.mu);
    auto it = sh.by_hash.find(h);
    if (it != sh.by_hash.end()) {
      bump(*it->second, e);
      return {it->second, false};
    }
    // Reserve a slot before creating the site so concurrent threads cannot
    // overshoot max_sites together.
    std::size_t n = num_sites_.load();
    while (n < max_sites_ && !num_sites_.compare_exchange_weak(n, n + 1)) {
    }
    if (n < max_sites_) {
      auto site = std::make_unique<Site>();
      site->id = next_id_.fetch_add(1);
      site->shard = static_cast<std::uint8_t>(h % kShards);
      fill(*site, e, depth);
      bump(*site, e);
      Site* raw = site.get();
      sh.owned.push_back(std::move(site));
      sh.by_hash.emplace(h, raw);
      return {raw, true};
    }
  }
  std::lock_guard<std::mutex> lock(overflow_mu_);
  bool is_new = false;
  if (!overflow_) {
    overflow_ = std::make_unique<Site>();
    overflow_->id = 0;
    overflow_->overflow = true;
    fill(*overflow_, e, 0);
    overflow_->api = "<many>";
    is_new = true;
  }
  bump(*overflow_, e);
  return {overflow_.get(), is_new};
}

std::vector<Site*> SiteTable::sites() const {
  std::vector<Site*> out;
  for (const Shard& sh : shards_) {
    std::lock_guard<std::mutex> lock(sh.mu);
    for (const auto& s : sh.owned) out.push_back(s.get());
  }
  std::lock_guard<std::mutex> lock(overflow_mu_);
  if (overflow_) out.push_back(overflow_.get());
  return out;
}

SiteStats SiteTable::stats(const Site* s) const {
  std::mutex& mu = s->overflow ? overflow_mu_ : shards_[s->shard].mu;
  std::lock_guard<std::mutex> lock(mu);
  return SiteStats{s->count, s->total_ns, s->max_ns, s->bytes};
}

std::uint64_t SiteTable::overflowed_calls() const {
  std::lock_guard<std::mutex> lock(overflow_mu_);
  return overflow_ ? overflow_->count : 0;
}

void SiteTable::lock_all() {
  for (Shard& sh : shards_) sh.mu.lock();
  overflow_mu_.lock();
}

void SiteTable::unlock_all() {
  overflow_mu_.unlock();
  for (Shard& sh : shards_) sh.mu.unlock();
}

void SiteTable::clear() {
  for (Shard& sh : shards_) {
    std::lock_guard<std::mutex> lock(sh.mu);
    sh.by_hash.clear();
    sh.owned.clear();
  }
  std::lock_guard<std::mutex> lock(overflow_mu_);
  overflow_.reset();
  num_sites_ = 0;
}

}  // namespace nosync::san
