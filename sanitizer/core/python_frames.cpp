#include "python_frames.h"

#include <cctype>
#include <cstdlib>

#include "attribution.h"

namespace nosync::san {

namespace {

// One line: '  File "<path>", line <n> in <function>'. The path may itself
// contain '", line ' only in pathological names; the last occurrence wins.
bool parse_frame_line(std::string_view line, Frame& out) {
  constexpr std::string_view kFile = "File \"";
  constexpr std::string_view kLine = "\", line ";
  constexpr std::string_view kIn = " in ";
  std::size_t start = line.find(kFile);
  if (start == std::string_view::npos) return false;
  start += kFile.size();
  std::size_t mid = line.rfind(kLine);
  if (mid == std::string_view::npos || mid < start) return false;
  std::size_t num = mid + kLine.size();
  std::size_t in = line.find(kIn, num);
  if (in == std::string_view::npos) return false;
  out = Frame{};
  out.module = std::string(kPythonModule);
  out.file = std::string(line.substr(start, mid - start));
  std::string_view digits = line.substr(num, in - num);
  int n = 0;
  for (char c : digits) {
    if (!std::isdigit(static_cast<unsigned char>(c))) {
      n = 0;  // "???": CPython could not compute the line
      break;
    }
    n = n * 10 + (c - '0');
  }
  out.line = n;
  out.function = std::string(line.substr(in + kIn.size()));
  return true;
}

}  // namespace

std::vector<Frame> parse_python_stack(std::string_view dump) {
  std::vector<Frame> out;
  while (!dump.empty()) {
    std::size_t nl = dump.find('\n');
    std::string_view line = dump.substr(0, nl);
    dump = nl == std::string_view::npos ? std::string_view() : dump.substr(nl + 1);
    Frame f;
    if (parse_frame_line(line, f)) out.push_back(std::move(f));
  }
  return out;
}

std::vector<Frame> splice_python_frames(std::vector<Frame> native, std::vector<Frame> python) {
  if (python.empty()) return native;
  std::size_t cut = 0;
  while (cut < native.size() && !is_interpreter_frame(native[cut])) ++cut;
  native.resize(cut);
  for (Frame& f : python) native.push_back(std::move(f));
  return native;
}

std::string backward_node_of(const std::vector<Frame>& frames) {
  // torch/csrc/autograd/generated/Functions.h: one struct per differentiable
  // op, torch::autograd::generated::<Op>Backward<N>::apply. Custom Python
  // Functions run as torch::autograd::PyNode.
  constexpr std::string_view kGenerated = "torch::autograd::generated::";
  for (const Frame& f : frames) {
    std::string_view fn = f.function;
    std::size_t at = fn.find(kGenerated);
    if (at == std::string_view::npos) continue;
    std::string_view rest = fn.substr(at + kGenerated.size());
    std::size_t end = 0;
    while (end < rest.size() && (std::isalnum(static_cast<unsigned char>(rest[end])) || rest[end] == '_')) ++end;
    // The node struct (IndexBackward0), not a helper it calls
    // (generated::details::index_backward, seen innermost on the H200).
    std::string_view name = rest.substr(0, end);
    if (end && end < rest.size() && rest[end] == ':' && name.find("Backward") != std::string_view::npos)
      return std::string(name);
  }
  for (const Frame& f : frames)
    if (f.function.find("torch::autograd::PyNode::apply") != std::string::npos) return "PyNode";
  return "";
}

std::string describe_backward(const std::string& node) {
  // EmbeddingBackward0 -> embedding: the forward op the user wrote.
  std::string op = node;
  std::size_t b = op.rfind("Backward");
  if (b != std::string::npos && b > 0) op.resize(b);
  std::string lower;
  for (std::size_t i = 0; i < op.size(); ++i) {
    const char c = op[i];
    if (std::isupper(static_cast<unsigned char>(c))) {
      if (i) lower += '_';
      lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else {
      lower += c;
    }
  }
  return "in backward of " + lower + " (" + node + ")";
}

}  // namespace nosync::san
