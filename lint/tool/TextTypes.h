// What a project's text says about its types, for the calls read from text
// (TextCalls.h): a text call names a method by its name only, and names such
// as Predict, Reset, train or compute belong to many classes. The classes the
// project defines, with their bases, and the type each variable or member was
// declared with tell `segmentor_.Predict()` (a Segmentor) from a call of
// Detector::Predict, without parsing anything.
#pragma once

#include "llvm/ADT/StringRef.h"

#include <map>
#include <set>
#include <string>

namespace nosync::lint {

struct TextTypes {
  /// Every class or struct the text defines, with the names of its direct
  /// bases (last component, template arguments dropped).
  std::map<std::string, std::set<std::string>, std::less<>> bases;
  /// For each variable, parameter or member name, the type names it was
  /// declared with anywhere (`Segmentor segmentor_;` -> Segmentor; the
  /// element type for `std::vector<std::shared_ptr<Backend>> dps;`).
  std::map<std::string, std::set<std::string>, std::less<>> declared;
  /// The same, per file ("src/ppo.h"): a name declared in the file that
  /// uses it means that declaration (`env_` of this class, not of another).
  std::map<std::string, std::map<std::string, std::set<std::string>, std::less<>>, std::less<>> declaredIn;

  bool isClass(llvm::StringRef name) const { return bases.count(name) > 0; }
  /// The types `name` was declared with, as `file` sees it; null if none.
  const std::set<std::string>* typesOf(llvm::StringRef name, llvm::StringRef file) const;
  /// `a` and `b` are the same class or one derives from the other.
  bool related(llvm::StringRef a, llvm::StringRef b) const;
};

/// Adds what `code` (a source with its comments blanked) defines and
/// declares; `file` names it as TextCallEdge::at does.
void collectTextTypes(llvm::StringRef code, llvm::StringRef file, TextTypes& out);

}  // namespace nosync::lint
