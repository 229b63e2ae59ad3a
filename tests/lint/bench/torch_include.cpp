// Benchmark TU: nothing but the LibTorch umbrella header, so the figure is the
// cost of parsing torch/torch.h plus running the checks over its AST.
#include <torch/torch.h>

int main() { return 0; }
