#include "process_symbolizer.h"

#include <cxxabi.h>
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>

#if NOSYNC_HAVE_LIBBACKTRACE
#include <backtrace.h>
#endif

namespace nosync::san {

namespace {

std::string demangle(const char* name) {
  if (!name) return "";
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status == 0 && d) {
    std::string s(d);
    std::free(d);
    return s;
  }
  return name;
}

void fill_module(Frame& f) {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(f.pc), &info) && info.dli_fname) {
    f.module = info.dli_fname;
    f.module_offset = f.pc - reinterpret_cast<std::uintptr_t>(info.dli_fbase);
    if (f.function.empty() && info.dli_sname) f.function = demangle(info.dli_sname);
  }
}

#if NOSYNC_HAVE_LIBBACKTRACE
struct PcInfo {
  std::uintptr_t pc;
  std::vector<Frame>* out;
  std::size_t added = 0;
};

int on_pcinfo(void* data, std::uintptr_t, const char* file, int line, const char* function) {
  auto* p = static_cast<PcInfo*>(data);
  if (!function && !file) return 0;
  Frame f;
  f.pc = p->pc;
  f.function = demangle(function);
  f.file = file ? file : "";
  f.line = line;
  p->out->push_back(std::move(f));
  ++p->added;
  return 0;
}

void on_syminfo(void* data, std::uintptr_t, const char* symname, std::uintptr_t, std::uintptr_t) {
  auto* name = static_cast<std::string*>(data);
  if (symname) *name = demangle(symname);
}

void on_error(void*, const char*, int) {}  // missing debug info is normal for libraries
#endif

}  // namespace

ProcessSymbolizer::ProcessSymbolizer() {
#if NOSYNC_HAVE_LIBBACKTRACE
  state_ = backtrace_create_state(nullptr, /*threaded=*/1, on_error, nullptr);
#endif
}

std::vector<Frame> ProcessSymbolizer::symbolize(const std::uintptr_t* pcs, std::size_t n) {
  std::vector<Frame> out;
  for (std::size_t i = 0; i < n; ++i) {
    // A return address points after the call; look up the call itself.
    const std::uintptr_t lookup = i == 0 ? pcs[i] : pcs[i] - 1;
    std::size_t before = out.size();
#if NOSYNC_HAVE_LIBBACKTRACE
    if (state_) {
      PcInfo info{pcs[i], &out};
      backtrace_pcinfo(static_cast<backtrace_state*>(state_), lookup, on_pcinfo, on_error, &info);
      if (info.added == 0) {
        Frame f;
        f.pc = pcs[i];
        backtrace_syminfo(static_cast<backtrace_state*>(state_), lookup, on_syminfo, on_error, &f.function);
        out.push_back(std::move(f));
      }
    }
#endif
    if (out.size() == before) {
      Frame f;
      f.pc = pcs[i];
      out.push_back(std::move(f));
    }
    for (std::size_t k = before; k < out.size(); ++k) {
      out[k].pc = pcs[i];
      fill_module(out[k]);
    }
  }
  return out;
}

}  // namespace nosync::san
