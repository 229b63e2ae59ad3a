#include "options.h"

#include <cerrno>
#include <cstdlib>
#include <sstream>
#include <vector>

namespace nosync::san {

std::string_view to_string(Mode m) {
  switch (m) {
    case Mode::Warn: return "warn";
    case Mode::Error: return "error";
    case Mode::Report: return "report";
  }
  return "warn";
}

std::string_view to_string(Format f) {
  switch (f) {
    case Format::Text: return "text";
    case Format::Json: return "json";
    case Format::Trace: return "trace";
  }
  return "text";
}

namespace {

// Each parse_* returns the expected-values text on failure, "" on success.
std::string parse_value(std::string_view v, bool& out) {
  if (v == "1" || v == "true") { out = true; return ""; }
  if (v == "0" || v == "false") { out = false; return ""; }
  return "0|1|true|false";
}

std::string parse_value(std::string_view v, std::uint64_t& out) {
  std::string s(v);
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos) return "an unsigned integer";
  errno = 0;
  unsigned long long x = std::strtoull(s.c_str(), nullptr, 10);
  if (errno == ERANGE) return "an unsigned integer";
  out = x;
  return "";
}

std::string parse_value(std::string_view v, std::string& out) {
  out = std::string(v);
  return "";
}

std::string parse_value(std::string_view v, Mode& out) {
  for (Mode m : {Mode::Warn, Mode::Error, Mode::Report})
    if (v == to_string(m)) { out = m; return ""; }
  return "warn|error|report";
}

std::string parse_value(std::string_view v, Format& out) {
  for (Format f : {Format::Text, Format::Json, Format::Trace})
    if (v == to_string(f)) { out = f; return ""; }
  return "text|json|trace";
}

// Range checks that the type alone cannot express.
std::string check_ranges(const Options& o) {
  if (o.stack_depth < 1 || o.stack_depth > 128) return "stack_depth must be in 1..128";
  if (o.max_sites < 1) return "max_sites must be at least 1";
  return "";
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n')) s.remove_suffix(1);
  return s;
}

std::string_view unquote(std::string_view s) {
  if (s.size() >= 2 && (s.front() == '\'' || s.front() == '"') && s.back() == s.front())
    return s.substr(1, s.size() - 2);
  return s;
}

// Splits on ':' outside quotes, so log_path='C:/x' or paths with ':' can be quoted.
std::vector<std::string_view> split(std::string_view text) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  char quote = 0;
  for (std::size_t i = 0; i <= text.size(); ++i) {
    char c = i < text.size() ? text[i] : ':';
    if (quote) {
      if (c == quote) quote = 0;
      if (i < text.size()) continue;
    } else if (c == '\'' || c == '"') {
      quote = c;
      continue;
    }
    if (c == ':') {
      std::string_view part = trim(text.substr(start, i - start));
      if (!part.empty()) parts.push_back(part);
      start = i + 1;
    }
  }
  return parts;
}

}  // namespace

std::string option_names() {
  std::string names;
#define NOSYNC_OPTION(Name, Type, Default, Help) names += (names.empty() ? "" : ", ") + std::string(#Name);
#include "options.def"
  return names;
}

std::string parse_options(std::string_view text, Options& opts) {
  for (std::string_view part : split(text)) {
    std::size_t eq = part.find('=');
    if (eq == std::string_view::npos)
      return "NOSYNC_OPTIONS: '" + std::string(part) + "' is not key=value; valid keys: " + option_names();
    std::string_view key = trim(part.substr(0, eq));
    std::string_view value = unquote(trim(part.substr(eq + 1)));
    bool known = false;
    std::string expected;
#define NOSYNC_OPTION(Name, Type, Default, Help) \
    if (key == #Name) {                          \
      known = true;                              \
      expected = parse_value(value, opts.Name);  \
    }
#include "options.def"
    if (!known)
      return "NOSYNC_OPTIONS: unknown option '" + std::string(key) + "'; valid options: " + option_names() +
             " (help=1 describes them)";
    if (!expected.empty())
      return "NOSYNC_OPTIONS: bad value '" + std::string(value) + "' for option '" + std::string(key) +
             "': expected " + expected;
  }
  std::string range = check_ranges(opts);
  if (!range.empty()) return "NOSYNC_OPTIONS: " + range;
  return "";
}

namespace {
std::string default_text(bool v) { return v ? "1" : "0"; }
std::string default_text(std::uint64_t v) { return std::to_string(v); }
std::string default_text(const std::string& v) { return v.empty() ? "\"\"" : v; }
std::string default_text(Mode m) { return std::string(to_string(m)); }
std::string default_text(Format f) { return std::string(to_string(f)); }
}  // namespace

std::string options_help() {
  const Options defaults;
  std::ostringstream out;
  out << "nosync-sanitizer options (NOSYNC_OPTIONS=key=value:key=value...):\n";
#define NOSYNC_OPTION(Name, Type, Default, Help)                                                  \
  out << "  " << #Name << " (" << #Type << ", default " << default_text(defaults.Name) << ")\n" \
      << "      " << Help << "\n";
#include "options.def"
  return out.str();
}

}  // namespace nosync::san
