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

  bool isClass(llvm::StringRef name) const { return bases.count(name) > 0; }
  /// `a` and `b` are the same class or one derives from the other.
  bool related(llvm::StringRef a, llvm::StringRef b) const;
};

/// Adds what `code` (a source with its comments blanked) defines and declares.
void collectTextTypes(llvm::StringRef code, TextTypes& out);

}  // namespace nosync::lint
