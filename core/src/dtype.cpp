// dtype names and sizes, and the message helpers behind ag::Error (error.h)
// and the floating-point check (dtype.h).
#include "attograd/dtype.h"

#include <cstdio>

#include "attograd/error.h"

namespace ag {

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return "float32";
    case DType::Float64:
      return "float64";
    case DType::Int64:
      return "int64";
    case DType::Bool:
      return "bool";
  }
  return "unknown";
}

size_t dtype_size(DType dtype) {
  return dispatch_all(dtype, [](auto tag) { return sizeof(tag); });
}

void detail::throw_error(std::string_view op, const std::string& message) {
  throw Error(std::string(op) + ": " + message);
}

void detail::throw_not_floating(DType dtype, const char* op, const char* what,
                                const std::vector<int64_t>* shape) {
  std::string message = what;
  message += " must be float32 or float64, got ";
  message += dtype_name(dtype);
  if (shape) {
    message += ' ';
    message += shape_str(*shape);
  }
  throw_error(op, message);
}

std::string number_str(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", value);
  return buffer;
}

}  // namespace ag
