// NOSYNC_OPTIONS: one ':'-separated list of key=value pairs (ASan style),
// parsed against the table in options.def.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace nosync::san {

enum class Mode { Warn, Error, Report };
enum class Format { Text, Json, Trace };

std::string_view to_string(Mode m);
std::string_view to_string(Format f);

struct Options {
#define NOSYNC_OPTION_Bool bool
#define NOSYNC_OPTION_Int std::uint64_t
#define NOSYNC_OPTION_String std::string
#define NOSYNC_OPTION_Mode Mode
#define NOSYNC_OPTION_Format Format
#define NOSYNC_OPTION(Name, Type, Default, Help) NOSYNC_OPTION_##Type Name = Default;
#include "options.def"
#undef NOSYNC_OPTION_Bool
#undef NOSYNC_OPTION_Int
#undef NOSYNC_OPTION_String
#undef NOSYNC_OPTION_Mode
#undef NOSYNC_OPTION_Format
};

// Parses `text` on top of `opts`. Returns "" on success, else one error
// message that names the offending key or value and lists what is valid.
std::string parse_options(std::string_view text, Options& opts);

// The `help=1` text: every option with its type, default and help line.
std::string options_help();

// Comma-separated names of all options (for error messages).
std::string option_names();

}  // namespace nosync::san
