#include "ProjectContext.h"

#include "Finding.h"
#include "utils/SyncContext.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Allocator.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/StringSaver.h"

#include <map>
#include <optional>
#include <set>
#include <tuple>

namespace nosync::lint {
namespace {

using clang::tidy::nosync::CallEdge;
using clang::tidy::nosync::ContextKind;
using clang::tidy::nosync::LocalContext;
using Edge = CallEdge<llvm::StringRef, llvm::StringRef>;

// What a check wrote after " || " in its context note (RuleCheck::emit).
struct Facts {
  std::string fn, name, what, severity, lowMode;
  // The parameter that places the finding's tensor, and where every caller
  // would have to put it for no sync ('c' / 'g'); empty when none does.
  std::string placingFn;
  unsigned placingIndex = 0;
  char quietOn = 0;
  // Else: the parameters (function, index) whose every caller would have to
  // pass a host tensor for the finding's tensor to be on the CPU.
  std::vector<std::pair<std::string, unsigned>> assumed;
  LocalContext local;
  ContextKind kind = ContextKind::Plain;
};

constexpr llvm::StringLiteral kFactsSeparator = " || ";

std::optional<Facts> parseFacts(llvm::StringRef note) {
  size_t at = note.find(kFactsSeparator);
  if (at == llvm::StringRef::npos) return std::nullopt;
  llvm::SmallVector<llvm::StringRef> fields;
  note.drop_front(at + kFactsSeparator.size()).split(fields, '\t');
  Facts f;
  bool haveLocal = false, haveKind = false;
  for (llvm::StringRef field : fields) {
    auto [key, value] = field.split('=');
    if (key == "fn") f.fn = value.str();
    else if (key == "name") f.name = value.str();
    else if (key == "what") f.what = value.str();
    else if (key == "sev") f.severity = value.str();
    else if (key == "low") f.lowMode = value.lower();
    else if (key == "pfn") f.placingFn = value.str();
    else if (key == "pidx") value.getAsInteger(10, f.placingIndex);
    else if (key == "quiet" && value.size() == 1) f.quietOn = value[0];
    else if (key == "assume") {
      auto [function, index] = value.rsplit('#');
      unsigned i;
      if (!index.getAsInteger(10, i)) f.assumed.emplace_back(function.str(), i);
    }
    else if (key == "local") haveLocal = clang::tidy::nosync::decodeLocal(value.str(), f.local);
    else if (key == "kind") {
      unsigned k;
      haveKind = !value.getAsInteger(10, k) && k <= static_cast<unsigned>(ContextKind::CpuOnly);
      if (haveKind) f.kind = static_cast<ContextKind>(k);
    }
  }
  if (!haveLocal || !haveKind || f.fn.empty() || f.what.empty()) return std::nullopt;
  return f;
}

// The level RuleCheck gives a finding of this context (nullopt: silenced).
std::optional<clang::tooling::Diagnostic::Level> levelFor(ContextKind kind, const Facts& f) {
  using Level = clang::tooling::Diagnostic::Level;
  // As RuleCheck decides, with `error` raised as raiseConfiguredErrors does.
  Level configured = f.severity == "error" ? Level::Error : f.severity == "note" ? Level::Remark : Level::Warning;
  bool low = clang::tidy::nosync::isLowSeverityContext(kind);
  if (!low || f.lowMode == "warning") return configured;
  if (f.lowMode == "silent" || f.lowMode == "none" || f.lowMode == "off") return std::nullopt;
  return Level::Remark;
}

// "'item()' inside a loop: <summary>; <fix>" with the context phrase replaced.
std::string withContext(const std::string& message, const Facts& f, ContextKind now) {
  std::string before = clang::tidy::nosync::describeContext(f.kind, f.name);
  std::string after = clang::tidy::nosync::describeContext(now, f.name);
  std::string oldPrefix = f.what + (before.empty() ? "" : " " + before) + ": ";
  if (llvm::StringRef(message).starts_with(oldPrefix))
    return f.what + (after.empty() ? "" : " " + after) + ": " + message.substr(oldPrefix.size());
  return message;
}

// Where the arguments of every call of a function are, per call
// (argumentPlacements in lint/checks/utils/Placement.h).
using ArgumentPlaces = llvm::StringMap<std::vector<std::string>>;

// Whether the run calls `function` and every call puts its argument `index`
// on `placement`.
bool everyCallPasses(const ArgumentPlaces& places, llvm::StringRef function, unsigned index, char placement) {
  auto it = places.find(function);
  return it != places.end() && !it->second.empty() && llvm::all_of(it->second, [&](const std::string& call) {
    return index < call.size() && call[index] == placement;
  });
}

// Whether every call of the run places the finding's tensor where it does
// not sync (a print helper every caller hands `.cpu()` results): then the
// checks, had they seen the callers, would have reported nothing.
bool placedQuietByCallers(const Facts& f, const ArgumentPlaces& places) {
  if (!f.quietOn) return false;
  if (!f.placingFn.empty()) return everyCallPasses(places, f.placingFn, f.placingIndex, f.quietOn);
  return !f.assumed.empty() && llvm::all_of(f.assumed, [&](const auto& parameter) {
    return everyCallPasses(places, parameter.first, parameter.second, f.quietOn);
  });
}

// "update" for "ppo::Agent::update(at::Tensor &)": what a call in a source
// read as text (TextCalls.h) names.
llvm::StringRef unqualifiedName(llvm::StringRef key) {
  llvm::StringRef name = key.take_until([](char c) { return c == '(' || c == '<'; });
  size_t colons = name.rfind("::");
  return colons == llvm::StringRef::npos ? name : name.drop_front(colons + 2);
}

// The parameters of a function key's list (the last `(...)` of the key;
// template arguments and function types inside it keep their commas), or
// nullopt where the key has none (a lambda's place).
std::optional<unsigned> parameterCount(llvm::StringRef key) {
  if (!key.ends_with(")")) return std::nullopt;
  int depth = 0;
  unsigned commas = 0;
  for (size_t i = key.size(); i-- > 0;) {
    char c = key[i];
    if (c == ')' || c == '>') ++depth;
    if (c == '(' || c == '<') --depth;
    if (depth == 0) return i + 2 == key.size() ? 0 : commas + 1;
    commas += depth == 1 && c == ',';
  }
  return std::nullopt;
}

// "Detector" for "mrcv::Detector::Predict(cv::Mat)", "ppo" for
// "ppo::update(at::Tensor &)": the scope a function key names last (a class
// or a namespace; template arguments dropped), "" for none.
std::string ownerOf(llvm::StringRef key) {
  std::string name;
  int angle = 0;
  for (char c : key.take_until([](char c) { return c == '('; })) {
    angle += (c == '<') - (c == '>');
    if (angle == 0 && c != '>') name.push_back(c);
  }
  llvm::StringRef scope = llvm::StringRef(name).rsplit("::").first;
  if (scope == name) return "";
  size_t colons = scope.rfind("::");
  return (colons == llvm::StringRef::npos ? scope : scope.drop_front(colons + 2)).str();
}

// Whether a text call may reach the function of `key`, by what the project's
// text says of types: `std::invoke(` reaches no project function,
// `segmentor_.Predict()` with `Segmentor segmentor_;` no Detector::Predict, an
// unqualified `train()` in a method of SimSearch no TorchLib::train. Where a
// type is not known (auto, a template parameter, a typedef), it may.
bool mayReach(const TextCallEdge& c, llvm::StringRef key, const TextTypes& types) {
  if (key.starts_with("text:")) return true;  // a name the run does not define: a link of a text chain
  std::string owner = ownerOf(key);
  if (!c.qualifier.empty()) return c.qualifier == owner || types.related(c.qualifier, owner);
  if (!types.isClass(owner)) return true;
  if (!c.receiver.empty() && c.receiver != "this") {
    const std::set<std::string>* declared = types.typesOf(c.receiver, llvm::StringRef(c.at).rsplit(':').first);
    if (!declared) return true;
    bool allClasses = true;
    for (const std::string& t : *declared) {
      if (types.related(t, owner)) return true;
      allClasses = allClasses && types.isClass(t);
    }
    return !allClasses;
  }
  return c.callerClass.empty() || !types.isClass(c.callerClass) || types.related(c.callerClass, owner);
}

// The calls of the project's sources outside the run, as edges between the
// run's functions of the called names (every function of that name the call
// may reach: text cannot tell overloads apart, and knows a class only where
// the project's text declares it, see mayReach) and, where the run has none, the
// name itself ("text:<name>"), so that a chain through several such files
// still reaches the run. A call passing more arguments than a function
// takes is not a call of it (default arguments may make it take fewer).
void addTextEdges(const std::vector<TextCallEdge>& calls, llvm::ArrayRef<llvm::StringRef> findingFunctions,
                  const TextTypes& types, std::vector<Edge>& edges, llvm::UniqueStringSaver& strings,
                  llvm::StringSet<>& textSites) {
  llvm::StringMap<llvm::SmallVector<llvm::StringRef, 2>> byName;
  llvm::DenseSet<llvm::StringRef> keys;
  // Constructors and functions named like setup are one-off whoever calls
  // them, and their names (Initialize, LoadState, a class's name) are the ones
  // text most often finds for another class: no text edge reaches them.
  auto add = [&](llvm::StringRef k) {
    if (!keys.insert(k).second) return;
    llvm::StringRef name = unqualifiedName(k);
    llvm::StringRef scope = k.take_until([](char c) { return c == '(' || c == '<'; });
    bool constructor = scope.ends_with("::" + name.str() + "::" + name.str()) || scope == name.str() + "::" + name.str();
    if (!constructor && !name.starts_with("~") && !clang::tidy::nosync::isOneOffName(name))
      byName[name].push_back(k);
  };
  // Only functions that call something or hold a finding: a callee that is
  // neither (a library's clip_grad_norm_) passes no heat on, and a text call
  // of its name would chain through it to an unrelated caller.
  for (const Edge& e : edges) add(e.Caller);
  for (llvm::StringRef k : findingFunctions) add(k);
  // The run's functions of `name` that `fits`, else the name itself: a
  // function of another class (or none of the run's) that text alone knows.
  auto keysOf = [&](const std::string& name, auto fits) {
    llvm::SmallVector<llvm::StringRef, 2> out;
    auto it = byName.find(name);
    if (it != byName.end()) llvm::copy_if(it->second, std::back_inserter(out), fits);
    if (out.empty()) out.push_back(strings.save("text:" + name));
    return out;
  };
  auto takes = [](llvm::StringRef key, unsigned args) {
    std::optional<unsigned> params = parameterCount(key);
    return !params || args <= *params;
  };
  for (const TextCallEdge& c : calls) {
    llvm::StringRef at = strings.save(c.at);
    textSites.insert(at);
    // As in the AST (SyncContext.cpp, throttles): a remainder test that picks
    // the steps the model trains on is the training itself, no throttle.
    bool throttled = c.throttled && !clang::tidy::nosync::isTrainingUpdateName(c.callee);
    // The call is in ExperimentRunner::run(): not in HedgingEngine::run(), a
    // function of the run of the same name in a class the text tells apart.
    auto isCaller = [&](llvm::StringRef key) {
      std::string owner = ownerOf(key);
      return c.callerClass.empty() || !types.isClass(c.callerClass) || c.callerClass == owner ||
             types.related(c.callerClass, owner);
    };
    auto isCallee = [&](llvm::StringRef key) { return takes(key, c.args) && mayReach(c, key, types); };
    for (llvm::StringRef caller : keysOf(c.caller, isCaller))
      for (llvm::StringRef callee : keysOf(c.callee, isCallee))
        edges.push_back(
            Edge{caller, callee, c.inLoop, throttled, c.callerIsTest || c.callerIsConstructor, c.callerIsMain, at});
  }
}

// The (caller, callee) names of the calls the run's units parsed.
using NamePairs = std::set<std::pair<llvm::StringRef, llvm::StringRef>>;
NamePairs parsedCalls(const std::vector<Edge>& edges) {
  NamePairs parsed;
  for (const Edge& e : edges) parsed.insert({unqualifiedName(e.Caller), unqualifiedName(e.Callee)});
  return parsed;
}

// The calls of the run's units that parsed with errors, read from their
// text, where their parse lost them: a call whose declaration named a type
// of a header that was not found (`void test(po::variables_map&, ...)` with
// Boost missing) is no call in the AST, though main() makes it. A call the
// AST kept (the same caller and callee names) is not read twice.
std::vector<TextCallEdge> callsLostToErrors(const std::vector<TuResult>& results, const NamePairs& parsed,
                                            llvm::StringRef root) {
  std::vector<TextCallEdge> lost;
  for (const TuResult& tu : results) {
    if (tu.compilerErrors() == 0) continue;
    auto buffer = llvm::MemoryBuffer::getFile(tu.file);
    if (!buffer) continue;
    llvm::StringRef name(tu.file);
    if (!root.empty() && name.starts_with(root)) name = name.drop_front(root.size()).ltrim("/\\");
    std::vector<TextCallEdge> calls;
    collectTextCalls(codeWithoutComments((*buffer)->getBuffer()), name, calls);
    for (TextCallEdge& c : calls)
      if (!parsed.count({c.caller, c.callee})) lost.push_back(std::move(c));
  }
  return lost;
}

// Whether the program a unit belongs to trains. A unit with main() that does
// not train is a program of its own (an inference or probe tool beside the
// trainer), whose loops are its workload, unless its calls reach a function
// defined in a unit that trains and has no main() (the trainer library it
// drives). Functions the unit defines itself (a shared header's) do not
// count. A unit without main() belongs to whichever program calls it: then
// any unit of the run that trains decides. The call graph is built once per
// run, and only when some unit needs it.
class ProgramTraining {
public:
  ProgramTraining(const std::vector<TuResult>& results, bool runTrains) : runTrains_(runTrains) {
    for (const TuResult& r : results)
      if (r.trains && !r.hasMain)
        for (const ExportedCall& c : r.calls) library_.insert(c.Caller);
    if (library_.empty() || llvm::none_of(results, [](const TuResult& r) { return r.hasMain && !r.trains; }))
      return;
    for (const TuResult& r : results)
      for (const ExportedCall& c : r.calls) callees_[c.Caller].push_back(c.Callee);
  }

  bool trains(const TuResult& tu) const {
    if (!tu.hasMain || tu.trains) return runTrains_;
    llvm::StringSet<> own;
    for (const ExportedCall& c : tu.calls) own.insert(c.Caller);
    llvm::SmallVector<llvm::StringRef, 32> work(own.keys().begin(), own.keys().end());
    llvm::StringSet<> seen = own;
    while (!work.empty()) {
      llvm::StringRef f = work.pop_back_val();
      if (library_.contains(f) && !own.contains(f)) return true;
      for (llvm::StringRef g : callees_.lookup(f))
        if (seen.insert(g).second) work.push_back(g);
    }
    return false;
  }

private:
  bool runTrains_;
  llvm::StringSet<> library_;  // functions of units that train and have no main()
  llvm::StringMap<llvm::SmallVector<llvm::StringRef, 4>> callees_;
};

// "ns::f" and 2 for the key "ns::f(int,class std::map<int, int> &)": the
// name before the parameter list and how many parameters it has.
std::pair<llvm::StringRef, unsigned> nameAndArity(llvm::StringRef key) {
  size_t open = key.find('(');
  if (open == llvm::StringRef::npos) return {key, 0};
  llvm::StringRef params = key.drop_front(open + 1);
  unsigned arity = params.starts_with(")") ? 0 : 1;
  int depth = 0;
  for (char c : params) {
    if (c == '(' || c == '<') ++depth;
    else if ((c == ')' || c == '>') && depth > 0) --depth;
    else if (c == ')') break;
    else if (c == ',' && depth == 0) ++arity;
  }
  return {key.take_front(open), arity};
}

// The callees of a run's edges, and the same grouped by name and arity
// (nameAndArity), built once for calledNamesake.
struct CalleeIndex {
  llvm::DenseSet<llvm::StringRef> all;
  std::map<std::pair<llvm::StringRef, unsigned>, llvm::SmallVector<llvm::StringRef, 2>> byNameAndArity;

  explicit CalleeIndex(const std::vector<Edge>& edges) {
    for (const Edge& e : edges)
      if (all.insert(e.Callee).second) byNameAndArity[nameAndArity(e.Callee)].push_back(e.Callee);
  }
};

// A function whose declaration did not compile in one unit (a parameter of a
// type from a header that unit did not find reads `int` there) has another
// key in that unit than in one that compiled it: `estimateLoss(int, ...)` in
// a header linted alone, `estimateLoss(TransformerModel, ...)` in the program
// that includes it, which also holds the calls. For a finding's function that
// no edge calls, the namesakes with as many parameters that edges do call
// stand for it, when the callers say the same of them all (two overloads
// both read `f(int)`); none otherwise.
template <typename Heat>
std::optional<llvm::StringRef> calledNamesake(llvm::StringRef fn, const CalleeIndex& callees, const Heat& heat) {
  if (callees.all.contains(fn)) return std::nullopt;
  auto it = callees.byNameAndArity.find(nameAndArity(fn));
  if (it == callees.byNameAndArity.end()) return std::nullopt;
  auto said = [&](llvm::StringRef key) {
    return std::make_tuple(heat.Hot.contains(key), heat.RarelyCalled.contains(key), heat.CalledOnce.contains(key));
  };
  const llvm::SmallVector<llvm::StringRef, 2>& namesakes = it->second;
  if (!llvm::all_of(namesakes, [&](llvm::StringRef key) { return said(key) == said(namesakes.front()); }))
    return std::nullopt;
  return namesakes.front();
}

}  // namespace

unsigned applyProjectContext(std::vector<TuResult>& results, const ProjectSources& sources) {
  // The run's own units decide when they hold main() and none names CUDA;
  // else the project's other sources may say it is a CPU program (a library
  // file linted alone, whose main() is elsewhere).
  bool runIsCpuProgram = llvm::any_of(results, [](const TuResult& tu) { return tu.hasMain; }) &&
                         llvm::none_of(results, [](const TuResult& tu) { return tu.namesCuda; });
  bool projectIsCpuProgram =
      sources.isCpuProgram() && llvm::none_of(results, [](const TuResult& tu) { return tu.namesCuda; });
  bool cpuProgram = runIsCpuProgram || projectIsCpuProgram;
  // A loop that does not train, in a function called once, is an evaluation
  // pass when its program trains (ProgramTraining), whichever unit holds it.
  bool runTrains = llvm::any_of(results, [](const TuResult& tu) { return tu.trains; });
  // One unit and no other source: the checks saw every caller there is.
  if (results.size() < 2 && !projectIsCpuProgram && sources.textCalls.empty() &&
      llvm::none_of(results, [](const TuResult& tu) { return tu.parseFailed(); }))
    return 0;
  llvm::BumpPtrAllocator arena;
  llvm::UniqueStringSaver strings(arena);
  std::vector<Edge> edges;
  std::set<std::tuple<llvm::StringRef, llvm::StringRef, bool, bool, bool, bool, bool>> seen;
  for (const TuResult& tu : results)
    for (const ExportedCall& c : tu.calls) {
      Edge e{strings.save(c.Caller), strings.save(c.Callee), c.InLoop, c.Throttled, c.CallerIsCold,
             c.CallerRunsOnce, strings.save(c.At)};
      e.InEvalLoop = c.InEvalLoop;
      // A header included by several units contributes its calls once.
      if (seen.insert({e.Caller, e.Callee, e.InLoop, e.Throttled, e.CallerIsCold, e.CallerRunsOnce, e.InEvalLoop})
              .second)
        edges.push_back(e);
    }
  NamePairs parsed = parsedCalls(edges);
  std::vector<TextCallEdge> textCalls = callsLostToErrors(results, parsed, sources.root);
  // A header the run's units include is read as a project source too: its
  // calls that the AST holds already (the same names) are not read again,
  // with a heat text cannot know (a constructor's call of load()).
  for (const TextCallEdge& c : sources.textCalls)
    if (!parsed.count({c.caller, c.callee})) textCalls.push_back(c);
  llvm::StringSet<> textSites;
  if (!textCalls.empty()) {
    std::vector<llvm::StringRef> findingFunctions;
    for (const TuResult& tu : results)
      for (const auto& e : tu.errors) {
        auto note = llvm::find_if(e.Notes, isContextNote);
        if (note == e.Notes.end()) continue;
        if (std::optional<Facts> f = parseFacts(note->Message)) findingFunctions.push_back(strings.save(f->fn));
      }
    addTextEdges(textCalls, findingFunctions, sources.types, edges, strings, textSites);
  }
  auto heat = clang::tidy::nosync::classifyCallers(edges);
  CalleeIndex callees(edges);
  ArgumentPlaces places;
  for (const TuResult& tu : results)
    for (const ExportedCall& c : tu.calls) places[c.Callee].push_back(c.ArgPlaces);

  ProgramTraining programs(results, runTrains);
  unsigned changed = 0;
  for (TuResult& tu : results) {
    bool trains = programs.trains(tu);
    // Counted before the loop below moves the diagnostics out.
    bool hadErrors = tu.compilerErrors() > 0;
    std::vector<clang::tidy::ClangTidyError> kept;
    for (auto& e : tu.errors) {
      auto note = llvm::find_if(e.Notes, isContextNote);
      std::optional<Facts> f = note == e.Notes.end() ? std::nullopt : parseFacts(note->Message);
      if (!f) {
        kept.push_back(std::move(e));
        continue;
      }
      if (placedQuietByCallers(*f, places)) {
        ++changed;  // as in one file: no finding
        continue;
      }
      llvm::StringRef fn = f->fn;
      if (hadErrors)
        if (std::optional<llvm::StringRef> namesake = calledNamesake(fn, callees, heat)) fn = *namesake;
      // The run decides: a unit with main() and no CUDA of its own is no CPU
      // program when another unit of the run names CUDA.
      f->local.CpuOnlyProgram = cpuProgram;
      f->local.InEvalLoop = f->local.InEvalLoop || (trains && f->local.InPassLoop);
      ContextKind now = clang::tidy::nosync::decideContext(f->local, heat.Hot.contains(fn),
                                                           heat.RarelyCalled.contains(fn), heat.CalledOnce.contains(fn));
      if (now == f->kind) {
        kept.push_back(std::move(e));
        continue;
      }
      ++changed;
      std::optional<clang::tooling::Diagnostic::Level> level = levelFor(now, *f);
      if (!level) continue;  // LowSeverity=silent
      e.DiagLevel = *level;
      e.Message.Message = withContext(e.Message.Message, *f, now);
      std::string at = heat.DecidedBy.lookup(fn).str();
      std::string facts = note->Message.substr(note->Message.find(kFactsSeparator));
      std::string why = now == ContextKind::CpuOnly
                            ? runIsCpuProgram
                                  ? "no file of this run names a CUDA device, .cuda() or CUDA API in user code"
                                  : "no C/C++ source of the project (" + sources.root + ", " +
                                        std::to_string(sources.files) +
                                        " files) names CUDA or picks a device at run time, and one defines main()"
                            : clang::tidy::nosync::explainContext(now, f->name, at,
                                                                  clang::tidy::nosync::oneOffWhy(f->local)) +
                                  (textSites.contains(at)
                                       ? " (decided with callers read from the project's source text)"
                                       : " (decided with the callers in every file of this run)");
      note->Message = (kContextNotePrefix + why + facts).str();
      kept.push_back(std::move(e));
    }
    tu.errors = std::move(kept);
  }
  return changed;
}

}  // namespace nosync::lint
