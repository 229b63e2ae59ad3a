// Where a tensor lives and how it is copied, as far as the source says:
// device expressions, placement of tensor values (CPU / CUDA / unknown),
// pinned host memory and non_blocking arguments.
#pragma once

#include "clang/AST/ExprCXX.h"

#include <string>
#include <vector>

namespace clang::tidy::nosync {

/// Which device an expression names, when it can be known from the source.
/// NoDevice: options that provably leave placement alone (a dtype, a
/// default-constructed TensorOptions).
enum class DeviceKind { Unknown, NoDevice, Cpu, Cuda };

/// Classifies a device-like expression: c10::DeviceType (kCPU, kCUDA,
/// DeviceType::CPU), c10::Device constructions, string literals ("cpu",
/// "cuda:0"), TensorOptions chains with .device(...), local variables
/// through their initializer, and the implicit conversions LibTorch inserts
/// between them.
DeviceKind classifyDevice(const Expr *E, ASTContext &Ctx);

/// True when the expression (under implicit conversions) is a c10::Device or
/// c10::DeviceType, i.e. it certainly names a device even if not which one.
bool isDeviceTyped(const Expr *E);

/// True for `t.options()`, also through a local initialized with it: options
/// that carry `t`'s device (`x.to(t.options())` goes where `t` is).
bool isOptionsOfTensor(const Expr *E);

/// True when TensorOptions given to a factory certainly name a device, even if
/// not which one: a Device, `TensorOptions().dtype(..).device(d)`,
/// `torch::device(d)`, a local initialized so (a dtype alone does not).
bool optionsNameDevice(const Expr *E, int Depth = 0);

/// For a call of Tensor::to(...): the device it targets, or nullptr when the
/// overload only changes dtype (`.to(torch::kF32)`) or copies another
/// tensor's placement (`.to(other)`).
const Expr *deviceArgOfTo(const CXXMemberCallExpr *ToCall);

/// True when the value of `E` provably lives in host memory: results of
/// .cpu()/.to(kCPU), factories without a CUDA device (torch::zeros({..}),
/// from_blob of a host pointer), locals initialized that way and never
/// reassigned in their function, tensor members every value of which in the
/// main file is placed so, and parameters every call in the main file passes
/// such a value for. Tensor ops that keep placement
/// (x.cpu().sum()) are looked through.
bool isProvablyOnCpu(const Expr *E, ASTContext &Ctx);

/// True for a .cpu() / .to(kCPU) made right here of a tensor that may be on
/// the GPU (x.cpu() in x.cpu().item()): on the CPU, but making it syncs.
bool isHostCopyOfDeviceValue(const Expr *E, ASTContext &Ctx);

/// Where the value of a tensor expression provably lives, by the same
/// reasoning as isProvablyOnCpu; Unknown when the source does not say.
DeviceKind placementOf(const Expr *E, ASTContext &Ctx);

/// The parameter of the enclosing function whose placement decides `E`'s:
/// `p`, `p.mean()`, `p[0]`, a local initialized from `p` and not reassigned.
/// nullptr when `E` is placed by anything else (a copy, a factory, two
/// tensors). nosync-lint reads it to place `E` from callers in other files.
const ParmVarDecl *placingParameter(const Expr *E, ASTContext &Ctx);

/// The parameters whose callers in other files decide that `E` is on the
/// CPU: where the walk of placementOf meets a parameter of a function that no
/// call in the main file reaches, it takes the parameter to be on the CPU and
/// lists it. `E` is on the CPU when every call of the project passes a host
/// tensor for each listed parameter (nosync-lint checks them). Empty when
/// the walk needs no such parameter or `E` is not on the CPU even so.
std::vector<const ParmVarDecl *> hostIfCallersElsewhereAgree(const Expr *E, ASTContext &Ctx);

/// 'c' for the CPU, 'g' for CUDA, '?' for unknown.
char placementCode(DeviceKind K);

/// One placementCode per parameter of `Callee`, for the arguments `Call`
/// gives it ('?' for a non-tensor or defaulted argument); "" when `Call`
/// reaches `Callee` only indirectly (a module's forward() through
/// operator()).
std::string argumentPlacements(const CallExpr *Call, const FunctionDecl *Callee, ASTContext &Ctx);

/// Forgets the placements of members and parameters, and the reassignments
/// of locals, worked out for the translation unit that ends (RuleCheck calls
/// it at its end, nosync-lint's call-graph export after it).
void clearPlacementCache();

/// True for page-locked host tensors: .pin_memory() results and factories
/// given TensorOptions().pinned_memory(true), also through locals.
bool isPinned(const Expr *E, ASTContext &Ctx);

/// The `non_blocking` argument of a LibTorch call (to, copy_, ...): Yes/No
/// when it is a constant or left at its default, Unknown for a variable.
enum class NonBlocking { No, Yes, Unknown };
NonBlocking nonBlockingArg(const CallExpr *Call, const ASTContext &Ctx);

}  // namespace clang::tidy::nosync
