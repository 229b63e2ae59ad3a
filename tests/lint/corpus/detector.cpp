// A small single-stage detector (centre-sampled, FCOS/CenterNet flavour) on
// synthetic images of coloured rectangles. Hand-written focal loss, custom
// gradient clipping (a per-parameter version and a sync-free foreach one),
// greedy NMS without torchvision, per-epoch validation, host-side final decode.
#include <torch/torch.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <random>
#include <utility>
#include <vector>

namespace {

constexpr int64_t kImageSize = 64, kStride = 8, kGrid = kImageSize / kStride;
constexpr int64_t kNumClasses = 3;
constexpr int64_t kBatchSize = 16;
constexpr int64_t kEpochs = 12, kItersPerEpoch = 100, kValIters = 10;
constexpr int64_t kLogEvery = 25;
constexpr double kMaxGradNorm = 10.0, kScoreThreshold = 0.3, kNmsIou = 0.5;
constexpr bool kForeachClip = false;

struct Detection {
  int64_t image, label;
  float score;
  std::array<float, 4> box;
};

// Images [B, 3, 64, 64] and targets [N, 6] = (image, class, x1, y1, x2, y2), on the CPU.
std::pair<torch::Tensor, torch::Tensor> make_batch(std::mt19937& rng, int64_t batch) {
  std::uniform_int_distribution<int> count(1, 3), cls(0, kNumClasses - 1), pos(0, 40), size(8, 23);
  auto images = torch::rand({batch, 3, kImageSize, kImageSize}) * 0.2;
  std::vector<float> rows;
  for (int64_t b = 0; b < batch; ++b) {
    for (int n = count(rng); n > 0; --n) {
      const int c = cls(rng), x = pos(rng), y = pos(rng), w = size(rng), h = size(rng);
      images[b][c].slice(0, y, y + h).slice(1, x, x + w).fill_(1.0);
      rows.insert(rows.end(), {float(b), float(c), float(x), float(y), float(x + w), float(y + h)});
    }
  }
  auto targets = torch::tensor(rows).view({-1, 6});
  return {images, targets};
}

at::Tensor box_iou(const at::Tensor& a, const at::Tensor& b) {
  auto area = [](const at::Tensor& t) { return (t.select(1, 2) - t.select(1, 0)) * (t.select(1, 3) - t.select(1, 1)); };
  auto lt = torch::max(a.slice(1, 0, 2).unsqueeze(1), b.slice(1, 0, 2).unsqueeze(0));
  auto rb = torch::min(a.slice(1, 2, 4).unsqueeze(1), b.slice(1, 2, 4).unsqueeze(0));
  auto wh = (rb - lt).clamp_min(0);
  auto inter = wh.select(2, 0) * wh.select(2, 1);
  return inter / (area(a).unsqueeze(1) + area(b).unsqueeze(0) - inter);
}

struct DetectorImpl : torch::nn::Module {
  DetectorImpl() {
    using namespace torch::nn;
    backbone = register_module("backbone", Sequential());
    int64_t in = 3;
    for (int64_t out : {32, 64, 128}) {
      backbone->push_back(Conv2d(Conv2dOptions(in, out, 3).stride(2).padding(1).bias(false)));
      backbone->push_back(BatchNorm2d(out));
      backbone->push_back(ReLU());
      in = out;
    }
    head = register_module("head", Conv2d(Conv2dOptions(128, kNumClasses + 4, 1)));
  }

  // Per grid cell: class logits [B, G*G, C] and box (x1, y1, x2, y2) / image size [B, G*G, 4].
  std::pair<torch::Tensor, torch::Tensor> forward(const torch::Tensor& images) {
    auto out = head->forward(backbone->forward(images)).flatten(2).transpose(1, 2);
    return {out.slice(2, 0, kNumClasses), out.slice(2, kNumClasses).sigmoid()};
  }

  torch::nn::Sequential backbone{nullptr};
  torch::nn::Conv2d head{nullptr};
};
TORCH_MODULE(Detector);

// Centre sampling: the cell holding a box centre is positive for the box's class.
std::pair<torch::Tensor, torch::Tensor> assign_targets(const torch::Tensor& targets, int64_t batch) {
  auto cls_t = torch::zeros({batch, kGrid * kGrid, kNumClasses}, targets.options());
  auto box_t = torch::zeros({batch, kGrid * kGrid, 4}, targets.options());
  auto image = targets.select(1, 0).to(torch::kLong);  // expect-none: nosync-device-to-host
  auto label = targets.select(1, 1).to(torch::kLong);
  auto xyxy = targets.slice(1, 2, 6);
  auto centre = (xyxy.slice(1, 0, 2) + xyxy.slice(1, 2, 4)) / 2;
  auto cell = (centre / kStride).floor().to(torch::kLong).clamp(0, kGrid - 1);
  auto flat = cell.select(1, 1) * kGrid + cell.select(1, 0);
  cls_t.index_put_({image, flat, label}, 1.0);  // expect-none: nosync-hidden-sync
  box_t.index_put_({image, flat}, xyxy / kImageSize);  // expect-none: nosync-hidden-sync
  return {cls_t, box_t};
}

struct Losses {
  torch::Tensor cls, box, total;
};

Losses detection_loss(const torch::Tensor& cls_logits, const torch::Tensor& box_pred, const torch::Tensor& cls_t,
                      const torch::Tensor& box_t) {
  auto p = torch::sigmoid(cls_logits);
  auto ce = torch::binary_cross_entropy_with_logits(cls_logits, cls_t, {}, {}, torch::Reduction::None);
  auto p_t = p * cls_t + (1 - p) * (1 - cls_t);
  auto focal = ce * (1 - p_t).pow(2.0) * (0.25 * cls_t + 0.75 * (1 - cls_t));
  auto pos = cls_t.amax(-1) > 0;
  const int64_t num_pos = std::max<int64_t>(pos.sum().item().to<int64_t>(), 1);  // expect: nosync-item
  auto box = torch::smooth_l1_loss(box_pred.index({pos}), box_t.index({pos}), torch::Reduction::Sum) / num_pos;  // expect: nosync-hidden-sync
  auto cls = focal.sum() / num_pos;
  TORCH_CHECK(torch::isfinite(cls + box).item<bool>(), "non-finite detection loss");  // expect: nosync-bool-condition
  return {cls, box, cls + 5.0 * box};
}

// Per-parameter clipping as found in many detection code bases; returns the global norm.
torch::Tensor clip_gradients(const std::vector<torch::Tensor>& params, double max_norm) {
  auto total = torch::zeros({}, params.front().options());
  for (const auto& p : params) {  // expect: nosync-launch-loop@+0..+3
    if (!p.grad().defined()) continue;
    total += p.grad().pow(2).sum();
  }
  total = total.sqrt();
  auto coef = torch::clamp_max(max_norm / (total + 1e-6), 1.0);
  for (const auto& p : params) {  // expect: nosync-launch-loop@+0..+2
    if (p.grad().defined()) p.grad().mul_(coef);
  }
  return total;
}

namespace det {
// Sync-free global-norm clipping: a few multi-tensor launches, the norm stays on the device.
torch::Tensor clip_grad_norm_(std::vector<torch::Tensor> grads, double max_norm) {
  auto norms = torch::_foreach_norm(grads, 2);
  auto total = torch::linalg_vector_norm(torch::stack(norms), 2, c10::nullopt, false, c10::nullopt);
  auto coef = torch::clamp_max(max_norm / (total + 1e-6), 1.0);
  torch::_foreach_mul_(grads, coef);
  return total;
}
}  // namespace det

// Greedy NMS on the device, as hand-written without torchvision.
torch::Tensor nms(const torch::Tensor& boxes, const torch::Tensor& scores, double iou_threshold) {
  auto order = scores.argsort(0, /*descending=*/true);
  std::vector<int64_t> keep;
  while (order.numel() > 0) {  // expect-none: nosync-bool-condition
    const int64_t i = order[0].item<int64_t>();  // expect: nosync-item
    keep.push_back(i);
    if (order.numel() == 1) break;
    auto rest = order.slice(0, 1);
    auto ious = box_iou(boxes[i].unsqueeze(0), boxes.index_select(0, rest)).squeeze(0);
    order = rest.index({ious <= iou_threshold});  // expect: nosync-hidden-sync
  }
  return torch::tensor(keep, torch::kLong).to(boxes.device());  // expect: nosync-pageable-h2d
}

std::vector<Detection> postprocess(const torch::Tensor& cls_logits, const torch::Tensor& box_pred) {
  std::vector<Detection> out;
  auto scores = torch::sigmoid(cls_logits);
  for (int64_t b = 0; b < scores.size(0); ++b) {
    auto [best, labels] = scores[b].max(-1);
    auto keep = torch::nonzero(best > kScoreThreshold).squeeze(1);  // expect: nosync-hidden-sync
    auto boxes = box_pred[b].index_select(0, keep) * kImageSize;
    auto kept_scores = best.index_select(0, keep);
    auto kept_labels = labels.index_select(0, keep);
    auto classes = std::get<0>(torch::_unique(kept_labels));  // expect: nosync-hidden-sync
    auto classes_cpu = classes.cpu();  // expect: nosync-device-to-host
    for (int64_t k = 0; k < classes_cpu.numel(); ++k) {
      const int64_t c = classes_cpu[k].item<int64_t>();  // expect-none: nosync-item
      auto idx = torch::nonzero(kept_labels == c).squeeze(1);  // expect: nosync-hidden-sync
      auto cls_boxes = boxes.index_select(0, idx), cls_scores = kept_scores.index_select(0, idx);
      auto kept = nms(cls_boxes, cls_scores, kNmsIou);
      auto rows = torch::cat({cls_boxes.index_select(0, kept), cls_scores.index_select(0, kept).unsqueeze(1)}, 1)
                      .cpu();  // expect: nosync-device-to-host@-1
      auto r = rows.accessor<float, 2>();
      for (int64_t j = 0; j < r.size(0); ++j) out.push_back({b, c, r[j][4], {r[j][0], r[j][1], r[j][2], r[j][3]}});
    }
  }
  return out;
}

// Recall at IoU 0.5 on fresh synthetic batches; called once per epoch.
double evaluate(Detector& model, std::mt19937& rng, torch::Device device) {
  torch::NoGradGuard no_grad;
  model->eval();
  int64_t found = 0, total = 0;
  for (int64_t it = 0; it < kValIters; ++it) {
    auto [images, targets] = make_batch(rng, kBatchSize);
    auto [cls_logits, box_pred] = model->forward(images.to(device));  // expect: nosync-pageable-h2d
    auto dets = postprocess(cls_logits, box_pred);
    auto t = targets.accessor<float, 2>();
    for (int64_t g = 0; g < t.size(0); ++g, ++total) {
      const bool hit = std::any_of(dets.begin(), dets.end(), [&](const Detection& d) {
        const float ix = std::min(d.box[2], t[g][4]) - std::max(d.box[0], t[g][2]);
        const float iy = std::min(d.box[3], t[g][5]) - std::max(d.box[1], t[g][3]);
        const float inter = std::max(ix, 0.0f) * std::max(iy, 0.0f);
        const float uni = (d.box[2] - d.box[0]) * (d.box[3] - d.box[1]) + (t[g][4] - t[g][2]) * (t[g][5] - t[g][3]) - inter;
        return d.image == int64_t(t[g][0]) && d.label == int64_t(t[g][1]) && inter / uni >= 0.5f;
      });
      found += hit ? 1 : 0;
    }
  }
  return total > 0 ? static_cast<double>(found) / total : 0.0;
}

}  // namespace

int main() {
  torch::manual_seed(0);
  std::mt19937 rng(0);
  torch::Device device(torch::cuda::is_available() ? torch::kCUDA : torch::kCPU);
  Detector model;
  model->to(device);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9).weight_decay(1e-4));
  auto loss_sum = torch::zeros({}, torch::TensorOptions().device(device));
  std::vector<float> cls_history;

  for (int64_t epoch = 0; epoch < kEpochs; ++epoch) {
    model->train();
    double batch_ms = 0.0;
    for (int64_t it = 0; it < kItersPerEpoch; ++it) {
      const auto iter_start = std::chrono::steady_clock::now();
      auto [images, targets] = make_batch(rng, kBatchSize);
      images = images.pin_memory().to(device, /*non_blocking=*/true);  // expect-none: nosync-pageable-h2d
      targets = targets.to(device);  // expect: nosync-pageable-h2d
      auto [cls_logits, box_pred] = model->forward(images);
      auto [cls_t, box_t] = assign_targets(targets, kBatchSize);
      Losses losses = detection_loss(cls_logits, box_pred, cls_t, box_t);
      optimizer.zero_grad();
      losses.total.backward();

      std::vector<torch::Tensor> grads;
      for (const auto& p : model->parameters()) {  // expect-none: nosync-launch-loop@+0..+2
        if (p.grad().defined()) grads.push_back(p.grad());
      }
      torch::Tensor grad_norm =
          kForeachClip ? det::clip_grad_norm_(grads, kMaxGradNorm) : clip_gradients(model->parameters(), kMaxGradNorm);  // expect-none: nosync-hidden-sync, nosync-bool-condition
      optimizer.step();
      if (device.is_cuda()) torch::cuda::synchronize();  // expect: nosync-explicit-sync
      batch_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - iter_start).count();
      loss_sum += losses.total.detach();
      cls_history.push_back(losses.cls.detach().cpu().data_ptr<float>()[0]);  // expect: nosync-item

      if (it % kLogEvery == 0) {
        std::cout << "epoch " << epoch << " iter " << it
                  << " loss " << losses.total.item<float>()  // expect-note: nosync-item
                  << " grad_norm " << grad_norm << std::endl;  // expect-note: nosync-hidden-sync
      }
    }
    const double recall = evaluate(model, rng, device);
    std::printf("epoch %ld: mean loss %.4f, recall@0.5 %.3f, %.1f ms/iter, last cls loss %.4f\n", epoch,
                loss_sum.item<float>() / kItersPerEpoch, recall, batch_ms / kItersPerEpoch,  // expect: nosync-item
                cls_history.back());
    loss_sum.zero_();
  }

  // Final decode for a report, on the host: one copy, then CPU work only.
  torch::NoGradGuard no_grad;
  model->eval();
  auto [images, targets] = make_batch(rng, 4);
  auto [cls_logits, box_pred] = model->forward(images.to(device));  // expect-note: nosync-pageable-h2d
  auto scores = torch::sigmoid(cls_logits).cpu();  // expect-note: nosync-device-to-host
  auto boxes = (box_pred * kImageSize).cpu();  // expect-note: nosync-device-to-host
  for (int64_t b = 0; b < scores.size(0); ++b) {
    auto [best, labels] = scores[b].max(-1);
    auto mask = best > kScoreThreshold;
    auto kept_boxes = boxes[b].index({mask});  // expect-none: nosync-hidden-sync
    auto kept_scores = best.masked_select(mask);
    auto kept_labels = labels.masked_select(mask);
    std::printf("image %ld: %ld boxes above %.2f\n", b, kept_boxes.size(0), kScoreThreshold);
    for (int64_t k = 0; k < kept_scores.numel(); ++k) {
      std::printf("  class %ld score %.3f\n", kept_labels[k].item<int64_t>(), kept_scores[k].item<float>());  // expect-none: nosync-item
    }
  }
  std::cout << "targets:\n" << targets << '\n';  // expect-none: nosync-hidden-sync
  return 0;
}
