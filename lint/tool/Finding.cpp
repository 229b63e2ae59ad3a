#include "Finding.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <algorithm>

namespace nosync::lint {

Location LineIndex::locate(const std::string& absFile, unsigned offset) {
  auto [it, inserted] = lineStarts_.try_emplace(absFile);
  std::vector<unsigned>& starts = it->second;
  if (inserted) {
    starts.push_back(0);
    if (auto buf = llvm::MemoryBuffer::getFile(absFile)) {
      llvm::StringRef text = (*buf)->getBuffer();
      for (unsigned i = 0; i < text.size(); ++i)
        if (text[i] == '\n') starts.push_back(i + 1);
    }
  }
  auto next = std::upper_bound(starts.begin(), starts.end(), offset);
  unsigned line = static_cast<unsigned>(next - starts.begin());
  return Location{absFile, line, offset - starts[line - 1] + 1};
}

std::string absolutePath(llvm::StringRef p, llvm::StringRef buildDir) {
  if (p.empty()) return {};
  llvm::SmallString<256> out(p);
  if (!llvm::sys::path::is_absolute(out)) {
    if (!buildDir.empty()) llvm::sys::fs::make_absolute(buildDir, out);
    else llvm::sys::fs::make_absolute(out);
  }
  llvm::sys::path::remove_dots(out, /*remove_dot_dot=*/true);
  return std::string(out);
}

rules::Severity severityOf(clang::tooling::Diagnostic::Level level) {
  switch (level) {
    case clang::tooling::Diagnostic::Remark: return rules::Severity::Note;
    case clang::tooling::Diagnostic::Warning: return rules::Severity::Warning;
    case clang::tooling::Diagnostic::Error: return rules::Severity::Error;
  }
  return rules::Severity::Warning;
}

bool isContextNote(const clang::tooling::DiagnosticMessage& note) {
  return llvm::StringRef(note.Message).starts_with(kContextNotePrefix);
}

bool isCompilerError(const clang::tidy::ClangTidyError& e) {
  return e.DiagLevel == clang::tooling::Diagnostic::Error &&
         llvm::StringRef(e.DiagnosticName).starts_with("clang-diagnostic-");
}

namespace {

Location locationOf(const clang::tooling::DiagnosticMessage& m, llvm::StringRef buildDir, LineIndex& lines) {
  if (m.FilePath.empty()) return {};
  return lines.locate(absolutePath(m.FilePath, buildDir), m.FileOffset);
}

void appendEdits(const llvm::StringMap<clang::tooling::Replacements>& fix, llvm::StringRef buildDir,
                 std::vector<Edit>& out) {
  for (const auto& file : fix)
    for (const auto& r : file.getValue())
      out.push_back(Edit{absolutePath(r.getFilePath(), buildDir), r.getOffset(), r.getLength(),
                         r.getReplacementText().str()});
  // StringMap iteration order is unspecified; keep the output stable.
  std::stable_sort(out.begin(), out.end(), [](const Edit& a, const Edit& b) {
    return std::tie(a.file, a.offset) < std::tie(b.file, b.offset);
  });
}

}  // namespace

Finding toFinding(const clang::tidy::ClangTidyError& e, LineIndex& lines) {
  Finding f;
  f.where = locationOf(e.Message, e.BuildDirectory, lines);
  f.rule = e.DiagnosticName;
  f.severity = severityOf(e.DiagLevel);
  f.message = e.Message.Message;
  appendEdits(e.Message.Fix, e.BuildDirectory, f.fixes);
  for (const auto& n : e.Notes) {
    // The human part; the facts after " || " are for ProjectContext.
    if (isContextNote(n))
      f.context = llvm::StringRef(n.Message).drop_front(kContextNotePrefix.size()).split(" || ").first.str();
    else f.notes.push_back(FindingNote{locationOf(n, e.BuildDirectory, lines), n.Message});
  }
  return f;
}

}  // namespace nosync::lint
