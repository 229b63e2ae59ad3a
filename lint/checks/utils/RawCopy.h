// Copies written with the CUDA runtime API (cudaMemcpy, cudaMemcpyAsync), as
// TensorRT bindings and hand-managed buffers beside LibTorch code do. The kind
// argument gives the direction; whether the host waits depends on the call
// and on the memory of its host side.
#pragma once

#include "utils/OpTable.h"
#include "utils/RuleCheck.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/Expr.h"

#include <optional>

namespace clang::tidy::nosync {

struct RawCopy {
  /// nosync-device-to-host or nosync-pageable-h2d: the rule of its direction.
  RuleId Rule;
  bool Async = false;
  /// The host side: the destination of a download, the source of an upload.
  const Expr *Host = nullptr;
};

/// A cudaMemcpy / cudaMemcpyAsync call whose kind is cudaMemcpyHostToDevice
/// or cudaMemcpyDeviceToHost; none for device to device, host to host and
/// cudaMemcpyDefault (there the pointers decide, which the source does not
/// show).
std::optional<RawCopy> rawCopyOf(const CallExpr *Call);

/// Whether the host waits for the copy: a synchronous one always; an async
/// one when its host side is pageable memory the source shows (a
/// std::vector's or std::array's data(), a local array, the data_ptr of a
/// tensor on the CPU that is not pinned). CUDA stages such a copy and returns
/// only when it is done.
bool hostWaitsFor(const RawCopy &Copy, ASTContext &Ctx);

/// The finding of nosync-device-to-host or nosync-pageable-h2d (`Rule`) for
/// a raw copy of that direction the host waits for; none otherwise.
std::optional<Finding> rawCopyFinding(const CallExpr *Call, RuleId Rule, ASTContext &Ctx);

}  // namespace clang::tidy::nosync
