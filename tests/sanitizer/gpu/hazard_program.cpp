// One small LibTorch program per scenario, run as a child process under
// CUDA_INJECTION64_PATH / nosync-run by run_sanitizer_programs.py. Lines the
// driver checks carry a "// LINE:<name>" marker; the driver finds them here.
//
//   hazard_program item|sigterm|fork|hold-cupti|clean|launch-bound|ranked
#include <cupti.h>
#include <signal.h>
#include <sys/wait.h>
#include <torch/torch.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

namespace {

void CUPTIAPI ignore(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

float items(const torch::Tensor& t, int n) {
  float acc = 0;
  for (int i = 0; i < n; ++i) acc += t.sum().item<float>();  // LINE:item
  return acc;
}

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

// A file barrier in NOSYNC_TEST_BARRIER (a directory): each rank announces
// itself, then waits for all WORLD_SIZE ranks, so that they sync on the GPU at
// the same time rather than one after the other. False after 60 s.
bool barrier(int rank, int world) {
  const char* dir = std::getenv("NOSYNC_TEST_BARRIER");
  if (dir == nullptr) return true;
  std::ofstream(std::string(dir) + "/rank" + std::to_string(rank)) << rank;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (int k = 0; k < world; ++k) {
    while (!std::ifstream(std::string(dir) + "/rank" + std::to_string(k))) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "item";
  if (std::strcmp(mode, "hold-cupti") == 0) {
    // Take CUPTI's only subscriber slot before CUDA starts, as a profiler would.
    CUpti_SubscriberHandle sub;
    std::printf("own cuptiSubscribe: %d\n", static_cast<int>(cuptiSubscribe(&sub, ignore, nullptr)));
  }
  if (!torch::cuda::is_available()) {
    std::printf("[  SKIPPED ] no CUDA GPU\n");
    return 77;
  }
  torch::Tensor t = torch::randn({1 << 20}, torch::kCUDA);
  if (std::strcmp(mode, "clean") == 0) {
    torch::Tensor acc = torch::zeros({}, torch::kCUDA);
    for (int i = 0; i < 100; ++i) acc += t.sum();
    std::printf("clean done\n");
    return 0;  // no readback: zero host syncs
  }
  if (std::strcmp(mode, "ranked") == 0) {
    // One rank of a torchrun-style job (RANK, WORLD_SIZE from the launcher):
    // rank r makes 3 + 2r item() calls, so each rank's count is its own.
    const int rank = env_int("RANK", 0), world = env_int("WORLD_SIZE", 1);
    if (!barrier(rank, world)) {
      std::fprintf(stderr, "rank %d: the other ranks never reached the barrier\n", rank);
      return 3;
    }
    std::printf("rank %d acc=%g\n", rank, items(t, 3 + 2 * rank));
    return 0;
  }
  if (std::strcmp(mode, "launch-bound") == 0) {
    // 20000 tiny kernels, host-bound: the GPU idles between launches.
    torch::Tensor x = torch::zeros({256}, torch::kCUDA);
    for (int i = 0; i < 20000; ++i) x.add_(1.0);
    torch::cuda::synchronize();
    std::printf("launch-bound done\n");
    return 0;
  }
  float acc = items(t, 5);
  std::printf("acc=%g\n", acc);
  std::fflush(stdout);
  if (std::strcmp(mode, "sigterm") == 0) {
    ::kill(::getpid(), SIGTERM);
    ::pause();
  }
  if (std::strcmp(mode, "fork") == 0) {
    // A DataLoader-style worker: no CUDA in the child, normal exit() there.
    pid_t child = ::fork();
    if (child == 0) {
      std::printf("child %d exiting\n", static_cast<int>(::getpid()));
      std::exit(0);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    std::printf("child status %d\n", status);
  }
  return 0;
}
