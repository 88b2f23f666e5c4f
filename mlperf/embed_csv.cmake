# Writes a .cpp holding a CSV file as a raw string literal (cmake -P):
#   cmake -DINPUT=runs.csv -DOUTPUT=default_runs_csv.cpp -P embed_csv.cmake
file(READ "${INPUT}" content)
set(delimiter "scalescope_csv")
string(FIND "${content}" ")${delimiter}\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains the raw string delimiter ')${delimiter}\"'")
endif()
file(WRITE "${OUTPUT}.tmp"
  "// Generated from ${INPUT} by mlperf/embed_csv.cmake: do not edit.\n"
  "#include \"mlperf/mlperf.hpp\"\n"
  "namespace scalescope::mlperf {\n"
  "namespace {\n"
  "constexpr char kDefaultRunsCsv[] = R\"${delimiter}(${content})${delimiter}\";\n"
  "}  // namespace\n"
  "std::string_view default_runs_csv() { return {kDefaultRunsCsv, sizeof(kDefaultRunsCsv) - 1}; }\n"
  "}  // namespace scalescope::mlperf\n")
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
