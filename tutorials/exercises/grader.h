// grader.h — how an exercise's checks grade the learner's code, and what
// they say when it is wrong.
//
// Each exercise's grade_NN_*.cpp builds a Grader, runs its checks against the
// learner's functions (declared in exercises.h, defined in the learner's
// file) and returns grader.finish(). A check either passes ("ok") or says
// exactly what is wrong: which output or gradient, the shape that differs or
// the element [i, j, ...] that is furthest off, the value expected and the
// value got, and the equation to look at. Nothing is ever just "failed".
//
//   ex::Grader g(3, "masked softmax", "nn/src/masks.cpp: masked_softmax");
//   g.close("lengths [2, 3]: the weights", [&] { return masked_softmax(X, lens); }, expected,
//           1e-12, "scores at or past the valid length are -1e6 before the softmax");
//   return g.finish();  // 0 when every check passes
#pragma once

#include <attograd/core.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace ex {

// "[1, 0, 2]": the multi-index of flat element `flat` in a row-major `shape`.
inline std::string index_str(const ag::Shape& shape, int64_t flat) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  return ag::shape_str(index);
}

inline std::string value_str(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.6g", value);
  return buffer;
}

// float64 copies of the values, row-major (int and bool tensors as numbers).
inline std::vector<double> values(const ag::Tensor& t) {
  return t.detach().to_vector();
}

// Random float64 tensors in [-2, 2), the same for every run of the grader
// (each check draws from its own seed).
inline ag::Tensor uniform(ag::Shape shape, uint64_t seed) {
  ag::manual_seed(seed);
  return ag::uniform(std::move(shape), -2.0, 2.0, ag::kFloat64);
}

// An array of PyTorch's numbers for the exercises (fixtures.npz, written by
// scripts/make_exercise_fixtures.py): "exN.name".
inline ag::Tensor fixture(const std::string& name) {
  static const std::map<std::string, ag::Tensor> arrays = ag::load_npz(ATTOGRAD_EXERCISE_FIXTURES);
  const auto found = arrays.find(name);
  AG_CHECK(found != arrays.end(), "fixture", name + " is not in " ATTOGRAD_EXERCISE_FIXTURES);
  return found->second;
}

// The derivative of sum(dy * f(inputs)) with respect to inputs[which], by
// central differences in float64: what a backward must return for the
// upstream gradient dy, computed without any backward.
inline ag::Tensor numeric_vjp(const std::function<ag::Tensor(const std::vector<ag::Tensor>&)>& f,
                              std::vector<ag::Tensor> inputs, size_t which, const ag::Tensor& dy,
                              double eps = 1e-6) {
  for (auto& input : inputs) input = input.detach().clone();
  ag::Tensor x = inputs[which];
  std::vector<double> grad(static_cast<size_t>(x.numel()));
  double* data = x.data_ptr<double>();
  for (size_t i = 0; i < grad.size(); ++i) {
    const double saved = data[i];
    data[i] = saved + eps;
    const double plus = ag::sum(f(inputs) * dy).item();
    data[i] = saved - eps;
    const double minus = ag::sum(f(inputs) * dy).item();
    data[i] = saved;
    grad[i] = (plus - minus) / (2 * eps);
  }
  return ag::tensor(grad, x.shape(), ag::kFloat64);
}

class Grader {
 public:
  // number and title name the exercise; solution is where the library does
  // the same thing (file: function), shown when a check fails.
  Grader(int number, std::string title, std::string solution)
      : number_(number), title_(std::move(title)), solution_(std::move(solution)) {
    std::cout << "Exercise " << number_ << ": " << title_ << "\n";
  }

  // got() against expected: the shape first, then every element, within
  // |got - expected| <= tol (1e-12 for float64 maths that should agree
  // exactly up to rounding). A NaN or an infinity where expected is finite
  // fails. An exception thrown by got() fails the check with its message.
  void close(const std::string& what, const std::function<ag::Tensor()>& got,
             const ag::Tensor& expected, double tol, const std::string& hint) {
    ag::Tensor result;
    if (!run(what, got, result, hint)) return;
    if (!result.defined()) {
      fail(what, "your function returned an undefined (empty) Tensor", hint);
      return;
    }
    if (result.shape() != expected.shape()) {
      fail(what,
           "shape: expected " + ag::shape_str(expected.shape()) + ", got " +
               ag::shape_str(result.shape()),
           hint);
      return;
    }
    const std::vector<double> a = values(result), b = values(expected);
    int64_t worst = -1;
    double worst_error = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      const double error = std::isfinite(a[i]) ? std::fabs(a[i] - b[i]) : INFINITY;
      if (error > tol && (worst < 0 || error > worst_error)) {
        worst = static_cast<int64_t>(i);
        worst_error = error;
      }
    }
    if (worst < 0) {
      pass(what);
      return;
    }
    fail(what,
         "element " + index_str(expected.shape(), worst) + " is furthest off: expected " +
             value_str(b[static_cast<size_t>(worst)]) + ", got " +
             value_str(a[static_cast<size_t>(worst)]) + " (tolerance " + value_str(tol) + ")",
         hint);
  }

  // A condition on the learner's result that close() cannot express (for
  // example "every value is finite"); detail says what was found.
  void require(const std::string& what, bool ok, const std::string& detail,
               const std::string& hint) {
    ok ? pass(what) : fail(what, detail, hint);
  }

  // ag::gradcheck of fn at inputs (float64, the inputs that require grad):
  // the gradient autograd takes through the learner's ops against central
  // differences; an exception thrown by fn fails the check.
  void gradcheck(const std::string& what,
                 const std::function<ag::Tensor(const std::vector<ag::Tensor>&)>& fn,
                 const std::vector<ag::Tensor>& inputs, const std::string& hint) {
    try {
      const ag::GradcheckResult result = ag::gradcheck(fn, inputs);
      result.ok ? pass(what) : fail(what, result.message, hint);
    } catch (const std::exception& e) {
      fail(what, std::string("your code threw: ") + e.what(), hint);
    }
  }

  // f() must throw ag::Error whose message contains `mention` (the op's
  // name, or the shape at fault): bad input gets a clear error.
  void throws(const std::string& what, const std::function<void()>& f, const std::string& mention,
              const std::string& hint) {
    try {
      f();
    } catch (const ag::Error& e) {
      const std::string message = e.what();
      if (message.find(mention) != std::string::npos) {
        pass(what);
      } else {
        fail(what,
             "it threw ag::Error(\"" + message + "\"), which does not mention '" + mention + "'",
             hint);
      }
      return;
    } catch (const std::exception& e) {
      fail(what, std::string("it threw ") + e.what() + ", not an ag::Error", hint);
      return;
    }
    fail(what, "it returned normally; it must throw ag::Error naming '" + mention + "'", hint);
  }

  // Runs f() and stores its result; an exception fails the check.
  template <class T>
  bool run(const std::string& what, const std::function<T()>& f, T& out, const std::string& hint) {
    try {
      out = f();
      return true;
    } catch (const std::exception& e) {
      fail(what, std::string("your code threw: ") + e.what(), hint);
      return false;
    }
  }

  // Prints the summary; the exit status: 0 when every check passed.
  int finish() const {
    if (failed_ == 0) {
      std::cout << "Exercise " << number_ << ": all " << passed_ << " checks pass.\n";
      return 0;
    }
    std::cout << "Exercise " << number_ << ": " << failed_ << " of " << passed_ + failed_
              << " checks fail. The library's own version, to compare once you have tried: "
              << solution_ << "\n";
    return 1;
  }

 private:
  void pass(const std::string& what) {
    ++passed_;
    std::cout << "  ok    " << what << "\n";
  }
  void fail(const std::string& what, const std::string& detail, const std::string& hint) {
    ++failed_;
    std::cout << "  FAIL  " << what << "\n        " << detail << "\n        look at: " << hint
              << "\n";
  }

  int number_;
  std::string title_, solution_;
  int passed_ = 0, failed_ = 0;
};

}  // namespace ex
