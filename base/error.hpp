#pragma once
// The one exception type that crosses part boundaries: a user-facing error
// whose message is a complete one-line sentence naming the file or input at
// fault. The CLI prints it as "scalescope: error: <message>" and exits 1.
// Internal bugs are not Errors; problems inside data are counted (ProblemCounts),
// not thrown.
//
//   fail("{}: line {}: expected a number", path.string(), line);
//
// fail() takes fmt's format syntax, but fmt itself is compiled once, in
// error.cpp: a file that only throws does not parse fmt's headers. The number
// of replacement fields is checked against the arguments at compile time.

#include <concepts>
#include <cstddef>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

namespace scalescope {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

namespace detail {

// One argument of fail(): its kind and value, formatted in error.cpp as fmt
// would format the original type.
class ErrorArg {
 public:
  enum class Kind : unsigned char { kBool, kChar, kSigned, kUnsigned, kFloat, kDouble, kString, kPointer };

  ErrorArg(bool v) : kind_(Kind::kBool) { value_.b = v; }
  ErrorArg(char v) : kind_(Kind::kChar) { value_.c = v; }
  template <std::signed_integral T>
    requires(!std::same_as<T, char>)
  ErrorArg(T v) : kind_(Kind::kSigned) {
    value_.i = v;
  }
  template <std::unsigned_integral T>
    requires(!std::same_as<T, bool> && !std::same_as<T, char>)
  ErrorArg(T v) : kind_(Kind::kUnsigned) {
    value_.u = v;
  }
  ErrorArg(float v) : kind_(Kind::kFloat) { value_.f = v; }
  ErrorArg(double v) : kind_(Kind::kDouble) { value_.d = v; }
  ErrorArg(std::string_view v) : kind_(Kind::kString), text_(v) {}
  ErrorArg(const std::string& v) : kind_(Kind::kString), text_(v) {}
  ErrorArg(const char* v) : kind_(Kind::kString), text_(v) {}
  ErrorArg(const void* v) : kind_(Kind::kPointer) { value_.p = v; }

  Kind kind() const { return kind_; }
  bool as_bool() const { return value_.b; }
  char as_char() const { return value_.c; }
  long long as_signed() const { return value_.i; }
  unsigned long long as_unsigned() const { return value_.u; }
  float as_float() const { return value_.f; }
  double as_double() const { return value_.d; }
  std::string_view as_string() const { return text_; }
  const void* as_pointer() const { return value_.p; }

 private:
  Kind kind_;
  union {
    bool b;
    char c;
    long long i;
    unsigned long long u;
    float f;
    double d;
    const void* p;
  } value_{};
  std::string_view text_;
};

// The replacement fields of a format string ("{}", "{:.1f}", "{0}"): the
// number of arguments it takes, or -1 when its braces do not pair up.
consteval int format_arguments(std::string_view format) {
  int automatic = 0;
  int highest_index = -1;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] == '}') {
      if (i + 1 < format.size() && format[i + 1] == '}') {
        ++i;
        continue;
      }
      return -1;
    }
    if (format[i] != '{') continue;
    if (i + 1 < format.size() && format[i + 1] == '{') {
      ++i;
      continue;
    }
    size_t end = i + 1;
    int depth = 1;  // nested fields of a spec ("{:{}}") count as arguments too
    int index = -1;
    if (end < format.size() && format[end] >= '0' && format[end] <= '9') {
      index = 0;
      while (end < format.size() && format[end] >= '0' && format[end] <= '9') index = index * 10 + (format[end++] - '0');
    }
    if (index >= 0) {
      highest_index = index > highest_index ? index : highest_index;
    } else {
      ++automatic;
    }
    for (; end < format.size() && depth > 0; ++end) {
      if (format[end] == '{') {
        ++depth;
        ++automatic;
      } else if (format[end] == '}') {
        --depth;
      }
    }
    if (depth != 0) return -1;
    i = end - 1;
  }
  return automatic > highest_index + 1 ? automatic : highest_index + 1;
}

// Not constexpr: calling it while a format string is checked at compile time
// makes the call ill-formed, which is the compile error for a bad format.
void format_string_does_not_match_the_arguments();

// A format string for `Args`, checked when fail() is compiled.
template <typename... Args>
struct ErrorFormat {
  template <typename S>
    requires std::convertible_to<const S&, std::string_view>
  consteval ErrorFormat(const S& s) : text(s) {
    if (format_arguments(text) != static_cast<int>(sizeof...(Args))) format_string_does_not_match_the_arguments();
  }
  std::string_view text;
};

// Formats `format` with `args` (fmt's syntax) and throws an Error with the text.
[[noreturn]] void throw_error(std::string_view format, std::initializer_list<ErrorArg> args);

}  // namespace detail

// Throws an Error with the message fmt::format(format, args...) would give.
template <typename... Args>
[[noreturn]] void fail(detail::ErrorFormat<std::type_identity_t<Args>...> format, const Args&... args) {
  detail::throw_error(format.text, {detail::ErrorArg(args)...});
}

}  // namespace scalescope
