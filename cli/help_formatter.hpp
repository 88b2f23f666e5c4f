#pragma once
// The help text of every command: wrapped to the terminal's width (80 when
// the output is not a terminal and $COLUMNS is unset), positional arguments
// in capitals as in "Usage: scalescope analyze [OPTIONS] TRACE".

#include <memory>

namespace CLI {
class Formatter;
}

namespace scalescope::cli {

std::shared_ptr<CLI::Formatter> make_help_formatter();

}  // namespace scalescope::cli
