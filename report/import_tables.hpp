#pragma once
// The tables `scalescope import` prints: what became of each part of a
// Kineto trace or an Nsight Systems export, from the importers' reports.
//
//   for (const auto& t : report::import_tables(rep, trace)) t.print(std::cout);

#include <vector>

#include "report/table.hpp"
#include "trace/import/kineto_importer.hpp"
#include "trace/import/nsys_importer.hpp"

namespace scalescope::report {

// A Kineto trace: its event categories and what each became, then the rows
// of each trace table and what was counted, dropped or malformed.
std::vector<Table> import_tables(const trace::ImportReport& rep, const trace::Trace& t);
// An nsys export: what became of each of its tables and kinds of rows, and
// one row per traced process.
std::vector<Table> nsys_import_tables(const trace::NsysImportReport& rep, const std::vector<trace::Trace>& traces);

}  // namespace scalescope::report
