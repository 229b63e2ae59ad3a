// The calls in a source that is not part of the run, read from its text. A
// pre-commit hook lints the changed files only, and a library file's callers
// often sit in a file nobody changed (an example's main(), the engine that
// drives a worker): the helper that main() calls once, or that a loop
// elsewhere calls every step, is then known only from those files. Parsing
// them would cost what linting them costs; their text is enough to say which
// function calls which name, and whether the call sits in a loop, under an
// `if (step % N == 0)`, in main() or in a test.
#pragma once

#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace nosync::lint {

struct TextCallEdge {
  std::string caller;  // the unqualified name of the function the call is in
  std::string callee;  // the unqualified name called
  unsigned args = 0;   // the arguments it passes (a function taking fewer is not it)
  bool inLoop = false;     // in a for / while / do body of that function
  bool throttled = false;  // under an `if` whose condition takes a remainder
  bool callerIsMain = false;
  bool callerIsTest = false;  // a TEST / TEST_F / TEST_CASE body
  bool callerIsConstructor = false;  // a constructor's or destructor's body (runs once per object)
  std::string at;             // "file:line"
  // Who the call may reach (TextTypes.h decides with them): the object of a
  // member call (`problem` in `problem.Reset()`, `dps` in `dps[i]->compute()`,
  // "this"), the scope written before the name (`std` in `std::invoke(`), and
  // the class of the calling method (`Agent` for `void Agent::act() {` or a
  // body inside `class Agent {`); "" where there is none.
  std::string receiver;
  std::string qualifier;
  std::string callerClass;
};

/// Appends the calls of `code` (a source with its comments blanked) to `out`;
/// `file` names them in `at`. Text, not a parse: a call is a name followed by
/// `(`, or by template arguments and `(`, inside a function body; a function
/// body is the `{...}` after a parameter list outside any other body.
void collectTextCalls(llvm::StringRef code, llvm::StringRef file, std::vector<TextCallEdge>& out);

}  // namespace nosync::lint
