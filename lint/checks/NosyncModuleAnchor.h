// Referencing this variable from a binary that links nosync_lint_checks
// statically keeps the linker from dropping NosyncTidyModule.o, whose only
// job is a static registration object nothing else refers to. This is the
// same trick clang-tidy's ClangTidyForceLinker.h plays for its own modules.
#pragma once

namespace clang::tidy {
// NOLINTNEXTLINE(readability-identifier-naming): name follows clang-tidy's convention.
extern volatile int NosyncModuleAnchorSource;
// Use as: static int Anchor = clang::tidy::NosyncModuleAnchorDestination;
[[maybe_unused]] static int NosyncModuleAnchorDestination = NosyncModuleAnchorSource;
}  // namespace clang::tidy
