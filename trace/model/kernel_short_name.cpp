#include "trace/model/kernel_short_name.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>

namespace scalescope::trace {
namespace {

constexpr std::string_view kAnonymous = "(anonymous namespace)::";

std::string without_anonymous(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    if (s.substr(i, kAnonymous.size()) == kAnonymous) {
      i += kAnonymous.size();
    } else {
      out += s[i++];
    }
  }
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

// A signature taken apart: the name outside every <...> and (...) group, and
// the function's own template arguments (the group just before its
// parameter list, or the one that ends the text).
struct Parsed {
  std::string base;
  std::vector<std::string> args;
};

struct Group {
  char open;
  size_t start, end;  // positions of the brackets
};

// `unqualified`: a template argument, named by its last component, and a
// lambda by the function it was written in ("f(...)::{lambda()#1}" -> "f").
Parsed parse(std::string_view text, bool unqualified) {
  const std::string s = without_anonymous(text);
  std::string_view v = s;
  Parsed p;
  std::vector<Group> groups;  // depth-0 groups, in order
  std::string outside;
  std::vector<std::pair<char, size_t>> stack;
  for (size_t i = 0; i < v.size(); ++i) {
    const char c = v[i];
    if (unqualified && stack.empty() && v.substr(i, 9) == "::{lambda") {
      v = v.substr(0, i);
      break;
    }
    if (c == '<' || c == '(') {
      stack.push_back({c, i});
    } else if (c == '>' || c == ')') {
      const char want = c == '>' ? '<' : '(';
      if (stack.empty() || stack.back().first != want) return {std::string(trim(text)), {}};  // not a signature
      const auto [open, start] = stack.back();
      stack.pop_back();
      if (stack.empty()) groups.push_back({open, start, i});
    } else if (stack.empty()) {
      outside += c;
    }
  }
  if (!stack.empty()) return {std::string(trim(text)), {}};
  // The function's template arguments.
  const Group* params = nullptr;
  for (const Group& g : groups)
    if (g.open == '(') params = &g;
  const Group* targs = nullptr;
  for (const Group& g : groups) {
    if (g.open != '<') continue;
    const size_t after = v.find_first_not_of(' ', g.end + 1);
    if (params ? after == params->start : after == std::string_view::npos) targs = &g;
  }
  if (targs) {
    std::string_view inner = v.substr(targs->start + 1, targs->end - targs->start - 1);
    int depth = 0;
    size_t from = 0;
    for (size_t i = 0; i <= inner.size(); ++i) {
      const char c = i < inner.size() ? inner[i] : ',';
      if (c == '<' || c == '(' || c == '{' || c == '[') ++depth;
      if (c == '>' || c == ')' || c == '}' || c == ']') --depth;
      if (c == ',' && depth == 0) {
        p.args.emplace_back(trim(inner.substr(from, i - from)));
        from = i + 1;
      }
    }
  }
  // The last word outside the groups is the name: before it come the return
  // type and specifiers, after it cv-qualifiers and pointer marks.
  std::string name;
  size_t at = 0;
  while (at < outside.size()) {
    const size_t end = std::min(outside.find(' ', at), outside.size());
    std::string word = outside.substr(at, end - at);
    at = end + 1;
    while (!word.empty() && (word.back() == '*' || word.back() == '&')) word.pop_back();
    if (word.empty() || word == "const" || word == "volatile" || word == "__restrict__") continue;
    name = std::move(word);
  }
  if (unqualified) {
    const size_t colon = name.rfind("::");
    if (colon != std::string::npos && colon + 2 < name.size()) name = name.substr(colon + 2);
  }
  p.base = name.empty() ? std::string(trim(text)) : name;
  return p;
}

// The core of distinct_short_names, for signatures (`unqualified` false) and,
// recursively, for the template arguments that tell them apart.
std::vector<std::string> distinct(const std::vector<std::string>& texts, bool unqualified) {
  const size_t n = texts.size();
  std::vector<Parsed> parsed(n);
  for (size_t i = 0; i < n; ++i) parsed[i] = parse(texts[i], unqualified);
  std::vector<std::map<size_t, std::string>> shown(n);  // argument position -> its text in the short name
  std::vector<std::string> suffix(n);

  // Splits `members` (one short name so far) by the argument position whose
  // values differ most, until each part holds one full name.
  auto refine = [&](auto& self, const std::vector<size_t>& members) -> void {
    std::set<std::string_view> names;
    for (size_t m : members) names.insert(texts[m]);
    if (names.size() <= 1) return;
    size_t positions = 0;
    for (size_t m : members) positions = std::max(positions, parsed[m].args.size());
    // The position of most distinct values; among equals, one that names
    // something (a functor, a type) before one of numbers or flags.
    size_t best = 0, best_count = 1;
    bool best_named = false;
    for (size_t pos = 0; pos < positions; ++pos) {
      if (shown[members.front()].count(pos)) continue;
      std::set<std::string_view> values;
      for (size_t m : members) values.insert(pos < parsed[m].args.size() ? parsed[m].args[pos] : std::string_view());
      const bool named = std::any_of(values.begin(), values.end(), [](std::string_view v) {
        return !v.empty() && (std::isalpha(static_cast<unsigned char>(v[0])) || v[0] == '_') && v != "true" &&
               v != "false";
      });
      if (values.size() > best_count || (values.size() == best_count && best_count > 1 && named && !best_named))
        best = pos, best_count = values.size(), best_named = named;
    }
    if (best_count <= 1) {  // no template argument separates them: number them in list order
      std::map<std::string_view, size_t> order;
      for (size_t m : members) {
        const size_t k = order.emplace(texts[m], order.size() + 1).first->second;
        if (k > 1) suffix[m] = " #" + std::to_string(k);
      }
      return;
    }
    std::vector<std::string> values;
    std::map<std::string, std::vector<size_t>> parts;
    std::vector<std::string> part_order;
    for (size_t m : members) {
      const std::string v = best < parsed[m].args.size() ? parsed[m].args[best] : std::string();
      auto [it, fresh] = parts.try_emplace(v);
      if (fresh) {
        part_order.push_back(v);
        if (!v.empty()) values.push_back(v);
      }
      it->second.push_back(m);
    }
    const std::vector<std::string> value_names = distinct(values, true);
    std::unordered_map<std::string, std::string> name_of;
    for (size_t i = 0; i < values.size(); ++i) name_of[values[i]] = value_names[i];
    for (const std::string& v : part_order) {
      for (size_t m : parts[v]) shown[m][best] = v.empty() ? std::string() : name_of[v];
      self(self, parts[v]);
    }
  };

  std::map<std::string, std::vector<size_t>> by_base;
  for (size_t i = 0; i < n; ++i) by_base[parsed[i].base].push_back(i);
  for (const auto& [base, members] : by_base) refine(refine, members);

  std::vector<std::string> out(n);
  for (size_t i = 0; i < n; ++i) {
    std::string args;
    for (const auto& [pos, text] : shown[i])
      if (!text.empty()) args += (args.empty() ? "" : ", ") + text;
    out[i] = parsed[i].base + (args.empty() ? "" : "<" + args + ">") + suffix[i];
  }
  return out;
}

}  // namespace

std::string demangle_kernel_name(std::string_view name) {
  if (name.substr(0, 2) != "_Z") return std::string(name);
  const std::string mangled(name);
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status),
                                             std::free);
  return status == 0 && out ? std::string(out.get()) : mangled;
}

std::string short_kernel_name(std::string_view name) { return parse(demangle_kernel_name(name), false).base; }

std::vector<std::string> distinct_short_names(const std::vector<std::string_view>& names) {
  std::vector<std::string> demangled;
  demangled.reserve(names.size());
  for (std::string_view n : names) demangled.push_back(demangle_kernel_name(n));
  std::vector<std::string> out = distinct(demangled, false);
  // A short name made from one kernel's arguments could still read like
  // another's: the later one is numbered, so rows never collide.
  std::map<std::string, std::string_view> owner;
  for (size_t i = 0; i < out.size(); ++i) {
    const std::string first = out[i];
    for (int k = 2;; ++k) {
      auto [it, fresh] = owner.try_emplace(out[i], demangled[i]);
      if (fresh || it->second == demangled[i]) break;
      out[i] = first + " #" + std::to_string(k);
    }
  }
  return out;
}

}  // namespace scalescope::trace
