// Uses the installed package: one header, one target.
#include <attograd/attograd.h>

#include <iostream>

int main() {
  ag::Tensor x = ag::tensor({1, 2, 3}, {3}).requires_grad_();
  ag::Tensor y = ag::sum(x * x);
  y.backward();
  std::cout << x.grad() << "\n";  // tensor([2., 4., 6.])
  return ag::to_string(x.grad()) == "tensor([2., 4., 6.])" ? 0 : 1;
}
