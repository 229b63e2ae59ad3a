#include "suppressions.h"

#include <fstream>
#include <sstream>

namespace nosync::san {

namespace {
constexpr const char* kTypes = "rule, fun, src, api";

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}
}  // namespace

bool Suppressions::glob(std::string_view pat, std::string_view text) {
  // Iterative matcher with one backtrack point: linear enough for short
  // patterns, no recursion depth to worry about.
  std::size_t p = 0, t = 0, star = std::string_view::npos, mark = 0;
  while (t < text.size()) {
    if (p < pat.size() && (pat[p] == '?' || pat[p] == text[t])) {
      ++p;
      ++t;
    } else if (p < pat.size() && pat[p] == '*') {
      star = p++;
      mark = t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pat.size() && pat[p] == '*') ++p;
  return p == pat.size();
}

std::string Suppressions::parse(std::string_view text, std::string_view origin) {
  std::size_t lineno = 0;
  while (!text.empty()) {
    std::size_t nl = text.find('\n');
    std::string_view line = trim(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++lineno;
    if (line.empty() || line.front() == '#') continue;
    std::size_t colon = line.find(':');
    std::string_view type = colon == std::string_view::npos ? line : trim(line.substr(0, colon));
    std::string_view pattern = colon == std::string_view::npos ? "" : trim(line.substr(colon + 1));
    Type t;
    if (type == "rule") t = Type::Rule;
    else if (type == "fun") t = Type::Fun;
    else if (type == "src") t = Type::Src;
    else if (type == "api") t = Type::Api;
    else {
      std::ostringstream err;
      err << "failed to parse suppressions " << origin << ":" << lineno << ": unknown type '" << type
          << "'. Supported suppression types are: " << kTypes;
      return err.str();
    }
    if (pattern.empty()) {
      std::ostringstream err;
      err << "failed to parse suppressions " << origin << ":" << lineno << ": empty pattern after '" << type << ":'";
      return err.str();
    }
    entries_.push_back(Entry{t, std::string(pattern), std::make_unique<std::atomic<std::uint64_t>>(0)});
  }
  return "";
}

std::string Suppressions::load_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return "cannot open suppressions file '" + path + "'";
  std::stringstream ss;
  ss << in.rdbuf();
  return parse(ss.str(), path);
}

int Suppressions::match(std::string_view rule, std::string_view api, const std::vector<Frame>& frames) const {
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    const Entry& e = entries_[i];
    bool hit = false;
    switch (e.type) {
      case Type::Rule: hit = glob(e.pattern, rule); break;
      case Type::Api: hit = glob(e.pattern, api); break;
      case Type::Fun:
        for (const Frame& f : frames)
          if (!f.function.empty() && glob(e.pattern, f.function)) { hit = true; break; }
        break;
      case Type::Src:
        for (const Frame& f : frames)
          if (!f.file.empty() && glob(e.pattern, f.file)) { hit = true; break; }
        break;
    }
    if (hit) {
      e.hits->fetch_add(1, std::memory_order_relaxed);
      return static_cast<int>(i);
    }
  }
  return -1;
}

std::string Suppressions::describe(std::size_t i) const {
  static constexpr const char* kNames[] = {"rule", "fun", "src", "api"};
  return std::string(kNames[static_cast<int>(entries_[i].type)]) + ":" + entries_[i].pattern;
}

}  // namespace nosync::san
