// A symbolized stack frame and the interface that produces them. The core
// never walks ELF/DWARF itself: the runtime plugs in the process symbolizer,
// tests plug in a table of fake frames.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace nosync::san {

struct Frame {
  std::uintptr_t pc = 0;
  std::string function;  // demangled; empty when unknown
  std::string file;      // source file; empty without debug info
  int line = 0;
  std::string module;    // shared object or executable path
  std::uintptr_t module_offset = 0;
};

class Symbolizer {
 public:
  virtual ~Symbolizer() = default;
  // Frames for the pcs in order, innermost first; a pc may expand to several
  // frames when calls were inlined. Called once per unique stack, never on
  // the hot path.
  virtual std::vector<Frame> symbolize(const std::uintptr_t* pcs, std::size_t n) = 0;
};

}  // namespace nosync::san
