// Result<T>: a value or an Error, returned by every fallible function (DESIGN.md "Errors").
// A small stand-in for std::expected (C++23), which GCC 12 / Clang 14 in C++20 mode lack.
#pragma once

#include <fmt/format.h>

#include <string>
#include <utility>
#include <variant>

namespace tf {

enum class ErrorCode {
  kInvalidArgument,  // bad input from a caller or a user
  kNotFound,         // a file, key, tensor or route that does not exist
  kCorrupt,          // malformed bytes in a file we were asked to read
  kUnsupported,      // valid but not implemented (an architecture, a dtype)
  kIo,               // the OS refused (open, mmap, read)
  kResourceExhausted,
  kInternal,
};

struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;

  // Prefixes context ("file.gguf: ") so errors name where they happened.
  Error with_context(std::string_view context) const {
    return Error{code, fmt::format("{}: {}", context, message)};
  }
};

template <typename... Args>
Error make_error(ErrorCode code, fmt::format_string<Args...> f, Args&&... args) {
  return Error{code, fmt::format(f, std::forward<Args>(args)...)};
}

// E defaults to Error; the API layer uses its own error type (with an HTTP status and a param).
template <typename T, typename E = Error>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design, like std::expected
  Result(E error) : v_(std::move(error)) {}  // NOLINT

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const E& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, E> v_;
};

template <typename E>
class [[nodiscard]] Result<void, E> {
 public:
  Result() = default;
  Result(E error) : error_(std::move(error)), ok_(false) {}  // NOLINT

  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const E& error() const { return error_; }

 private:
  E error_{};
  bool ok_ = true;
};

using Status = Result<void>;

}  // namespace tf

// Propagates an error from an expression returning Result<T>/Status, else yields nothing.
#define TF_RETURN_IF_ERROR(expr)                     \
  do {                                               \
    auto tf_status_ = (expr);                        \
    if (!tf_status_.ok()) return tf_status_.error(); \
  } while (0)

#define TF_CONCAT_INNER(a, b) a##b
#define TF_CONCAT(a, b) TF_CONCAT_INNER(a, b)
// TF_ASSIGN_OR_RETURN(auto x, f()) binds the value or returns the error.
#define TF_ASSIGN_OR_RETURN(decl, expr) \
  TF_ASSIGN_OR_RETURN_IMPL(TF_CONCAT(tf_result_, __LINE__), decl, expr)
#define TF_ASSIGN_OR_RETURN_IMPL(tmp, decl, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.error();              \
  decl = std::move(tmp).value()
