#include "PreambleReplay.h"

#include "clang/Basic/SourceManager.h"
#include "clang/Lex/HeaderSearch.h"
#include "clang/Lex/Lexer.h"
#include "llvm/Support/Path.h"

namespace nosync::lint {

void PreambleReplay::FileChanged(clang::SourceLocation loc, FileChangeReason reason,
                                 clang::SrcMgr::CharacteristicKind, clang::FileID) {
  if (done_ || reason != EnterFile) return;
  clang::SourceManager& sm = pp_.getSourceManager();
  clang::FileID file = sm.getFileID(loc);
  if (file != sm.getMainFileID()) return;
  done_ = true;
  replay(file);
}

// The file an include names: beside the main file (quoted only), then in the
// search directories in order. Frameworks and header maps are not searched
// (Preprocessor::LookupFile needs a directive being lexed, which a replay is
// not); such an include is not replayed.
clang::OptionalFileEntryRef PreambleReplay::resolve(llvm::StringRef name, bool angled, clang::FileID mainFile) {
  clang::FileManager& files = pp_.getFileManager();
  auto in = [&](llvm::StringRef dir) {
    llvm::SmallString<256> p(dir);
    llvm::sys::path::append(p, name);
    return files.getOptionalFileRef(p);
  };
  if (llvm::sys::path::is_absolute(name)) return files.getOptionalFileRef(name);
  if (!angled)
    if (clang::OptionalFileEntryRef main = pp_.getSourceManager().getFileEntryRefForID(mainFile))
      if (clang::OptionalFileEntryRef f = in(main->getDir().getName())) return f;
  const clang::HeaderSearch& search = pp_.getHeaderSearchInfo();
  for (auto it = angled ? search.angled_dir_begin() : search.search_dir_begin(); it != search.search_dir_end(); ++it)
    if (clang::OptionalDirectoryEntryRef dir = it->getDirRef())
      if (clang::OptionalFileEntryRef f = in(dir->getName())) return f;
  return std::nullopt;
}

// Raw-lexes the block: `#` first on a line, then `include` / `import` /
// `include_next`, then a `<...>` or `"..."` name on the same line. Includes
// named by a macro are not replayed (their name needs the preprocessor), nor
// told apart by #if: the inserter only uses them to find where includes go.
void PreambleReplay::replay(clang::FileID mainFile) {
  clang::SourceManager& sm = pp_.getSourceManager();
  llvm::StringRef buffer = sm.getBufferData(mainFile);
  llvm::StringRef block = buffer.take_front(bytes_);
  clang::SourceLocation start = sm.getLocForStartOfFile(mainFile);
  // The lexer needs the buffer's terminating NUL: it lexes the whole file and
  // stops at the block's end.
  clang::Lexer lexer(start, pp_.getLangOpts(), buffer.begin(), buffer.begin(), buffer.end());
  clang::PPCallbacks* callbacks = pp_.getPPCallbacks();
  clang::Token tok;
  while (true) {
    lexer.LexFromRawLexer(tok);
    if (tok.is(clang::tok::eof) || sm.getFileOffset(tok.getLocation()) >= bytes_) break;
    if (tok.isNot(clang::tok::hash) || !tok.isAtStartOfLine()) continue;
    clang::SourceLocation hash = tok.getLocation();
    lexer.LexFromRawLexer(tok);
    if (tok.isNot(clang::tok::raw_identifier) || tok.isAtStartOfLine()) continue;
    llvm::StringRef keyword = tok.getRawIdentifier();
    if (keyword != "include" && keyword != "import" && keyword != "include_next") continue;
    clang::Token includeTok = tok;
    unsigned after = sm.getFileOffset(tok.getEndLoc());
    llvm::StringRef rest = block.substr(after);
    rest = rest.take_until([](char c) { return c == '\n' || c == '\r'; });
    size_t open = rest.find_first_not_of(" \t");
    if (open == llvm::StringRef::npos) continue;
    char close = rest[open] == '<' ? '>' : rest[open] == '"' ? '"' : 0;
    if (!close) continue;
    size_t end = rest.find(close, open + 1);
    if (end == llvm::StringRef::npos) continue;
    llvm::StringRef name = rest.slice(open + 1, end);
    clang::SourceLocation nameBegin = start.getLocWithOffset(after + open);
    clang::CharSourceRange nameRange =
        clang::CharSourceRange::getCharRange(nameBegin, nameBegin.getLocWithOffset(end - open + 1));
    // Callbacks such as the dependency-file writer need the file, and take an
    // unresolved one for a missing header: an include not resolved is not
    // replayed.
    clang::OptionalFileEntryRef file = resolve(name, close == '>', mainFile);
    if (callbacks && file)
      callbacks->InclusionDirective(hash, includeTok, name, close == '>', nameRange, file, "", "", nullptr, false,
                                    clang::SrcMgr::C_User);
  }
}

}  // namespace nosync::lint
