// torch.classes.nosync.MetricAccumulator and torch.classes.nosync.PinnedStager:
// the two stateful helpers as TorchScript custom classes, usable from Python
// and TorchScript after torch.ops.load_library("libnosync_kernels.so").
//
// Why a wrapper: torch::class_ holds only types derived from
// torch::CustomClassHolder, reached through c10::intrusive_ptr, and speaks
// TorchScript types (str, int, Dict[str, float]). The C++ classes are plain,
// non-copyable public API types, so each gets a thin holder that owns one and
// converts at the boundary: device string -> c10::Device (torch's own parser
// and error), int -> int with a range check, std::map -> c10::Dict. Everything
// else, errors included, is the C++ class's own behaviour; c10::Error
// surfaces in Python as RuntimeError with its message.
#include <nosync/kernels.h>
#include <torch/custom_class.h>
#include <torch/library.h>

#include <climits>
#include <optional>
#include <string>

namespace {

namespace nk = nosync::kernels;

// TorchScript ints are 64-bit; the C++ constructors take int. Values beyond
// int are refused here rather than truncated.
int slot_count(int64_t v, const char* what) {
  TORCH_CHECK(v >= 1 && v <= INT_MAX, what, " must be between 1 and ", INT_MAX, ", got ", v);
  return static_cast<int>(v);
}

c10::Dict<std::string, double> to_dict(const nk::MetricAccumulator::Values& values) {
  c10::Dict<std::string, double> d;
  for (const auto& [name, value] : values) d.insert(name, value);
  return d;
}

struct MetricAccumulatorHolder : torch::CustomClassHolder {
  nk::MetricAccumulator acc;
  MetricAccumulatorHolder(const std::string& device, int64_t readback_slots)
      : acc(c10::Device(device), slot_count(readback_slots, "MetricAccumulator: readback_slots")) {}

  // add("loss", loss) without .detach() is fine: the C++ add() detaches.
  void add(const std::string& name, const at::Tensor& value) { acc.add(name, value); }
  std::optional<c10::Dict<std::string, double>> poll() {
    auto v = acc.poll();
    if (!v) return std::nullopt;
    return to_dict(*v);
  }
  c10::Dict<std::string, double> read() { return to_dict(acc.read()); }
  c10::Dict<std::string, double> flush() { return to_dict(acc.flush()); }
  void reset() { acc.reset(); }
};

struct PinnedStagerHolder : torch::CustomClassHolder {
  nk::PinnedStager stager;
  PinnedStagerHolder(const std::string& device, int64_t slots)
      : stager(c10::Device(device), slot_count(slots, "PinnedStager: slots")) {}
  at::Tensor stage(const at::Tensor& cpu_tensor) { return stager.stage(cpu_tensor); }
};

}  // namespace

TORCH_LIBRARY_FRAGMENT(nosync, m) {
  m.class_<MetricAccumulatorHolder>("MetricAccumulator")
      .def(torch::init<std::string, int64_t>(),
           "Named scalars summed on the device; values are means since the last reset().",
           {torch::arg("device"), torch::arg("readback_slots") = 3})
      .def("add", &MetricAccumulatorHolder::add,
           "Adds a one-element tensor on the accumulator's device; one small kernel, no sync.",
           {torch::arg("name"), torch::arg("value")})
      .def("poll", &MetricAccumulatorHolder::poll,
           "Never waits: the newest completed readback (None if none yet) and starts another. "
           "On a CPU accumulator, the current means.")
      .def("read", &MetricAccumulatorHolder::read, "The current means; one wait on one event.")
      .def("flush", &MetricAccumulatorHolder::flush, "read() then reset().")
      .def("reset", &MetricAccumulatorHolder::reset, "Zeroes every sum and count on the device; no sync.");

  m.class_<PinnedStagerHolder>("PinnedStager")
      .def(torch::init<std::string, int64_t>(), "Host-to-device staging through a ring of pinned buffers (CUDA only).",
           {torch::arg("device"), torch::arg("slots") = 4})
      .def("stage", &PinnedStagerHolder::stage,
           "Copies a CPU tensor into a pinned buffer, then non_blocking to a new device tensor.",
           {torch::arg("cpu_tensor")});
}
