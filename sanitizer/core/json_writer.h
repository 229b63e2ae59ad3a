// Minimal JSON emission helpers (escaping, numbers) for the JSON and trace
// reports; the sanitizer must not pull a JSON library into every process.
#pragma once

#include <string>
#include <string_view>

namespace nosync::san {

// `s` as a quoted JSON string.
std::string json_string(std::string_view s);

}  // namespace nosync::san
