// The MLLOG line parser. Finds ":::MLLOG" anywhere in a line with memmem (the
// marker sits behind launcher prefixes and progress bars in real logs), cuts the
// JSON object out by matching braces (other output may follow it), and parses
// only that span with simdjson.

#include <cmath>
#include <cstring>
#include <string>

#include <simdjson.h>

#include "mlperf/mllog_parser.hpp"

namespace scalescope::trace {

namespace {

constexpr std::string_view kMarker = ":::MLLOG";

// End (one past the closing brace) of the JSON object starting at text[0] == '{',
// or npos when the object is not closed within text.
size_t object_end(std::string_view text) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '{') ++depth;
    else if (c == '}') {
      if (--depth == 0) return i + 1;
    }
  }
  return std::string_view::npos;
}

// Latin-1 to UTF-8: every byte >= 0x80 becomes two bytes.
void latin1_to_utf8(std::string_view in, std::string& out) {
  out.clear();
  out.reserve(in.size() * 2);
  for (unsigned char c : in) {
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back(static_cast<char>(0xC0 | (c >> 6)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
  }
}

std::optional<int64_t> as_int(simdjson::dom::element e) {
  int64_t i = 0;
  if (e.get_int64().get(i) == simdjson::SUCCESS) return i;
  uint64_t u = 0;
  if (e.get_uint64().get(u) == simdjson::SUCCESS && u <= static_cast<uint64_t>(INT64_MAX))
    return static_cast<int64_t>(u);
  double d = 0;
  if (e.get_double().get(d) == simdjson::SUCCESS && std::isfinite(d) && std::fabs(d) < 9.0e18)
    return static_cast<int64_t>(std::llround(d));
  return std::nullopt;
}

}  // namespace

struct MllogParser::Impl {
  simdjson::dom::parser json;
  std::string padded;      // the event copied with simdjson's padding
  std::string transcoded;  // Latin-1 retry
  std::string partial;     // a line split across feed() calls (at most kMaxMllogLineBytes)
  bool partial_overlong = false;
  LogSummary summary;

  void line(std::string_view text);
  void segment(std::string_view text);
  bool event(std::string_view object);
  bool parse(std::string_view object, simdjson::dom::element& root);
};

bool MllogParser::Impl::parse(std::string_view object, simdjson::dom::element& root) {
  padded.assign(object);
  padded.append(simdjson::SIMDJSON_PADDING, '\0');
  auto error = json.parse(padded.data(), object.size(), false).get(root);
  if (error == simdjson::UTF8_ERROR) {
    // Not UTF-8: read the bytes as Latin-1, the usual other encoding of such logs.
    latin1_to_utf8(object, transcoded);
    padded.assign(transcoded);
    padded.append(simdjson::SIMDJSON_PADDING, '\0');
    error = json.parse(padded.data(), transcoded.size(), false).get(root);
  }
  return error == simdjson::SUCCESS;
}

bool MllogParser::Impl::event(std::string_view object) {
  simdjson::dom::element root;
  if (!parse(object, root)) return false;
  simdjson::dom::object obj;
  if (root.get_object().get(obj) != simdjson::SUCCESS) return false;
  std::string_view key;
  if (obj["key"].get_string().get(key) != simdjson::SUCCESS) return false;
  simdjson::dom::element time_element;
  if (obj["time_ms"].get(time_element) != simdjson::SUCCESS) return false;
  const auto time_ms = as_int(time_element);
  if (!time_ms) return false;
  simdjson::dom::element value;
  const bool has_value = obj["value"].get(value) == simdjson::SUCCESS;
  ++summary.mllog_lines;

  auto first_string = [&](std::string& target) {
    std::string_view s;
    if (target.empty() && has_value && value.get_string().get(s) == simdjson::SUCCESS) target.assign(s);
  };
  if (key == "run_start") {
    if (!summary.run_start_ms) summary.run_start_ms = time_ms;
  } else if (key == "run_stop") {
    if (!summary.run_stop_ms) {
      summary.run_stop_ms = time_ms;
      std::string_view status;
      if (obj["metadata"]["status"].get_string().get(status) == simdjson::SUCCESS) summary.stop_status.assign(status);
    }
  } else if (key == "eval_accuracy") {
    double d = 0;
    if (has_value && value.get_double().get(d) == simdjson::SUCCESS) summary.last_eval_accuracy = d;
    // Progress at this evaluation; the last one before run_stop is where the run converged.
    double at = 0;
    if (!summary.run_stop_ms &&
        (obj["metadata"]["epoch_num"].get_double().get(at) == simdjson::SUCCESS ||
         obj["metadata"]["samples_count"].get_double().get(at) == simdjson::SUCCESS) &&
        std::isfinite(at) && at >= 0)
      summary.progress_at_stop = at;
  } else if (key == "global_batch_size") {
    if (!summary.global_batch_size && has_value) summary.global_batch_size = as_int(value);
  } else if (key == "submission_benchmark") {
    first_string(summary.benchmark);
  } else if (key == "submission_division") {
    first_string(summary.division);
  } else if (key == "submission_org") {
    first_string(summary.org);
  } else if (key == "submission_platform") {
    first_string(summary.platform);
  }
  return true;
}

void MllogParser::Impl::segment(std::string_view text) {
  size_t from = 0;
  while (from < text.size()) {
    const void* hit = memmem(text.data() + from, text.size() - from, kMarker.data(), kMarker.size());
    if (hit == nullptr) return;
    size_t pos = static_cast<size_t>(static_cast<const char*>(hit) - text.data()) + kMarker.size();
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t')) ++pos;
    if (pos >= text.size() || text[pos] != '{') {
      ++summary.malformed_lines;
      from = pos;
      continue;
    }
    const size_t end = object_end(text.substr(pos));
    if (end == std::string_view::npos) {
      ++summary.malformed_lines;
      return;
    }
    if (!event(text.substr(pos, end))) ++summary.malformed_lines;
    from = pos + end;
  }
}

void MllogParser::Impl::line(std::string_view text) {
  // '\r' ends a line too: progress bars redraw with it and events follow them.
  size_t from = 0;
  while (true) {
    const void* cr = std::memchr(text.data() + from, '\r', text.size() - from);
    if (cr == nullptr) {
      segment(text.substr(from));
      return;
    }
    const size_t at = static_cast<size_t>(static_cast<const char*>(cr) - text.data());
    segment(text.substr(from, at - from));
    from = at + 1;
  }
}

MllogParser::MllogParser() : impl_(new Impl) {}
MllogParser::~MllogParser() { delete impl_; }

void MllogParser::feed(std::string_view bytes) {
  Impl& p = *impl_;
  while (!bytes.empty()) {
    const void* nl = std::memchr(bytes.data(), '\n', bytes.size());
    const size_t len = nl ? static_cast<size_t>(static_cast<const char*>(nl) - bytes.data()) : bytes.size();
    std::string_view piece = bytes.substr(0, len);
    if (p.partial.empty() && !p.partial_overlong && nl != nullptr) {
      // The common case: a whole line inside this chunk, parsed in place.
      if (piece.size() > kMaxMllogLineBytes) {
        ++p.summary.overlong_lines;
        piece = piece.substr(0, kMaxMllogLineBytes);
      }
      p.line(piece);
    } else {
      const size_t room = kMaxMllogLineBytes - p.partial.size();
      if (piece.size() > room) {
        p.partial.append(piece.substr(0, room));
        p.partial_overlong = true;
      } else {
        p.partial.append(piece);
      }
      if (nl != nullptr) {
        if (p.partial_overlong) ++p.summary.overlong_lines;
        p.line(p.partial);
        p.partial.clear();
        p.partial_overlong = false;
      }
    }
    bytes.remove_prefix(nl ? len + 1 : len);
  }
}

LogSummary MllogParser::finish() {
  Impl& p = *impl_;
  if (!p.partial.empty() || p.partial_overlong) {
    if (p.partial_overlong) ++p.summary.overlong_lines;
    p.line(p.partial);
  }
  p.partial.clear();
  p.partial_overlong = false;
  LogSummary out = std::move(p.summary);
  p.summary = LogSummary{};
  return out;
}

LogSummary parse_mllog(std::string_view bytes) {
  MllogParser parser;
  parser.feed(bytes);
  return parser.finish();
}

}  // namespace scalescope::trace
