// Character-level GPT (nanoGPT-style) on a synthetic text: causal self-attention,
// AdamW with decay/no-decay groups, warm-up + cosine schedule, gradient
// accumulation, periodic loss estimates and samples, and a sampling mode that
// reads prompts from stdin (`./transformer_lm --sample`).
#include <torch/cuda.h>
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace {

constexpr int64_t kBlockSize = 64, kBatchSize = 32, kGradAccum = 2;
constexpr int64_t kEmbed = 128, kHeads = 4, kLayers = 4;
constexpr int64_t kMaxIters = 3000, kWarmupIters = 100;
constexpr int64_t kEvalInterval = 250, kEvalIters = 20, kLogInterval = 10, kSampleInterval = 500;
constexpr double kLearningRate = 1e-3, kMinLr = 1e-4;
constexpr double kPi = 3.14159265358979323846;

struct Vocab {
  std::map<char, int64_t> stoi;
  std::vector<char> itos;
  int64_t eos = 0;
};

std::string synthetic_text(size_t sentences) {
  const std::vector<std::string> subjects = {"the cat", "a dog", "my model", "the gpu", "our loss"};
  const std::vector<std::string> verbs = {"waits for", "chases", "syncs with", "ignores", "beats"};
  const std::vector<std::string> objects = {"the host.", "a tensor.", "the queue.", "every kernel.", "the batch."};
  std::mt19937 rng(42);
  std::string text;
  for (size_t i = 0; i < sentences; ++i) {
    text += subjects[rng() % subjects.size()] + " " + verbs[rng() % verbs.size()] + " " +
            objects[rng() % objects.size()] + "\n";
  }
  return text;
}

std::vector<int64_t> encode(const std::string& s, const Vocab& v) {
  std::vector<int64_t> ids;
  for (char c : s) ids.push_back(v.stoi.count(c) ? v.stoi.at(c) : v.eos);
  return ids;
}

std::string decode(const std::vector<int64_t>& ids, const Vocab& v) {
  std::string s;
  for (int64_t id : ids) s += v.itos.at(id);
  return s;
}

struct CausalSelfAttentionImpl : torch::nn::Module {
  CausalSelfAttentionImpl()
      : c_attn(register_module("c_attn", torch::nn::Linear(kEmbed, 3 * kEmbed))),
        c_proj(register_module("c_proj", torch::nn::Linear(kEmbed, kEmbed))) {}

  torch::Tensor forward(const torch::Tensor& x) {
    const int64_t B = x.size(0), T = x.size(1), hs = kEmbed / kHeads;
    auto qkv = c_attn->forward(x).split(kEmbed, 2);
    auto q = qkv[0].view({B, T, kHeads, hs}).transpose(1, 2);
    auto k = qkv[1].view({B, T, kHeads, hs}).transpose(1, 2);
    auto v = qkv[2].view({B, T, kHeads, hs}).transpose(1, 2);
    auto att = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(hs));
    auto mask = torch::ones({T, T}).tril().to(x.device());  // expect: nosync-pageable-h2d
    att = att.masked_fill(mask == 0, -std::numeric_limits<float>::infinity());
    auto y = torch::matmul(torch::softmax(att, -1), v);
    return c_proj->forward(y.transpose(1, 2).contiguous().view({B, T, kEmbed}));
  }

  torch::nn::Linear c_attn, c_proj;
};
TORCH_MODULE(CausalSelfAttention);

struct BlockImpl : torch::nn::Module {
  BlockImpl() {
    ln1 = register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({kEmbed})));
    attn = register_module("attn", CausalSelfAttention());
    ln2 = register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({kEmbed})));
    fc = register_module("fc", torch::nn::Linear(kEmbed, 4 * kEmbed));
    proj = register_module("proj", torch::nn::Linear(4 * kEmbed, kEmbed));
  }
  torch::Tensor forward(torch::Tensor x) {
    x = x + attn->forward(ln1->forward(x));
    return x + proj->forward(torch::gelu(fc->forward(ln2->forward(x))));
  }
  torch::nn::LayerNorm ln1{nullptr}, ln2{nullptr};
  CausalSelfAttention attn{nullptr};
  torch::nn::Linear fc{nullptr}, proj{nullptr};
};
TORCH_MODULE(Block);

struct GPTImpl : torch::nn::Module {
  explicit GPTImpl(int64_t vocab_size) {
    wte = register_module("wte", torch::nn::Embedding(vocab_size, kEmbed));
    wpe = register_module("wpe", torch::nn::Embedding(kBlockSize, kEmbed));
    blocks = register_module("blocks", torch::nn::ModuleList());
    for (int64_t i = 0; i < kLayers; ++i) blocks->push_back(Block());
    ln_f = register_module("ln_f", torch::nn::LayerNorm(torch::nn::LayerNormOptions({kEmbed})));
    lm_head = register_module("lm_head", torch::nn::Linear(torch::nn::LinearOptions(kEmbed, vocab_size).bias(false)));
    lm_head->weight = wte->weight;  // weight tying
  }

  torch::Tensor forward(const torch::Tensor& idx) {
    const int64_t T = idx.size(1);
    auto pos = torch::arange(T, torch::TensorOptions().dtype(torch::kLong).device(idx.device()));  // expect-none: nosync-pageable-h2d
    auto x = wte->forward(idx) + wpe->forward(pos);
    for (const auto& block : *blocks) {  // expect-none: nosync-launch-loop@+0..+2
      x = block->as<BlockImpl>()->forward(x);
    }
    return lm_head->forward(ln_f->forward(x));
  }

  torch::Tensor loss(const torch::Tensor& idx, const torch::Tensor& targets) {
    auto logits = forward(idx);
    return torch::nn::functional::cross_entropy(logits.view({-1, logits.size(-1)}), targets.view(-1));
  }

  torch::nn::Embedding wte{nullptr}, wpe{nullptr};
  torch::nn::ModuleList blocks{nullptr};
  torch::nn::LayerNorm ln_f{nullptr};
  torch::nn::Linear lm_head{nullptr};
};
TORCH_MODULE(GPT);

// Random windows of the token stream, as nanoGPT's get_batch.
std::pair<torch::Tensor, torch::Tensor> get_batch(const torch::Tensor& data, torch::Device device) {
  auto ix = torch::randint(data.size(0) - kBlockSize - 1, {kBatchSize}, torch::kLong);
  std::vector<torch::Tensor> xs, ys;
  for (int64_t b = 0; b < kBatchSize; ++b) {
    const int64_t i = ix[b].item<int64_t>();  // expect-none: nosync-item
    xs.push_back(data.slice(0, i, i + kBlockSize));
    ys.push_back(data.slice(0, i + 1, i + 1 + kBlockSize));
  }
  auto x = torch::stack(xs).pin_memory().to(device, /*non_blocking=*/true);  // expect-none: nosync-pageable-h2d
  auto y = torch::stack(ys).to(device);  // expect: nosync-pageable-h2d
  return {x, y};
}

std::pair<float, float> estimate_loss(GPT& model, const torch::Tensor& train_data, const torch::Tensor& val_data,
                                      torch::Device device) {
  torch::NoGradGuard no_grad;
  model->eval();
  auto eval_split = [&](const torch::Tensor& data) {
    auto losses = torch::zeros({kEvalIters});
    for (int64_t k = 0; k < kEvalIters; ++k) {
      auto [x, y] = get_batch(data, device);
      losses[k] = model->loss(x, y).item<float>();  // expect-note: nosync-item
    }
    return losses.mean().item<float>();  // expect-none: nosync-item
  };
  std::pair<float, float> out{eval_split(train_data), eval_split(val_data)};
  model->train();
  return out;
}

torch::Tensor generate(GPT& model, torch::Tensor idx, int64_t max_new_tokens, double temperature, int64_t top_k,
                       int64_t eos_id) {
  torch::NoGradGuard no_grad;
  for (int64_t i = 0; i < max_new_tokens; ++i) {
    auto idx_cond = idx.size(1) <= kBlockSize ? idx : idx.slice(1, idx.size(1) - kBlockSize);
    auto logits = model->forward(idx_cond).select(1, -1) / temperature;
    if (top_k > 0) {
      auto kth = std::get<0>(logits.topk(std::min(top_k, logits.size(-1)))).select(-1, -1).unsqueeze(-1);
      logits = logits.masked_fill(logits < kth, -std::numeric_limits<float>::infinity());
    }
    auto next = torch::multinomial(torch::softmax(logits, -1), 1);  // expect-none: nosync-hidden-sync
    idx = torch::cat({idx, next}, 1);
    if (next.item<int64_t>() == eos_id) break;  // expect: nosync-bool-condition
  }
  return idx;
}

double lr_at(int64_t it) {
  if (it < kWarmupIters) return kLearningRate * (it + 1) / kWarmupIters;
  const double ratio = static_cast<double>(it - kWarmupIters) / (kMaxIters - kWarmupIters);
  return kMinLr + 0.5 * (1.0 + std::cos(kPi * ratio)) * (kLearningRate - kMinLr);
}

}  // namespace

int main(int argc, char** argv) {
  torch::manual_seed(1337);
  torch::Device device(torch::cuda::is_available() ? torch::kCUDA : torch::kCPU);
  const std::string text = synthetic_text(20000);
  Vocab vocab;
  for (char c : text) {
    if (!vocab.stoi.count(c)) {
      vocab.stoi[c] = static_cast<int64_t>(vocab.itos.size());
      vocab.itos.push_back(c);
    }
  }
  vocab.eos = vocab.stoi.at('\n');

  GPT model(static_cast<int64_t>(vocab.itos.size()));
  model->to(device);

  if (argc > 1 && std::string(argv[1]) == "--sample") {
    TORCH_CHECK(torch::cuda::is_available(), "--sample needs a CUDA device");  // expect-none: nosync-bool-condition
    torch::load(model, "gpt_char.pt");
    model->eval();
    std::string prompt;
    while (std::getline(std::cin, prompt)) {
      const auto start = std::chrono::steady_clock::now();
      auto idx = torch::tensor(encode(prompt, vocab), torch::kLong).unsqueeze(0).cuda();  // expect: nosync-pageable-h2d
      auto out = generate(model, idx, 200, 0.8, 40, vocab.eos).squeeze(0);
      torch::cuda::synchronize();  // expect: nosync-explicit-sync
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      auto host = out.to(torch::kCPU);  // expect: nosync-device-to-host
      std::vector<int64_t> ids(host.data_ptr<int64_t>(), host.data_ptr<int64_t>() + host.numel());
      std::cout << decode(ids, vocab) << " (" << ms << " ms)\n";
    }
    return 0;
  }

  auto data = torch::tensor(encode(text, vocab), torch::kLong);
  const int64_t n_train = data.size(0) * 9 / 10;
  auto train_data = data.slice(0, 0, n_train), val_data = data.slice(0, n_train);

  std::vector<torch::Tensor> decay, no_decay;
  int64_t n_params = 0;
  for (const auto& p : model->named_parameters()) {  // expect-none: nosync-launch-loop@+0..+3
    (p.value().dim() >= 2 ? decay : no_decay).push_back(p.value());
    n_params += p.value().numel();
  }
  std::printf("%ld parameters, vocab %zu\n", n_params, vocab.itos.size());
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(decay, std::make_unique<torch::optim::AdamWOptions>(
                                 torch::optim::AdamWOptions(kLearningRate).weight_decay(0.1).betas(std::make_tuple(0.9, 0.95))));
  groups.emplace_back(no_decay, std::make_unique<torch::optim::AdamWOptions>(
                                    torch::optim::AdamWOptions(kLearningRate).weight_decay(0.0).betas(std::make_tuple(0.9, 0.95))));
  torch::optim::AdamW optimizer(groups, torch::optim::AdamWOptions(kLearningRate));

  float best_val_loss = std::numeric_limits<float>::infinity();
  auto t0 = std::chrono::steady_clock::now();
  for (int64_t iter = 0; iter < kMaxIters; ++iter) {
    const double lr = lr_at(iter);
    for (auto& group : optimizer.param_groups()) {  // expect-none: nosync-launch-loop@+0..+2
      static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
    }

    if (iter % kEvalInterval == 0 || iter == kMaxIters - 1) {
      auto [train_loss, val_loss] = estimate_loss(model, train_data, val_data, device);
      std::printf("step %ld: train loss %.4f, val loss %.4f\n", iter, train_loss, val_loss);
      if (val_loss < best_val_loss) {
        best_val_loss = val_loss;
        torch::save(model, "gpt_char.pt");
      }
    }

    torch::Tensor loss;
    for (int64_t micro = 0; micro < kGradAccum; ++micro) {
      auto [x, y] = get_batch(train_data, device);
      loss = model->loss(x, y) / kGradAccum;
      loss.backward();
    }
    torch::nn::utils::clip_grad_value_(model->parameters(), 1.0);  // expect-none: nosync-hidden-sync
    optimizer.step();
    optimizer.zero_grad();

    if (iter % kLogInterval == 0) {
      if (device.is_cuda()) torch::cuda::synchronize();  // expect-note: nosync-explicit-sync
      const auto t1 = std::chrono::steady_clock::now();
      const double ms = std::chrono::duration<double, std::milli>(t1 - t0).count() / kLogInterval;
      t0 = t1;
      std::printf("iter %ld: loss %.4f, %.1f ms/iter, lr %.2e\n", iter,
                  loss.item<float>() * kGradAccum, ms, lr);  // expect-note: nosync-item
    }

    if (iter > 0 && iter % kSampleInterval == 0) {
      auto ctx = torch::full({1, 1}, vocab.eos, torch::TensorOptions().dtype(torch::kLong).device(device));
      auto out = generate(model, ctx, 120, 1.0, 20, vocab.eos).squeeze(0).cpu();  // expect-note: nosync-device-to-host
      std::vector<int64_t> ids(out.data_ptr<int64_t>(), out.data_ptr<int64_t>() + out.numel());
      std::cout << "---\n" << decode(ids, vocab) << "---\n";
      model->train();
    }
  }
  return 0;
}
