// Suppressions file, compiler-rt style: one `type:pattern` per line, '#'
// comments, '*' and '?' wildcards (fnmatch without path semantics).
//   rule:nosync-item              a rule id
//   fun:*clip_grad_norm*          any frame's demangled function
//   src:*/data/loader.cpp         any frame's source file
//   api:cudaFree                  the CUDA API that blocked
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "frames.h"

namespace nosync::san {

class Suppressions {
 public:
  enum class Type { Rule, Fun, Src, Api };

  // Returns "" on success, else an error naming the line and the valid types.
  std::string parse(std::string_view text, std::string_view origin = "<string>");
  std::string load_file(const std::string& path);

  // The index of the first matching suppression, or -1. Counts the hit.
  int match(std::string_view rule, std::string_view api, const std::vector<Frame>& frames) const;

  std::size_t size() const { return entries_.size(); }
  std::string describe(std::size_t i) const;
  std::uint64_t hits(std::size_t i) const { return entries_[i].hits->load(); }

  static bool glob(std::string_view pattern, std::string_view text);

 private:
  struct Entry {
    Type type;
    std::string pattern;
    std::unique_ptr<std::atomic<std::uint64_t>> hits;
  };
  std::vector<Entry> entries_;
};

}  // namespace nosync::san
