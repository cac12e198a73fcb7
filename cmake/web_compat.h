// Force-included into every C++ file of the WebAssembly build (cmake/web.cmake).
// Debian 12's Emscripten 3.1.6 ships libc++ 14, which lacks a few C++20
// library pieces attograd uses; each is supplied here only where missing.
#pragma once

#include <version>

#if !defined(__cpp_lib_bit_cast)
#include <type_traits>

namespace std {
// C++20 <bit>: the bits of `from` reinterpreted as a To (the compiler builtin
// libc++ 15 wraps the same way).
template <class To, class From>
requires(sizeof(To) == sizeof(From) && is_trivially_copyable_v<To> &&
         is_trivially_copyable_v<From>) constexpr To bit_cast(const From& from) noexcept {
  return __builtin_bit_cast(To, from);
}
}  // namespace std
#endif
