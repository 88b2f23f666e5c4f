#pragma once
// A bounded reader of plain data in Python's pickle format (protocols 2 to 5):
// dicts, lists, tuples, str, bytes, ints of up to 64 bits, floats, bool and
// None, as PyTorch's flight recorder and Python's own pickle module write
// them. Anything that would run code or build an object when Python loads it
// (GLOBAL, STACK_GLOBAL, REDUCE, BUILD, NEWOBJ, INST, OBJ, persistent ids,
// extension codes, out-of-band buffers) is refused, and so are sets.
//
//   std::string why;
//   auto v = read_pickle_data(bytes, &why);  // nullopt with `why` (one line, no file name) on bad input
//
// The result is JSON: a tuple becomes an array, bytes a binary value, and a
// dict key that is an int its decimal text (other key types are refused).

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace scalescope::analyze {

std::optional<nlohmann::json> read_pickle_data(std::string_view bytes, std::string* error);

}  // namespace scalescope::analyze
