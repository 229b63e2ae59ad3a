#include "PreambleBlock.h"

#include "clang/Lex/Lexer.h"
#include "llvm/Support/Regex.h"

namespace nosync::lint {

std::optional<PreambleBlock> leadingBlock(llvm::StringRef buffer, const clang::LangOptions& langOpts) {
  clang::PreambleBounds bounds = clang::Lexer::ComputePreamble(buffer, langOpts);
  if (bounds.Size == 0) return std::nullopt;
  llvm::StringRef text = buffer.take_front(bounds.Size);
  static const llvm::Regex include("^[ \t]*#[ \t]*(include|import)", llvm::Regex::Newline);
  if (!include.match(text)) return std::nullopt;
  PreambleBlock block;
  block.text = text.str();
  block.endsAtStartOfLine = bounds.PreambleEndsAtStartOfLine;
  // Conservative: a quote anywhere (even in a comment) ties the block to the
  // directory; angled includes alone do not depend on where the file is.
  block.dependsOnDirectory = text.contains('"') || text.contains("__FILE__") || text.contains("__BASE_FILE__");
  return block;
}

}  // namespace nosync::lint
