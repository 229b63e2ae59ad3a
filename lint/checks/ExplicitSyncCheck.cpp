#include "ExplicitSyncCheck.h"

#include "utils/TorchMatchers.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/ExprCXX.h"
#include "clang/ASTMatchers/ASTMatchFinder.h"

using namespace clang::ast_matchers;

namespace clang::tidy::nosync {
namespace {

constexpr const char *kDeviceAdvice =
    "remove it: the caching allocator and stream order already make later work safe; if it is there "
    "for timing, time with CUDA events (cudaEventRecord + cudaEventElapsedTime) and read them once "
    "outside the loop";
constexpr const char *kStreamAdvice =
    "order the streams on the device instead: record an event on the producing stream and make the "
    "consuming stream wait for it (cudaStreamWaitEvent, or CUDAEvent::block(stream)); the host never "
    "blocks";

// "CUDAStream::synchronize", "torch::cuda::synchronize", "cudaDeviceSynchronize".
std::string displayName(const FunctionDecl *F) {
  if (const auto *M = dyn_cast<CXXMethodDecl>(F))
    return M->getParent()->getName().str() + "::" + M->getName().str();
  return F->getQualifiedNameAsString();
}

}  // namespace

ExplicitSyncCheck::ExplicitSyncCheck(StringRef Name, ClangTidyContext *Context)
    : RuleCheck(Name, Context, ::nosync::rules::RuleId::ExplicitSync) {}

void ExplicitSyncCheck::registerMatchers(MatchFinder *Finder) {
  auto DeviceWide = functionDecl(hasAnyName(
      "::torch::cuda::synchronize", "::at::cuda::device_synchronize", "::c10::cuda::device_synchronize",
      "::cudaDeviceSynchronize", "::cudaThreadSynchronize", "::cuCtxSynchronize"));
  auto StreamOrEvent = functionDecl(hasAnyName(
      "::c10::cuda::stream_synchronize", "::at::cuda::stream_synchronize", "::cudaStreamSynchronize",
      "::cudaEventSynchronize", "::cuStreamSynchronize", "::cuEventSynchronize"));
  auto SyncMethod = cxxMethodDecl(
      hasName("synchronize"),
      ofClass(cxxRecordDecl(hasAnyName("::c10::cuda::CUDAStream", "::at::cuda::CUDAEvent", "::c10::Stream",
                                       "::c10::Event"))));
  Finder->addMatcher(callExpr(callee(DeviceWide)).bind("device"), this);
  Finder->addMatcher(callExpr(callee(functionDecl(anyOf(StreamOrEvent, SyncMethod)))).bind("stream"), this);
}

void ExplicitSyncCheck::check(const MatchFinder::MatchResult &Result) {
  const auto *Device = Result.Nodes.getNodeAs<CallExpr>("device");
  const CallExpr *Call = Device ? Device : Result.Nodes.getNodeAs<CallExpr>("stream");
  const FunctionDecl *Callee = Call->getDirectCallee();
  Finding F;
  F.Site = Call;
  F.Loc = callNameLoc(Call);
  F.What = "'" + displayName(Callee) + "()'";
  F.Advice = Device ? kDeviceAdvice : kStreamAdvice;
  report(std::move(F), *Result.Context);
}

}  // namespace clang::tidy::nosync
