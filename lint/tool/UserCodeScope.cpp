#include "UserCodeScope.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/Decl.h"
#include "clang/Basic/SourceManager.h"

namespace nosync::lint {

void UserCodeScope::HandleTranslationUnit(clang::ASTContext& context) {
  const clang::SourceManager& sm = context.getSourceManager();
  std::vector<clang::Decl*> scope;
  for (clang::Decl* decl : context.getTranslationUnitDecl()->decls()) {
    clang::SourceLocation loc = sm.getExpansionLoc(decl->getLocation());
    if (loc.isInvalid()) continue;  // implicit builtin declarations
    if (sm.isInSystemHeader(loc)) continue;
    if (!sm.isInMainFile(loc) && excluded_.isValid() && excluded_.match(sm.getFilename(loc))) continue;
    scope.push_back(decl);
  }
  context.setTraversalScope(scope);
}

}  // namespace nosync::lint
