#include "cli/commands.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

#include "report/terminal.hpp"

namespace scalescope::cli {
namespace {

constexpr size_t kDefaultWidth = 80;
constexpr size_t kMinWidth = 50;  // narrower terminals get lines of 50 and wrap them themselves

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

class HelpFormatter : public CLI::Formatter {
 public:
  HelpFormatter() {
    const size_t columns = report::output_width(STDOUT_FILENO);
    width_ = std::max(columns == 0 ? kDefaultWidth : columns, kMinWidth);
    column_width(28);
  }

  std::string make_option_name(const CLI::Option* opt, bool is_positional) const override {
    return is_positional ? upper(opt->get_name()) : CLI::Formatter::make_option_name(opt, is_positional);
  }
  std::string make_option_usage(const CLI::Option* opt) const override {
    std::string usage = CLI::Formatter::make_option_usage(opt);
    return opt->get_positional() ? upper(usage) : usage;
  }
  std::string make_option(const CLI::Option* opt, bool is_positional) const override {
    return entry(make_option_name(opt, is_positional) + make_option_opts(opt), make_option_desc(opt));
  }
  std::string make_subcommand(const CLI::App* sub) const override {
    return entry(sub->get_display_name(true), sub->get_description());
  }
  std::string make_description(const CLI::App* app) const override {
    const std::string d = app->get_description();
    return d.empty() ? std::string{} : paragraphs(d, "") + "\n";
  }
  std::string make_footer(const CLI::App* app) const override {
    const std::string f = app->get_footer();
    return f.empty() ? std::string{} : paragraphs(f, "") + "\n";
  }

 private:
  // Each line of `text` wrapped to the width; lines that start with a space
  // (examples, aligned by hand) are kept as they are.
  std::string paragraphs(std::string_view text, std::string_view indent) const {
    std::string out;
    size_t start = 0;
    while (start <= text.size()) {
      size_t end = text.find('\n', start);
      if (end == std::string_view::npos) end = text.size();
      const std::string_view line = text.substr(start, end - start);
      if (!out.empty()) out += '\n';
      if (line.empty()) {
      } else if (line.front() == ' ') {
        out += std::string(indent) + std::string(line);
      } else {
        out += report::wrap(line, width_, indent);
      }
      start = end + 1;
    }
    return out;
  }
  // "  NAME   description", the description wrapped in its own column.
  std::string entry(const std::string& name, const std::string& description) const {
    const size_t column = get_column_width();
    std::string left = "  " + name;
    if (description.empty()) return left + "\n";
    std::string body = paragraphs(description, std::string(column, ' '));
    if (left.size() + 1 > column) return left + "\n" + body + "\n";
    return left + body.substr(left.size()) + "\n";
  }

  size_t width_ = kDefaultWidth;
};

}  // namespace

std::shared_ptr<CLI::Formatter> make_help_formatter() { return std::make_shared<HelpFormatter>(); }

}  // namespace scalescope::cli
