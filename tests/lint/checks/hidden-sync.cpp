// Fixture for nosync-hidden-sync: LibTorch calls that synchronize inside.
#include <torch/torch.h>

#include <iostream>
// CHECK-FIXES: #include <nosync/kernels.h>

namespace {

// The user's own clip_grad_norm_: no sync, not a finding.
double clip_grad_norm_(std::vector<torch::Tensor>& params, double max_norm) { return max_norm; }

}  // namespace

// Masks made elsewhere: a tensor used as an index and named like a mask (or
// a filter, valid flags) is one; a bool dtype says so too, also a factory's.
// An index named for indices is a gather.
void select_valid(torch::Tensor& accum, const torch::Tensor& grads, const torch::Tensor& valid_mask,
                  const torch::Tensor& mask_idx, const torch::Tensor& visibility_filter,
                  const torch::TensorOptions& opts) {
  auto BoolType = opts.dtype(torch::kBool);
  for (int step = 0; step < 100; ++step) {
    auto kept = grads.index({valid_mask});
    // CHECK-MESSAGES: :[[@LINE-1]]:23: warning: boolean-mask indexing inside a loop: {{.*}} [nosync-hidden-sync]
    auto keep = grads.abs().to(BoolType);
    accum.index_put_({keep}, accum.index({keep}) + kept.sum());
    // CHECK-MESSAGES: :[[@LINE-1]]:11: warning: boolean-mask indexing inside a loop: {{.*}} [nosync-hidden-sync]
    // CHECK-MESSAGES: :[[@LINE-2]]:36: warning: boolean-mask indexing inside a loop: {{.*}} [nosync-hidden-sync]
    auto gathered = grads.index({mask_idx});
    (void)gathered;
    auto filtered = grads.index({visibility_filter});
    // CHECK-MESSAGES: :[[@LINE-1]]:27: warning: boolean-mask indexing inside a loop: {{.*}} [nosync-hidden-sync]
    auto valid_flags = torch::full({grads.size(0)}, false, opts.dtype(torch::kBool));
    auto flagged = grads.index({valid_flags});
    // CHECK-MESSAGES: :[[@LINE-1]]:26: warning: boolean-mask indexing inside a loop: {{.*}} [nosync-hidden-sync]
  }
}

// A view of a mask is a mask, and so is either value of a conditional whose
// one side is. A view of an index stays an index.
struct Splats {
  torch::Tensor alpha, splat_alive, order;
};
void prune_splats(Splats& model, const Splats* prev, const torch::Tensor& grads) {
  torch::Tensor stabilize = prev ? torch::full_like(model.splat_alive, false, torch::kBool) : model.splat_alive;
  for (int step = 0; step < 100; ++step) {
    auto alive_alpha = torch::sigmoid(model.alpha).index({model.splat_alive.squeeze(-1)});
    // CHECK-MESSAGES: :[[@LINE-1]]:52: warning: boolean-mask indexing inside a loop: {{.*}} [nosync-hidden-sync]
    auto s = stabilize.squeeze(-1);
    auto held = grads.index({s});
    // CHECK-MESSAGES: :[[@LINE-1]]:23: warning: boolean-mask indexing inside a loop: {{.*}} [nosync-hidden-sync]
    auto ranked = grads.index({model.order.squeeze(-1)});
    (void)alive_alpha, (void)held, (void)ranked;
  }
}

void train(torch::nn::Linear& model, torch::optim::SGD& optimizer, const torch::Tensor& x, const torch::Tensor& r) {
  for (int step = 0; step < 100; ++step) {
    auto out = model->forward(x);
    auto loss = out.mean();
    loss.backward();
    torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: 'clip_grad_norm_()' inside a loop: this call synchronizes inside{{.*}}; use the sync-free variant{{.*}} [nosync-hidden-sync]
    // CHECK-MESSAGES: :[[@LINE-2]]:5: note: fix-it: nosync::kernels::clip_grad_norm_ clips the same gradients{{.*}}
    // CHECK-FIXES: nosync::kernels::clip_grad_norm_(model->parameters(), 1.0);
    auto params = model->parameters();
    clip_grad_norm_(params, 1.0);
    optimizer.step();

    auto idx = out.nonzero();
    // CHECK-MESSAGES: :[[@LINE-1]]:20: warning: 'nonzero()' inside a loop: {{.*}} [nosync-hidden-sync]
    auto pos = torch::masked_select(out, out > 0);
    // CHECK-MESSAGES: :[[@LINE-1]]:16: warning: 'masked_select()' inside a loop: {{.*}} [nosync-hidden-sync]
    auto uniq = torch::unique_consecutive(r);
    // CHECK-MESSAGES: :[[@LINE-1]]:17: warning: 'unique_consecutive()' inside a loop: {{.*}} [nosync-hidden-sync]
    auto rep = out.repeat_interleave(r);
    // CHECK-MESSAGES: :[[@LINE-1]]:20: warning: 'repeat_interleave()' inside a loop: {{.*}} [nosync-hidden-sync]
    auto mask = out > 0.5;
    auto picked = out.index({mask});
    // CHECK-MESSAGES: :[[@LINE-1]]:23: warning: boolean-mask indexing inside a loop: {{.*}} [nosync-hidden-sync]
    auto picked2 = out[torch::isnan(out)];
    // CHECK-MESSAGES: :[[@LINE-1]]:24: warning: a tensor subscript inside a loop: {{.*}} [nosync-hidden-sync]
    // Tensor::operator[](Tensor) reads its subscript with item(): a device
    // index syncs once per subscript; a host one does not.
    auto best = r.argmax();
    out[best][best] = 0;
    // CHECK-MESSAGES: :[[@LINE-1]]:9: warning: a tensor subscript inside a loop: {{.*}} [nosync-hidden-sync]
    // CHECK-MESSAGES: :[[@LINE-2]]:15: warning: a tensor subscript inside a loop: {{.*}} [nosync-hidden-sync]
    // CHECK-MESSAGES: :[[@LINE-3]]:15: note: a tensor subscript is read on the host with item(){{.*}}
    auto host_row = out[torch::tensor(2)];
    auto gathered_row = out.index({best});
    auto inv = torch::linalg_inv(out.matmul(out.t()));
    // CHECK-MESSAGES: :[[@LINE-1]]:16: warning: 'linalg_inv()' inside a loop: {{.*}} [nosync-hidden-sync]
    // CHECK-MESSAGES: :[[@LINE-2]]:16: note: use the _ex variant{{.*}}
    auto inv_method = out.matmul(out.t()).inverse();
    // CHECK-MESSAGES: :[[@LINE-1]]:43: warning: 'inverse()' inside a loop: {{.*}} [nosync-hidden-sync]
    std::cout << loss << "\n";
    // CHECK-MESSAGES: :[[@LINE-1]]:15: warning: printing a tensor inside a loop: {{.*}} [nosync-hidden-sync]
    bool same = out.equal(x);
    // CHECK-MESSAGES: :[[@LINE-1]]:21: warning: 'equal()' inside a loop: {{.*}} [nosync-hidden-sync]

    auto where_idx = torch::where(out > 0);
    // CHECK-MESSAGES: :[[@LINE-1]]:22: warning: 'where()' inside a loop: {{.*}} [nosync-hidden-sync]
    // CHECK-MESSAGES: :[[@LINE-2]]:22: note: the one-argument where is nonzero(){{.*}}
    auto arg_idx = torch::argwhere(out);
    // CHECK-MESSAGES: :[[@LINE-1]]:20: warning: 'argwhere()' inside a loop: {{.*}} [nosync-hidden-sync]
    auto hist = out.histc(10);
    // CHECK-MESSAGES: :[[@LINE-1]]:21: warning: 'histc()' inside a loop: {{.*}} [nosync-hidden-sync]
    auto counts = torch::bincount(r);
    // CHECK-MESSAGES: :[[@LINE-1]]:19: warning: 'bincount()' inside a loop: {{.*}} [nosync-hidden-sync]
    auto med = out.nanmedian();
    // CHECK-MESSAGES: :[[@LINE-1]]:20: warning: 'nanmedian()' inside a loop: {{.*}} [nosync-hidden-sync]

    // Sync-free forms: not findings.
    auto rep_ok = out.repeat_interleave(r, /*dim=*/0, /*output_size=*/16);
    auto rep_int = out.repeat_interleave(3);
    auto sel = torch::where(mask, out, torch::zeros_like(out));
    auto inv_ex = torch::linalg_inv_ex(out.matmul(out.t()));
    auto first = out.index({0});
    auto rows = out.index({torch::indexing::Slice(0, 2)});
    std::cout << out.sizes() << "\n";
    // Sampling and permutations on the device do not read back (ops.def).
    auto drawn = torch::multinomial(out.softmax(-1), 1);
    auto perm = torch::randperm(16, out.options());
    // Host tensors never sync.
    auto host = torch::arange(10);
    auto host_idx = host.nonzero();
    auto host_perm = torch::randperm(16);
    auto host_counts = torch::bincount(host);
    // histc given its range does not read the data's range.
    auto hist_ranged = out.histc(10, 0, 1);
    (void)idx, (void)pos, (void)uniq, (void)rep, (void)picked, (void)picked2, (void)inv, (void)same;
    (void)where_idx, (void)arg_idx, (void)drawn, (void)perm, (void)hist, (void)counts, (void)med;
    (void)rep_ok, (void)rep_int, (void)sel, (void)inv_ex, (void)first, (void)rows, (void)host_idx;
    (void)host_perm, (void)host_counts, (void)hist_ranged;
  }
}

// Non-maximum suppression on a host copy: `kept` is moved to the CPU before
// the loop, and every assignment in the loop computes it from itself, so it
// is still on the CPU each turn. Moving it back in the loop undoes that.
void suppress(const torch::Tensor& detections) {
  for (int cls = 0; cls < 80; ++cls) {
    auto kept = detections.select(1, 5) * cls;
    kept = kept.cpu();
    for (int i = 0; i < 10; ++i) {
      auto keep = torch::nonzero(kept).squeeze();
      kept = kept.index_select(0, keep);
    }
    auto moved = kept.clone();
    moved = moved.cpu();
    for (int i = 0; i < 10; ++i) {
      auto keep = torch::nonzero(moved).squeeze();
      // CHECK-MESSAGES: :[[@LINE-1]]:19: warning: 'nonzero()' inside a loop: {{.*}} [nosync-hidden-sync]
      moved = moved.index_select(0, keep).to(torch::kCUDA);
    }
  }
}

int main() {
  torch::nn::Linear model(3, 1);
  torch::optim::SGD optimizer(model->parameters(), 0.1);
  auto x = torch::randn({8, 3}, torch::kCUDA);
  train(model, optimizer, x, torch::ones({8}, torch::TensorOptions().dtype(torch::kLong).device(torch::kCUDA)));
  return 0;
}
