#pragma once
// --format table|csv|json of every command that prints tables, read into a
// report::OutputFormat and checked while parsing: a wrong value is the same
// usage error (exit 2, the three values named) for every command, and the
// help shows them as TEXT:{table,csv,json}=table.
//
//   report::OutputFormat format = report::OutputFormat::kTable;
//   add_output_format(cmd, format, "how to print the tables");

#include <string>

#include <CLI/CLI.hpp>

#include "report/table.hpp"

namespace scalescope::cli {

inline CLI::Option* add_output_format(CLI::App* cmd, report::OutputFormat& format, const std::string& help) {
  return cmd
      ->add_option_function<std::string>(
          "--format", [&format](const std::string& text) { format = *report::parse_output_format(text); },
          help)
      ->check(CLI::IsMember({"table", "csv", "json"}))
      ->default_str("table");
}

}  // namespace scalescope::cli
