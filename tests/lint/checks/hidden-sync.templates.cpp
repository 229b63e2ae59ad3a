// Fixture for nosync-hidden-sync in templates. A trainer templated on its
// model type calls clip_grad_norm_ with the model's parameters: the argument
// depends on the template parameter, so the compiler leaves the call
// unresolved until instantiation, and a header linted alone has none. The
// check reads the call from its text (DroppedCode.h: dependentCalls).
#include <torch/torch.h>

#include <vector>

template <typename ModelType> class Trainer {
public:
  void train(ModelType& model, torch::optim::Optimizer& optimizer, std::vector<torch::Tensor>& batches) {
    for (auto& batch : batches) {
      auto loss = model->forward(batch).sum();
      loss.backward();
      torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
      // CHECK-MESSAGES: :[[@LINE-1]]:25: warning: 'clip_grad_norm_()' (on a type that depends on a template parameter, read from its text) inside a loop: {{.*}} [nosync-hidden-sync]
      optimizer.step();
    }
  }

  // Not a sync: a dependent call that is no catalog op.
  void log(ModelType& model) { torch::save(model, "model.pt"); }
};
