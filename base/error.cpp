#include "base/error.hpp"

#include <fmt/args.h>
#include <fmt/format.h>

namespace scalescope::detail {

void throw_error(std::string_view format, std::initializer_list<ErrorArg> args) {
  fmt::dynamic_format_arg_store<fmt::format_context> store;
  store.reserve(args.size(), 0);
  for (const ErrorArg& a : args) {
    switch (a.kind()) {
      case ErrorArg::Kind::kBool: store.push_back(a.as_bool()); break;
      case ErrorArg::Kind::kChar: store.push_back(a.as_char()); break;
      case ErrorArg::Kind::kSigned: store.push_back(a.as_signed()); break;
      case ErrorArg::Kind::kUnsigned: store.push_back(a.as_unsigned()); break;
      case ErrorArg::Kind::kFloat: store.push_back(a.as_float()); break;
      case ErrorArg::Kind::kDouble: store.push_back(a.as_double()); break;
      // A string_view is stored by reference: the arguments outlive vformat.
      case ErrorArg::Kind::kString: store.push_back(a.as_string()); break;
      case ErrorArg::Kind::kPointer: store.push_back(a.as_pointer()); break;
    }
  }
  std::string text;
  try {
    text = fmt::vformat(format, store);
  } catch (const fmt::format_error& e) {
    // Only the count of fields is checked where fail() is called: a
    // specifier that does not fit its argument is our bug, and the error
    // still reaches the user, as one line, unformatted.
    text = fmt::format("{} (message left unformatted: {})", format, e.what());
  }
  throw Error(std::move(text));
}

}  // namespace scalescope::detail
