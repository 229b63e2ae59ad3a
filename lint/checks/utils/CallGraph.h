// How hot a function is, from how its call sites run, and how hot a statement
// is, from where it sits and how hot its function is. Header-only and free of
// the AST so that the same rules decide within one translation unit (the
// checks, keyed by FunctionDecl) and across a whole project (nosync-lint,
// keyed by a function's signature, from every unit's call edges).
#pragma once

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <iterator>
#include <string>
#include <vector>

namespace clang::tidy::nosync {

enum class ContextKind {
  InLoop,          // inside a loop body or loop condition
  CalledFromLoop,  // in a function (or lambda) that a loop calls
  Plain,           // nothing known: the catalog's default severity
  Throttled,       // under `if (step % N == 0)`: runs every N-th iteration
  TestCode,        // a GoogleTest/doctest/Catch2 test body
  OneOff,          // setup/teardown/export, main() outside its loops, or a
                   // loop in main() after the training loop (final evaluation)
  RarelyCalled,    // in a function whose every caller is throttled, test or
                   // one-off code (its loops included)
  CpuOnly,         // in a program (a unit with main()) that never uses CUDA
};

/// One call: who calls whom, and how the call site runs.
template <typename Fn, typename Site> struct CallEdge {
  Fn Caller;
  Fn Callee;
  bool InLoop;
  bool Throttled;
  bool CallerIsCold;  // the caller is a test, or named like setup/export, or the call is on a cold path (ColdPath.h)
  bool CallerRunsOnce;  // main(), or a training driver (a function that holds the training loop)
  Site At;            // the call, for explanations
  // Where each argument of the call is, one character per parameter of the
  // callee ('c' CPU, 'g' CUDA, '?' unknown or no tensor); empty when not
  // worked out. Only nosync-lint's project-wide pass fills and reads it.
  std::string ArgPlaces = {};
  // The call is in a loop that does not train, in a unit where something
  // trains: an evaluation or rendering pass, not the training loop.
  bool InEvalLoop = false;
};

template <typename Fn, typename Site> struct CallerHeat {
  llvm::DenseSet<Fn> Hot;           // called from a loop, directly or through hot code
  llvm::DenseSet<Fn> RarelyCalled;  // every call is throttled, test or one-off code
  llvm::DenseSet<Fn> CalledOnce;    // every call is straight-line code of main() or a training driver
  llvm::DenseMap<Fn, Site> DecidedBy;  // the call site that decided each of the above
};

/// Splits the callees of `Edges` by how their call sites run.
template <typename Fn, typename Site>
CallerHeat<Fn, Site> classifyCallers(const std::vector<CallEdge<Fn, Site>> &Edges) {
  using Edge = CallEdge<Fn, Site>;
  CallerHeat<Fn, Site> H;
  llvm::DenseMap<Fn, llvm::SmallVector<const Edge *, 4>> Incoming, Outgoing;
  for (const Edge &E : Edges) {
    Incoming[E.Callee].push_back(&E);
    Outgoing[E.Caller].push_back(&E);
  }

  // Runs once, whatever loops call what: every call is straight-line code (or
  // an evaluation loop) of main(), of a training driver or of another such
  // function. A loop there that does not train, in a program that trains, is
  // a one-off evaluation or rendering pass (TestImages() looping over the test
  // set after training): what it calls is not hot.
  llvm::DenseSet<Fn> Once;
  for (bool Changed = true; Changed;) {
    Changed = false;
    for (const auto &[Callee, In] : Incoming)
      if (!Once.contains(Callee) && llvm::all_of(In, [&](const Edge *E) {
            return (!E->InLoop || E->InEvalLoop) && (E->CallerRunsOnce || Once.contains(E->Caller));
          })) {
        Once.insert(Callee);
        Changed = true;
      }
  }
  auto OneOffPass = [&](const Edge &E) { return E.InEvalLoop && (E.CallerRunsOnce || Once.contains(E.Caller)); };
  // Hot: called from a loop that is neither throttled nor in rarely-run code
  // nor a one-off pass, or called (unthrottled) from hot code.
  llvm::SmallVector<Fn, 32> Work;
  for (const Edge &E : Edges)
    if (E.InLoop && !E.Throttled && !E.CallerIsCold && !OneOffPass(E) && H.Hot.insert(E.Callee).second) {
      Work.push_back(E.Callee);
      H.DecidedBy[E.Callee] = E.At;
    }
  while (!Work.empty()) {
    Fn F = Work.pop_back_val();
    for (const Edge *E : Outgoing.lookup(F))
      if (!E->Throttled && H.Hot.insert(E->Callee).second) {
        Work.push_back(E->Callee);
        H.DecidedBy[E->Callee] = E->At;
      }
  }

  // RarelyCalled: every call site is throttled, in a test or in setup code,
  // or in another rarely-called function; loops inside them too.
  // CalledOnce: every call site is straight-line code of main(), of a training
  // driver or of another called-once function; their straight-line code runs
  // once.
  auto Fixpoint = [&](llvm::DenseSet<Fn> &Set, auto EdgeQualifies) {
    for (bool Changed = true; Changed;) {
      Changed = false;
      for (const auto &[Callee, In] : Incoming) {
        if (H.Hot.contains(Callee) || Set.contains(Callee))
          continue;
        if (llvm::all_of(In, EdgeQualifies) && Set.insert(Callee).second) {
          Changed = true;
          H.DecidedBy.try_emplace(Callee, In.front()->At);
        }
      }
    }
  };
  auto RareEdge = [&](const Edge *E) {
    return E->Throttled || E->CallerIsCold || H.RarelyCalled.contains(E->Caller);
  };
  Fixpoint(H.RarelyCalled, RareEdge);
  Fixpoint(H.CalledOnce, [&](const Edge *E) {
    return RareEdge(E) || ((!E->InLoop || OneOffPass(*E)) && (E->CallerRunsOnce || H.CalledOnce.contains(E->Caller)));
  });
  return H;
}

/// What a statement's own surroundings say, before its function's callers
/// are known.
struct LocalContext {
  bool InTest = false;           // in a test body
  bool Throttled = false;        // under `if (step % N == 0)`
  bool OneOffName = false;       // its function is a constructor, or named setup/export
  bool InLoop = false;           // in a loop of its own function
  bool AfterTraining = false;    // that loop follows the training loop in its block
  bool InMain = false;           // its function is main()
  bool InDriver = false;         // its function holds the training loop (a training driver)
  bool InHotLambda = false;      // in a lambda that a loop calls
  bool CpuOnlyProgram = false;   // its unit has main() and never names a CUDA device
  bool StaticInit = false;       // in the initializer of a static or global variable
  bool CapturesGraph = false;    // its function captures a CUDA graph (once per graph, however it is called)
  bool InEvalLoop = false;       // that loop does not train, in a unit where something trains
  bool InPassLoop = false;       // that loop does not train (nosync-lint adds: in a run where something trains)
  bool FailurePath = false;      // runs only when a check fails: a throw's or [[noreturn]] call's argument (ColdPath.h)
  bool DebugLog = false;         // runs only at a debug or verbose log level (ColdPath.h)
  bool DeadBranch = false;       // in a branch the build never takes (ColdPath.h)
  bool LazyInit = false;         // in `if (!ready_) { ready_ = true; .. }` of a member or global flag (ColdPath.h)
};

/// The facts as 0/1 characters, for nosync-lint's project-wide pass.
inline std::string encodeLocal(const LocalContext &L) {
  std::string S;
  for (bool B : {L.InTest, L.Throttled, L.OneOffName, L.InLoop, L.AfterTraining, L.InMain, L.InDriver,
                 L.InHotLambda, L.CpuOnlyProgram, L.StaticInit, L.CapturesGraph, L.InEvalLoop, L.InPassLoop,
                 L.FailurePath, L.DebugLog, L.DeadBranch, L.LazyInit})
    S.push_back(B ? '1' : '0');
  return S;
}

inline bool decodeLocal(const std::string &S, LocalContext &L) {
  bool *Fields[] = {&L.InTest,   &L.Throttled,   &L.OneOffName,     &L.InLoop,     &L.AfterTraining, &L.InMain,
                    &L.InDriver, &L.InHotLambda, &L.CpuOnlyProgram, &L.StaticInit, &L.CapturesGraph,
                    &L.InEvalLoop, &L.InPassLoop, &L.FailurePath, &L.DebugLog, &L.DeadBranch, &L.LazyInit};
  if (S.size() != std::size(Fields) || S.find_first_not_of("01") != std::string::npos)
    return false;
  for (size_t I = 0; I < std::size(Fields); ++I)
    *Fields[I] = S[I] == '1';
  return true;
}

/// Why code is one-off, in a few words (see decideContext).
inline const char *oneOffWhy(const LocalContext &L) {
  if (L.FailurePath)
    return "on a failure path (it runs only when a check fails and the code throws or aborts)";
  if (L.DebugLog)
    return "debug logging (it runs only at a debug or verbose log level)";
  if (L.DeadBranch)
    return "a branch whose condition is fixed the other way in this build (`if (DEBUG)` with DEBUG false)";
  if (L.LazyInit)
    return "lazy one-time initialization (the branch sets the member or global flag its condition tests, so it "
           "runs once per object or program)";
  if (L.StaticInit)
    return "the initializer of a static variable (it runs once)";
  if (L.CapturesGraph)
    return "a CUDA-graph capture (it runs once per graph; the replay is what runs every step)";
  if (L.OneOffName)
    return "a constructor or destructor, or named like setup, teardown or export";
  if (L.InLoop)
    return L.AfterTraining ? "a loop after the training loop (the final evaluation)"
                           : "a loop that does not train, in code that runs once (an evaluation or rendering pass)";
  if (L.InMain)
    return "main() outside its loops";
  if (L.InDriver)
    return "outside the training loop of the function that holds it (it runs once, like main())";
  return "called once, from straight-line code of main() or of the function that holds the training loop";
}

/// The context of a statement, given what its function's callers say.
inline ContextKind decideContext(const LocalContext &L, bool FnHot, bool FnRarelyCalled, bool FnCalledOnce) {
  bool Hot = L.InHotLambda || FnHot;
  if (L.CpuOnlyProgram)
    return ContextKind::CpuOnly;
  if (L.InTest)
    return ContextKind::TestCode;
  if (L.StaticInit || L.CapturesGraph || L.FailurePath || L.DebugLog || L.DeadBranch || L.LazyInit)
    return ContextKind::OneOff;
  if (L.Throttled)
    return ContextKind::Throttled;
  if (!Hot && L.OneOffName)
    return ContextKind::OneOff;  // loops inside run once too
  if (!Hot && FnRarelyCalled)
    return ContextKind::RarelyCalled;
  // main(), a function every call of which runs once, and a training driver
  // that no loop is seen calling.
  bool RunsOnce = L.InMain || FnCalledOnce || (L.InDriver && !Hot);
  if (L.InLoop && (L.AfterTraining || L.InEvalLoop) && RunsOnce)
    return ContextKind::OneOff;  // the final evaluation after training, a one-off test or render pass
  if (L.InLoop)
    return ContextKind::InLoop;
  if (Hot)
    return ContextKind::CalledFromLoop;
  if (RunsOnce)
    return ContextKind::OneOff;  // straight-line code that runs once
  return ContextKind::Plain;
}

/// A short phrase for a diagnostic, e.g. "inside a loop"; "" for Plain.
inline std::string describeContext(ContextKind K, const std::string &FnName) {
  switch (K) {
  case ContextKind::InLoop:
    return "inside a loop";
  case ContextKind::CalledFromLoop:
    return FnName.empty() ? "in code called from a loop" : "in '" + FnName + "', which is called from a loop";
  case ContextKind::Throttled:
    return "in throttled code (runs every N-th iteration)";
  case ContextKind::TestCode:
    return "in test code";
  case ContextKind::OneOff:
    return "in one-off setup/export code";
  case ContextKind::RarelyCalled:
    return "in code called only from throttled, test or one-off code";
  case ContextKind::CpuOnly:
    return "in a program that never uses CUDA";
  case ContextKind::Plain:
    return "";
  }
  return "";
}

/// What decided a context, in one sentence: `At` is the deciding place
/// ("train.cpp:42", or ""), `Why` a few words for one-off code.
inline std::string explainContext(ContextKind K, const std::string &FnName, const std::string &At,
                                  const std::string &Why) {
  std::string Fn = FnName.empty() ? std::string("this code") : "'" + FnName + "'";
  auto Where = [&](const std::string &What) { return At.empty() ? What : What + " at " + At; };
  switch (K) {
  case ContextKind::InLoop:
    return Where("in the loop") + ": runs every iteration";
  case ContextKind::CalledFromLoop:
    return Fn + " is called from a loop" + (At.empty() ? "" : " (call at " + At + ")") + ": runs every iteration of it";
  case ContextKind::Throttled:
    return Where("under the throttle") + ": runs every N-th iteration";
  case ContextKind::TestCode:
    return "in test code" + (FnName.empty() ? std::string() : " (" + Fn + ")");
  case ContextKind::OneOff:
    return "one-off code: " + Why + (At.empty() ? "" : " (" + At + ")");
  case ContextKind::RarelyCalled:
    return Fn + " is called only from throttled, test or one-off code" + (At.empty() ? "" : " (e.g. at " + At + ")");
  case ContextKind::CpuOnly:
    return "its translation unit has main() and names no CUDA device, .cuda() or CUDA API anywhere in user code";
  case ContextKind::Plain:
    return "no loop around it and no caller of " + Fn + " seen";
  }
  return "";
}

inline bool isLowSeverityContext(ContextKind K) {
  return K == ContextKind::Throttled || K == ContextKind::TestCode || K == ContextKind::OneOff ||
         K == ContextKind::RarelyCalled || K == ContextKind::CpuOnly;
}

}  // namespace clang::tidy::nosync
