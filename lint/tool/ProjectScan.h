// What the sources of the project around the linted files say about the
// whole program, read as text. A run often holds only some files of a
// project (a pre-commit hook's changed files, a library file whose main() is
// elsewhere), so whether the program ever puts a tensor on a GPU cannot be
// decided from the run's units alone. The project's other C/C++ sources are
// searched for a main() and for anything that may name a CUDA device: the
// word "cuda" in any case outside comments (kCUDA, "cuda:0", .cuda(),
// c10/cuda includes, a CUDA macro), or a Device built from a value other
// than a CPU constant (`torch::Device device(argv[1])`). Text errs on the
// side of "may use CUDA".
#pragma once

#include "TextCalls.h"
#include "TextTypes.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace nosync::lint {

struct ProjectSources {
  std::string root;          // "" when the files share no project root
  bool complete = false;     // every source under root was read (no limit hit)
  unsigned files = 0;        // C/C++ sources read
  bool definesMain = false;  // some source defines main()
  bool mayUseCuda = true;    // some source may name a CUDA device
  /// The calls in the sources that are not part of the run (TextCalls.h):
  /// callers the run's own units cannot show.
  std::vector<TextCallEdge> textCalls;
  /// The classes and declared types of every source read (the run's too),
  /// to tell which class a text call's method belongs to.
  TextTypes types;

  /// The project is a program that never uses a GPU.
  bool isCpuProgram() const { return complete && definesMain && !mayUseCuda; }
};

/// The project a file belongs to: its nearest ancestor that is a git checkout
/// (holds .git), else its topmost ancestor, up to 8 levels, that holds a
/// build file (CMakeLists.txt, Makefile, meson.build, a Visual Studio .sln);
/// "" when neither.
std::string projectRootOf(llvm::StringRef file);

/// Reads the C/C++ sources under the root the files share (vendored code
/// and build directories skipped: third_party, external, build*, ...), and
/// the calls in those that are not among `files`.
/// Bounded: a project of more than 5000 sources or 64 MiB is not complete.
ProjectSources scanProject(llvm::ArrayRef<std::string> files);

/// Calls `visit` with each C/C++ source under `root` (vendored and build
/// directories skipped, as scanProject does) and its text; false when a
/// limit (5000 sources, 64 MiB) or a directory error stopped the walk.
bool forEachProjectSource(llvm::StringRef root,
                          llvm::function_ref<void(llvm::StringRef file, llvm::StringRef text)> visit);

/// A source's code with its comments blanked (newlines kept, so lines keep
/// their numbers); string and character literals are kept.
std::string codeWithoutComments(llvm::StringRef text);

/// The same for one source text: whether it defines main() and whether it
/// may name a CUDA device (exposed for tests).
bool textDefinesMain(llvm::StringRef text);
bool textMayUseCuda(llvm::StringRef text);

}  // namespace nosync::lint
