# Writes a .cpp holding a text file (a CSV or JSON table) as a raw string
# literal, returned by `std::string_view NAMESPACE::FUNCTION()` declared in HEADER (cmake -P):
#   cmake -DINPUT=runs.csv -DOUTPUT=default_runs_csv.cpp -DHEADER=mlperf/mlperf.hpp
#         -DNAMESPACE=scalescope::mlperf -DFUNCTION=default_runs_csv -P embed_text.cmake
file(READ "${INPUT}" content)
set(delimiter "scalescope_text")
string(FIND "${content}" ")${delimiter}\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains the raw string delimiter ')${delimiter}\"'")
endif()
file(WRITE "${OUTPUT}.tmp"
  "// Generated from ${INPUT} by cmake/embed_text.cmake: do not edit.\n"
  "#include <string_view>\n"
  "#include \"${HEADER}\"\n"
  "namespace ${NAMESPACE} {\n"
  "namespace {\n"
  "constexpr char kEmbeddedText[] = R\"${delimiter}(${content})${delimiter}\";\n"
  "}  // namespace\n"
  "std::string_view ${FUNCTION}() { return {kEmbeddedText, sizeof(kEmbeddedText) - 1}; }\n"
  "}  // namespace ${NAMESPACE}\n")
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
