// PPO (clipped objective, GAE) on a vectorised CartPole written in C++.
// Follows CleanRL's ppo.py as people port it to LibTorch: a rollout buffer of
// per-step tensors, advantages computed backwards in time, minibatch epochs
// with a KL early stop, annealed learning rate, and a greedy evaluation at the end.
#include <torch/torch.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <future>
#include <iostream>
#include <numeric>
#include <random>
#include <tuple>
#include <utility>
#include <vector>

namespace {

constexpr int64_t kNumEnvs = 8;
constexpr int64_t kNumSteps = 128;
constexpr int64_t kTotalTimesteps = 200000;
constexpr int64_t kUpdateEpochs = 4, kNumMinibatches = 4;
constexpr int64_t kObsDim = 4, kNumActions = 2;
constexpr double kLearningRate = 2.5e-4;
constexpr double kGamma = 0.99, kGaeLambda = 0.95;
constexpr double kClipCoef = 0.2, kEntCoef = 0.01, kVfCoef = 0.5;
constexpr double kMaxGradNorm = 0.5;
constexpr double kTargetKl = 0.015;

// Classic cart-pole dynamics (Barto, Sutton & Anderson 1983), on the host.
class CartPole {
 public:
  explicit CartPole(uint64_t seed) : rng_(seed) { reset(); }

  std::array<float, 4> reset() {
    std::uniform_real_distribution<float> u(-0.05f, 0.05f);
    for (auto& s : state_) s = u(rng_);
    steps_ = 0;
    return state_;
  }

  float step(int64_t action, bool& done) {
    const float force = action == 1 ? 10.0f : -10.0f;
    auto [x, x_dot, theta, theta_dot] = state_;
    const float cos_t = std::cos(theta), sin_t = std::sin(theta);
    const float temp = (force + 0.05f * theta_dot * theta_dot * sin_t) / 1.1f;
    const float theta_acc = (9.8f * sin_t - cos_t * temp) / (0.5f * (4.0f / 3.0f - 0.1f * cos_t * cos_t / 1.1f));
    const float x_acc = temp - 0.05f * theta_acc * cos_t / 1.1f;
    state_ = {x + 0.02f * x_dot, x_dot + 0.02f * x_acc, theta + 0.02f * theta_dot, theta_dot + 0.02f * theta_acc};
    ++steps_;
    done = std::abs(state_[0]) > 2.4f || std::abs(state_[2]) > 0.2095f || steps_ >= 500;
    return 1.0f;
  }

  const std::array<float, 4>& state() const { return state_; }

 private:
  std::mt19937_64 rng_;
  std::array<float, 4> state_{};
  int64_t steps_ = 0;
};

// N environments stepped on worker threads; synchronize() joins the last step.
class EnvPool {
 public:
  explicit EnvPool(int64_t n) : obs_(n * kObsDim), rewards_(n), dones_(n), running_(n, 0.0) {
    for (int64_t i = 0; i < n; ++i) {
      envs_.emplace_back(1000 + i);
      write_obs(i);
    }
  }

  void step_async(const int64_t* actions) {
    pending_.clear();
    for (size_t i = 0; i < envs_.size(); ++i) {
      const int64_t a = actions[i];
      pending_.push_back(std::async(std::launch::async, [this, i, a] {
        bool done = false;
        rewards_[i] = envs_[i].step(a, done);
        dones_[i] = done ? 1.0f : 0.0f;
        running_[i] += rewards_[i];
        if (done) envs_[i].reset();
        write_obs(i);
      }));
    }
  }

  // Waits for the worker threads of the last step_async(); host-only.
  void synchronize() {
    for (auto& f : pending_) f.get();
    pending_.clear();
    for (size_t i = 0; i < envs_.size(); ++i) {
      if (dones_[i] > 0.5f) {
        finished_.push_back(running_[i]);
        running_[i] = 0.0;
      }
    }
  }

  float* observations() { return obs_.data(); }
  const std::vector<float>& rewards() const { return rewards_; }
  const std::vector<float>& dones() const { return dones_; }
  std::vector<double> take_finished_returns() { return std::exchange(finished_, {}); }

 private:
  void write_obs(size_t i) {
    const auto& s = envs_[i].state();
    std::copy(s.begin(), s.end(), obs_.begin() + i * kObsDim);
  }

  std::vector<CartPole> envs_;
  std::vector<float> obs_, rewards_, dones_;
  std::vector<double> running_, finished_;
  std::vector<std::future<void>> pending_;
};

struct ActorCriticImpl : torch::nn::Module {
  ActorCriticImpl() {
    using namespace torch::nn;
    critic = register_module("critic", Sequential(Linear(kObsDim, 64), Tanh(), Linear(64, 64), Tanh(), Linear(64, 1)));
    actor = register_module("actor", Sequential(Linear(kObsDim, 64), Tanh(), Linear(64, 64), Tanh(), Linear(64, kNumActions)));
    torch::NoGradGuard no_grad;
    for (auto& p : named_parameters()) {  // expect-none: nosync-launch-loop@+0..+6
      if (p.value().dim() >= 2) {
        torch::nn::init::orthogonal_(p.value(), std::sqrt(2.0));
      } else {
        torch::nn::init::constant_(p.value(), 0.0);
      }
    }
  }

  torch::Tensor value(const torch::Tensor& x) { return critic->forward(x).squeeze(-1); }

  // Samples an action, or scores the given one: action, log-prob, entropy, value.
  std::tuple<torch::Tensor, torch::Tensor, torch::Tensor, torch::Tensor> act(const torch::Tensor& x,
                                                                            torch::Tensor action = {}) {
    auto log_probs = torch::log_softmax(actor->forward(x), -1);
    if (!action.defined()) {  // expect-none: nosync-bool-condition
      action = torch::multinomial(log_probs.exp(), 1).squeeze(-1);  // expect-none: nosync-hidden-sync
    }
    auto log_prob = log_probs.gather(-1, action.unsqueeze(-1)).squeeze(-1);
    auto entropy = -(log_probs.exp() * log_probs).sum(-1);
    return {action, log_prob, entropy, value(x)};
  }

  torch::nn::Sequential critic{nullptr}, actor{nullptr};
};
TORCH_MODULE(ActorCritic);

// Generalised advantage estimation, backwards over the rollout's per-step tensors.
std::pair<torch::Tensor, torch::Tensor> compute_gae(const std::vector<torch::Tensor>& rewards,
                                                    const std::vector<torch::Tensor>& values,
                                                    const std::vector<torch::Tensor>& dones,
                                                    const torch::Tensor& next_value, const torch::Tensor& next_done) {
  const int64_t num_steps = static_cast<int64_t>(rewards.size());
  std::vector<torch::Tensor> advantages(num_steps);
  auto last_gae = torch::zeros_like(next_value);
  for (int64_t t = num_steps - 1; t >= 0; --t) {  // expect: nosync-launch-loop@+0..+6
    auto next_nonterminal = t == num_steps - 1 ? 1.0 - next_done : 1.0 - dones[t + 1];
    auto next_values = t == num_steps - 1 ? next_value : values[t + 1];
    auto delta = rewards[t] + kGamma * next_values * next_nonterminal - values[t];
    last_gae = delta + kGamma * kGaeLambda * next_nonterminal * last_gae;
    advantages[t] = last_gae;
  }
  auto adv = torch::stack(advantages);
  return {adv, adv + torch::stack(values)};
}

double mean_of(const std::vector<float>& v) {
  return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

}  // namespace

int main() {
  torch::manual_seed(1);
  torch::Device device(torch::cuda::is_available() ? torch::kCUDA : torch::kCPU);
  const auto opts = torch::TensorOptions().device(device);

  ActorCritic agent;
  agent->to(device);
  std::cout << agent << '\n';  // expect-none: nosync-hidden-sync
  torch::optim::Adam optimizer(agent->parameters(), torch::optim::AdamOptions(kLearningRate).eps(1e-5));

  EnvPool envs(kNumEnvs);
  const int64_t batch_size = kNumEnvs * kNumSteps;
  const int64_t minibatch_size = batch_size / kNumMinibatches;
  const int64_t num_updates = kTotalTimesteps / batch_size;

  std::vector<torch::Tensor> obs_buf, action_buf, logprob_buf, reward_buf, done_buf, value_buf;
  torch::Tensor next_obs = torch::from_blob(envs.observations(), {kNumEnvs, kObsDim}, torch::kFloat).to(device);
  torch::Tensor next_done = torch::zeros({kNumEnvs}, opts);
  std::vector<double> episode_returns;
  torch::Tensor action_host = torch::empty({kNumEnvs}, torch::kLong);  // reused every step

  for (int64_t update = 1; update <= num_updates; ++update) {
    const double frac = 1.0 - (update - 1.0) / static_cast<double>(num_updates);
    static_cast<torch::optim::AdamOptions&>(optimizer.param_groups()[0].options()).lr(frac * kLearningRate);
    for (auto* buf : {&obs_buf, &action_buf, &logprob_buf, &reward_buf, &done_buf, &value_buf}) buf->clear();  // expect-none: nosync-launch-loop

    for (int64_t step = 0; step < kNumSteps; ++step) {
      obs_buf.push_back(next_obs);
      done_buf.push_back(next_done);
      torch::Tensor action, logprob, value;
      {
        torch::NoGradGuard no_grad;
        std::tie(action, logprob, std::ignore, value) = agent->act(next_obs);
      }
      action_buf.push_back(action);
      logprob_buf.push_back(logprob);
      value_buf.push_back(value);

      action_host.copy_(action);  // expect: nosync-device-to-host
      envs.step_async(action_host.data_ptr<int64_t>());
      envs.synchronize();  // expect-none: nosync-explicit-sync
      reward_buf.push_back(torch::tensor(envs.rewards()).to(device));  // expect: nosync-pageable-h2d
      next_done = torch::tensor(envs.dones()).to(device);  // expect: nosync-pageable-h2d
      next_obs = torch::from_blob(envs.observations(), {kNumEnvs, kObsDim}, torch::kFloat).to(device);  // expect: nosync-pageable-h2d
      for (double r : envs.take_finished_returns()) episode_returns.push_back(r);
    }

    torch::Tensor advantages, returns;
    {
      torch::NoGradGuard no_grad;
      std::tie(advantages, returns) = compute_gae(reward_buf, value_buf, done_buf, agent->value(next_obs), next_done);
    }
    auto b_obs = torch::cat(obs_buf);
    auto b_actions = torch::cat(action_buf);
    auto b_logprobs = torch::cat(logprob_buf);
    auto b_values = torch::cat(value_buf);
    auto b_advantages = advantages.reshape(-1);
    auto b_returns = returns.reshape(-1);

    std::vector<float> clipfracs;
    torch::Tensor v_loss, pg_loss, entropy_loss, approx_kl;
    bool early_stop = false;
    for (int64_t epoch = 0; epoch < kUpdateEpochs && !early_stop; ++epoch) {
      auto perm = torch::randperm(batch_size, opts.dtype(torch::kLong));
      for (int64_t start = 0; start < batch_size; start += minibatch_size) {
        auto mb = perm.slice(0, start, start + minibatch_size);
        auto [unused_action, new_logprob, entropy, new_value] =
            agent->act(b_obs.index_select(0, mb), b_actions.index_select(0, mb));
        auto log_ratio = new_logprob - b_logprobs.index_select(0, mb);
        auto ratio = log_ratio.exp();
        {
          torch::NoGradGuard no_grad;
          approx_kl = ((ratio - 1) - log_ratio).mean();
          clipfracs.push_back(((ratio - 1.0).abs() > kClipCoef).to(torch::kFloat).mean().item<float>());  // expect: nosync-item; expect-none: nosync-device-to-host
        }
        auto mb_adv = b_advantages.index_select(0, mb);
        mb_adv = (mb_adv - mb_adv.mean()) / (mb_adv.std() + 1e-8);
        pg_loss = torch::max(-mb_adv * ratio, -mb_adv * torch::clamp(ratio, 1 - kClipCoef, 1 + kClipCoef)).mean();
        v_loss = 0.5 * (new_value - b_returns.index_select(0, mb)).pow(2).mean();
        entropy_loss = entropy.mean();
        auto loss = pg_loss - kEntCoef * entropy_loss + kVfCoef * v_loss;

        optimizer.zero_grad();
        loss.backward();
        torch::nn::utils::clip_grad_norm_(agent->parameters(), kMaxGradNorm);  // expect: nosync-hidden-sync
        optimizer.step();
      }
      if (kTargetKl > 0 && approx_kl.item<float>() > kTargetKl) {  // expect: nosync-bool-condition
        early_stop = true;
      }
    }

    if (update % 10 == 0) {
      torch::Tensor y_pred = b_values.cpu();  // expect-note: nosync-device-to-host
      torch::Tensor y_true = b_returns.cpu();  // expect-note: nosync-device-to-host
      const float var_y = y_true.var().item<float>();  // expect-none: nosync-item
      const float explained_var = var_y == 0.0f ? NAN : 1.0f - (y_true - y_pred).var().item<float>() / var_y;  // expect-none: nosync-item, nosync-bool-condition
      const double recent_return = episode_returns.empty() ? 0.0 : episode_returns.back();
      std::printf("update %ld | return %.1f | v_loss %.3f | pg_loss %.3f | entropy %.3f | kl %.4f | clipfrac %.3f | ev %.3f\n",
                  update, recent_return,
                  v_loss.item<float>(),  // expect-note: nosync-item
                  pg_loss.item<float>(),  // expect-note: nosync-item
                  entropy_loss.item<float>(),  // expect-note: nosync-item
                  approx_kl.item<float>(),  // expect-note: nosync-item
                  mean_of(clipfracs), explained_var);
    }
  }
  torch::save(agent, "ppo_cartpole.pt");

  // Evaluation after training: one greedy episode on a fresh environment.
  torch::NoGradGuard no_grad;
  agent->eval();
  CartPole env(7);
  auto state = env.reset();
  double eval_return = 0.0;
  bool done = false;
  while (!done) {
    auto obs = torch::from_blob(state.data(), {1, kObsDim}, torch::kFloat).to(device);  // expect-note: nosync-pageable-h2d
    const int64_t a = agent->actor->forward(obs).argmax(-1).item<int64_t>();  // expect-note: nosync-item
    eval_return += env.step(a, done);
    state = env.state();
  }
  std::printf("greedy evaluation return: %.1f over %zu training episodes\n", eval_return, episode_returns.size());
  return 0;
}
