// Fixture for nosync-item in code the compiler dropped. `make_loader` is not
// declared (as when its header was not found), so `loader` has no type and
// Clang leaves every range-for over it out of the AST, body and all. The
// check reads the calls of the dropped text (utils/DroppedCode.h); the
// context comes from the AST around it and from the dropped loops.
#include <torch/torch.h>

#include <iostream>

#define VERBOSE 0
constexpr bool kQuiet = true;
constexpr bool kShowLoss = true;

void train(torch::nn::Linear& model, torch::optim::SGD& optimizer) {
  float total_seen = 0;
  auto loader = make_loader("data/");
  // CHECK-MESSAGES: :[[@LINE-1]]:17: error: use of undeclared identifier 'make_loader' [clang-diagnostic-error]
  for (int epoch = 0; epoch < 10; ++epoch) {
    double total = 0;
    for (torch::data::Example<>& batch : *loader) {
      auto loss = model->forward(batch.data).mean();
      total += loss.item<double>();
      // CHECK-MESSAGES: :[[@LINE-1]]:21: warning: 'item()' (in a statement that did not compile, read from its text) inside a loop: {{.*}} [nosync-item]
    }
    if (epoch % 5 == 0) {
      for (auto& batch : *loader) {
        std::cout << model->forward(batch.data).mean().item<float>() << "\n";
        // CHECK-MESSAGES: :[[@LINE-1]]:56: remark: 'item()' (in a statement that did not compile, read from its text) in throttled code{{.*}} [nosync-item]
      }
    }
  }
  // An `if (i % n == 0)` inside the dropped text throttles like one in the
  // AST; its `else`, and the statement after a braceless one, do not.
  for (auto& batch : *loader) {
    int step = batch.data.size(0);
    if (step % 50 == 0) std::cout << model->forward(batch.data).sum().item<float>();
    // CHECK-MESSAGES: :[[@LINE-1]]:71: remark: 'item()' (in a statement that did not compile, read from its text) in throttled code{{.*}} [nosync-item]
    if (step % 10 == 0) {
      std::cout << model->forward(batch.data).max().item<float>();
      // CHECK-MESSAGES: :[[@LINE-1]]:53: remark: 'item()' (in a statement that did not compile, read from its text) in throttled code{{.*}} [nosync-item]
    } else {
      total_seen += model->forward(batch.data).min().item<float>();
      // CHECK-MESSAGES: :[[@LINE-1]]:54: warning: 'item()' (in a statement that did not compile, read from its text) inside a loop: {{.*}} [nosync-item]
    }
  }
  // An `if` of the dropped text whose condition the build fixes false (a
  // macro defined as 0, `!` of a constexpr true) never runs what it holds; a
  // condition fixed true is no condition.
  for (auto& batch : *loader) {
    if (VERBOSE) std::cout << model->forward(batch.data).sum().item<float>();
    // CHECK-MESSAGES: :[[@LINE-1]]:64: remark: 'item()' (in a statement that did not compile, read from its text) in a branch this build never takes{{.*}} [nosync-item]
    if (!kQuiet) {
      std::cout << model->forward(batch.data).max().item<float>();
      // CHECK-MESSAGES: :[[@LINE-1]]:53: remark: 'item()' (in a statement that did not compile, read from its text) in a branch this build never takes{{.*}} [nosync-item]
    }
    if (kShowLoss) std::cout << model->forward(batch.data).min().item<float>();
    // CHECK-MESSAGES: :[[@LINE-1]]:66: warning: 'item()' (in a statement that did not compile, read from its text) inside a loop: {{.*}} [nosync-item]
  }
  // A dropped loop is a loop: its calls run once per batch.
  for (auto& batch : *loader) std::cout << model->forward(batch.data).sum().item<float>();
  // CHECK-MESSAGES: :[[@LINE-1]]:77: warning: 'item()' (in a statement that did not compile, read from its text) inside a loop: {{.*}} [nosync-item]
#if 0
  for (auto& batch : *loader) std::cout << batch.data.sum().item<float>();
#endif
  // A host factory's result read in the dropped text (a random crop in a
  // transform): no device, nothing to wait for. With a device it is a read.
  for (auto& batch : *loader) {
    int64_t offset = torch::randint(0, batch.data.size(0), {1}).item<int64_t>();
    float first = torch::zeros({1}, batch.data.options()).item<float>();
    // CHECK-MESSAGES: :[[@LINE-1]]:59: warning: 'item()' (in a statement that did not compile, read from its text) inside a loop: {{.*}} [nosync-item]
  }
  // Not an op of this rule, and a user's own function named like one.
  for (auto& batch : *loader) {
    auto n = batch.data.numel();
    item(batch);
  }
}

// A statement the compiler kept with an error inside: `score`'s initializer
// calls a function nobody declared. The declaration stays in the AST, its
// initializer a recovery expression the matchers do not look into; the text
// is read instead, the calls the compiler did resolve in it too (where a
// matcher reports one of them as well, its finding stays, not the text's).
void evaluate(torch::nn::Linear& model) {
  float seen = 0;
  for (int step = 0; step < 100; ++step) {
    auto logits = model->forward(torch::randn({4, 8}));
    float score = rescale_scores(logits).sum().item<float>();
    // CHECK-MESSAGES: :[[@LINE-1]]:19: error: use of undeclared identifier 'rescale_scores' [clang-diagnostic-error]
    // CHECK-MESSAGES: :[[@LINE-2]]:48: warning: 'item()' (in a statement that did not compile, read from its text) inside a loop: {{.*}} [nosync-item]
    float both = logits.max().item<float>() + rescale_scores(logits).min().item<float>();
    // CHECK-MESSAGES: :[[@LINE-1]]:31: warning: 'item()' (in a statement that did not compile, read from its text) inside a loop: {{.*}} [nosync-item]
    // CHECK-MESSAGES: :[[@LINE-2]]:47: error: use of undeclared identifier 'rescale_scores' [clang-diagnostic-error]
    // CHECK-MESSAGES: :[[@LINE-3]]:76: warning: 'item()' (in a statement that did not compile, read from its text) inside a loop: {{.*}} [nosync-item]
    // `acc.template item<float>()` names the member after `template`.
    for (auto& batch : *make_loader("val/")) seen += batch.data.sum().template item<float>();
    // CHECK-MESSAGES: :[[@LINE-1]]:25: error: use of undeclared identifier 'make_loader' [clang-diagnostic-error]
    // CHECK-MESSAGES: :[[@LINE-2]]:80: warning: 'item()' (in a statement that did not compile, read from its text) inside a loop: {{.*}} [nosync-item]
    // The body of a branch written without braces is no statement of a
    // block: it is read on its own.
    if (step % 10 == 0) seen += rescale_scores(logits).max().item<float>();
    // CHECK-MESSAGES: :[[@LINE-1]]:33: error: use of undeclared identifier 'rescale_scores' [clang-diagnostic-error]
    // CHECK-MESSAGES: :[[@LINE-2]]:62: remark: 'item()' (in a statement that did not compile, read from its text) in throttled code{{.*}} [nosync-item]
    (void)score;
    (void)both;
  }
}
