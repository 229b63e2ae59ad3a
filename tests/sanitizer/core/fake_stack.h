// Synthetic call stacks for the core tests: each frame gets a made-up PC, and
// a symbolizer that maps those PCs back, counting how often it is asked.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine.h"
#include "frames.h"

namespace nosync::san::testing {

inline Frame user(std::string fn, std::string file, int line, std::string module = "/work/app/train") {
  return Frame{0, std::move(fn), std::move(file), line, std::move(module), 0};
}
inline Frame lib(std::string fn, std::string module) { return Frame{0, std::move(fn), "", 0, std::move(module), 0}; }

// The top of every real stack: the sanitizer's callback, CUPTI, the driver.
inline std::vector<Frame> observer_frames() {
  return {lib("nosync::san::on_callback", "/opt/nosync/libnosync_sanitizer.so"),
          lib("cuptiPrivate", "/usr/local/cuda/lib64/libcupti.so.13"),
          lib("cuStreamSynchronize", "/usr/lib/x86_64-linux-gnu/libcuda.so.1")};
}

class FakeSymbolizer : public Symbolizer {
 public:
  // Registers a stack and returns its PCs (innermost first).
  std::vector<std::uintptr_t> stack(const std::vector<Frame>& frames) {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::uintptr_t> pcs;
    for (Frame f : frames) {
      f.pc = next_pc_;
      next_pc_ += 0x10;
      pcs.push_back(f.pc);
      by_pc_[f.pc] = f;
    }
    return pcs;
  }
  std::vector<Frame> symbolize(const std::uintptr_t* pcs, std::size_t n) override {
    calls.fetch_add(1);
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<Frame> out;
    for (std::size_t i = 0; i < n; ++i) {
      auto it = by_pc_.find(pcs[i]);
      out.push_back(it == by_pc_.end() ? Frame{pcs[i], "", "", 0, "", 0} : it->second);
    }
    return out;
  }
  std::atomic<int> calls{0};

 private:
  std::mutex mu_;
  std::uintptr_t next_pc_ = 0x400000;
  std::map<std::uintptr_t, Frame> by_pc_;
};

inline SyncEvent event(ApiKind kind, const char* api, const std::vector<std::uintptr_t>& pcs,
                       std::uint64_t ns = 1000) {
  SyncEvent e;
  e.kind = kind;
  e.api = api;
  e.duration_ns = ns;
  e.pcs = pcs.data();
  e.num_pcs = static_cast<std::uint32_t>(pcs.size());
  return e;
}

// An engine wired to a FakeSymbolizer and capturing its output.
struct TestEngine {
  explicit TestEngine(Options o = {}, Suppressions s = {}) {
    auto sym = std::make_unique<FakeSymbolizer>();
    symbolizer = sym.get();
    engine = std::make_unique<Engine>(std::move(o), std::move(sym), std::move(s));
    engine->set_writer([this](const std::string& t) {
      std::lock_guard<std::mutex> lock(mu);
      output += t;
    });
    engine->set_pid_source([] { return 4242; });
  }
  FakeSymbolizer* symbolizer;
  std::unique_ptr<Engine> engine;
  std::mutex mu;
  std::string output;
};

}  // namespace nosync::san::testing
