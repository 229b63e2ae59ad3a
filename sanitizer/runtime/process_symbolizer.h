// Symbolizes return addresses of this process: function (demangled), source
// file:line where DWARF exists (user code built with -g), module and offset.
// libbacktrace (shipped with GCC) reads DWARF and symbol tables in-process;
// without it, dladdr gives exported names and module offsets only.
#pragma once

#include "frames.h"

namespace nosync::san {

class ProcessSymbolizer : public Symbolizer {
 public:
  ProcessSymbolizer();
  // Inlined calls expand to several frames with the same pc (innermost
  // first), so a user function inlined into another still gets its line.
  std::vector<Frame> symbolize(const std::uintptr_t* pcs, std::size_t n) override;

 private:
  void* state_ = nullptr;  // backtrace_state*, created once
};

}  // namespace nosync::san
