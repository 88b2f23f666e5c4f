#include "analyze/pickle_data.hpp"

#include <cstdint>
#include <cstring>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "base/text_output.hpp"

namespace scalescope::analyze {

namespace {

// Bounds on what one input may build: values made (each opcode makes at most
// one, so this bounds memory by the input's size) and, when turned into JSON,
// values written (memo references may share one list many times over) and the
// nesting depth (a list appended into itself nests without end).
constexpr size_t kMaxValues = size_t{1} << 24;
constexpr size_t kMaxWritten = size_t{1} << 22;
constexpr int kMaxDepth = 100;

enum class Kind : uint8_t { kNone, kBool, kInt, kFloat, kStr, kBytes, kList, kTuple, kDict };

struct Value {
  Kind kind = Kind::kNone;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;                // str (UTF-8) or bytes
  std::vector<uint32_t> items;  // list and tuple items; a dict's keys and values, alternating
};

struct Refused {
  std::string why;
};

[[noreturn]] void refuse(std::string why) { throw Refused{std::move(why)}; }

// Well-formed UTF-8 (no overlongs, surrogates or code points past U+10FFFF):
// what the repair leaves unchanged.
bool valid_utf8(std::string_view s) {
  std::string repaired;
  trace::detail::append_valid_utf8(repaired, s);
  return repaired == s;
}

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}

  nlohmann::json run() {
    if (in_.empty() || static_cast<unsigned char>(in_[0]) != 0x80)
      refuse("not a pickle of protocol 2 or later (it does not begin with PROTO)");
    for (;;) {
      const size_t at = pos_;
      const auto op = static_cast<unsigned char>(take(1)[0]);
      if (op == '.') {  // STOP
        if (stack_.empty()) refuse(fmt::format("STOP at byte {} with nothing built", at));
        size_t written = 0;
        return to_json(stack_.back(), 0, &written);
      }
      step(op, at);
    }
  }

 private:
  std::string_view take(size_t n) {
    if (n > in_.size() - pos_) refuse(fmt::format("cut short at byte {} (needs {} more bytes)", in_.size(), n));
    const std::string_view s = in_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  uint64_t uint_le(size_t n) {
    const std::string_view b = take(n);
    uint64_t v = 0;
    for (size_t k = 0; k < n; ++k) v |= uint64_t{static_cast<unsigned char>(b[k])} << (8 * k);
    return v;
  }
  // A length read from the input, checked against what is left of it.
  size_t length(size_t n) {
    const uint64_t len = uint_le(n);
    if (len > in_.size() - pos_) refuse(fmt::format("a length of {} bytes at byte {} runs past the end", len, pos_ - n));
    return static_cast<size_t>(len);
  }
  // LONG1/LONG4: little-endian two's complement of n bytes.
  int64_t long_int(size_t n) {
    if (n > 8) refuse(fmt::format("an int of {} bytes at byte {} (more than 64 bits)", n, pos_));
    if (n == 0) return 0;
    uint64_t v = uint_le(n);
    if (n < 8 && (v >> (8 * n - 1)) & 1) v |= ~uint64_t{0} << (8 * n);  // sign-extend
    return static_cast<int64_t>(v);
  }

  uint32_t make(Value v) {
    if (values_.size() >= kMaxValues) refuse(fmt::format("more than {} values", kMaxValues));
    values_.push_back(std::move(v));
    return static_cast<uint32_t>(values_.size() - 1);
  }
  void push(Value v) { stack_.push_back(make(std::move(v))); }
  uint32_t pop(size_t at) {
    if (stack_.size() <= (marks_.empty() ? 0 : marks_.back()))
      refuse(fmt::format("an opcode at byte {} takes a value from an empty stack", at));
    const uint32_t v = stack_.back();
    stack_.pop_back();
    return v;
  }
  // The values since the last MARK, removed from the stack with the mark.
  std::vector<uint32_t> pop_mark(size_t at) {
    if (marks_.empty()) refuse(fmt::format("an opcode at byte {} needs a MARK and there is none", at));
    const size_t m = marks_.back();
    marks_.pop_back();
    std::vector<uint32_t> items(stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
    stack_.resize(m);
    return items;
  }
  Value& top_of_kind(Kind kind, const char* what, size_t at) {
    if (stack_.size() <= (marks_.empty() ? 0 : marks_.back()))
      refuse(fmt::format("an opcode at byte {} needs a {} and the stack is empty", at, what));
    Value& v = values_[stack_.back()];
    if (v.kind != kind) refuse(fmt::format("an opcode at byte {} adds to something that is not a {}", at, what));
    return v;
  }
  void memo_put(uint64_t key, size_t at) {
    if (stack_.empty()) refuse(fmt::format("a memo put at byte {} with nothing on the stack", at));
    memo_[key] = stack_.back();
  }
  void memo_get(uint64_t key, size_t at) {
    const auto it = memo_.find(key);
    if (it == memo_.end()) refuse(fmt::format("a memo get at byte {} of key {}, never put", at, key));
    stack_.push_back(it->second);
  }
  void text(size_t len_bytes, Kind kind, size_t at) {
    const size_t n = length(len_bytes);
    Value v{kind};
    v.s = std::string(take(n));
    if (kind == Kind::kStr && !valid_utf8(v.s)) refuse(fmt::format("a str at byte {} is not UTF-8", at));
    push(std::move(v));
  }
  void tuple_of(std::vector<uint32_t> items) {
    Value v{Kind::kTuple};
    v.items = std::move(items);
    push(std::move(v));
  }

  void step(unsigned char op, size_t at) {
    switch (op) {
      case 0x80: {  // PROTO
        const auto version = static_cast<unsigned char>(take(1)[0]);
        if (version < 2 || version > 5) refuse(fmt::format("pickle protocol {} (2 to 5 are read)", version));
        return;
      }
      case 0x95: (void)length(8); return;  // FRAME: a hint for buffered readers; the opcodes follow as usual
      case 'N': push({Kind::kNone}); return;
      case 0x88: case 0x89: {  // NEWTRUE, NEWFALSE
        Value v{Kind::kBool};
        v.b = op == 0x88;
        push(std::move(v));
        return;
      }
      case 'J': case 'K': case 'M': case 0x8a: case 0x8b: {  // BININT, BININT1, BININT2, LONG1, LONG4
        Value v{Kind::kInt};
        if (op == 'J') v.i = static_cast<int32_t>(static_cast<uint32_t>(uint_le(4)));
        else if (op == 'K') v.i = static_cast<int64_t>(uint_le(1));
        else if (op == 'M') v.i = static_cast<int64_t>(uint_le(2));
        else v.i = long_int(op == 0x8a ? static_cast<size_t>(uint_le(1)) : length(4));
        push(std::move(v));
        return;
      }
      case 'G': {  // BINFLOAT: 8 bytes, big-endian
        const std::string_view b = take(8);
        uint64_t bits = 0;
        for (char c : b) bits = (bits << 8) | static_cast<unsigned char>(c);
        Value v{Kind::kFloat};
        std::memcpy(&v.f, &bits, sizeof v.f);
        push(std::move(v));
        return;
      }
      case 0x8c: text(1, Kind::kStr, at); return;    // SHORT_BINUNICODE
      case 'X': text(4, Kind::kStr, at); return;     // BINUNICODE
      case 0x8d: text(8, Kind::kStr, at); return;    // BINUNICODE8
      case 'C': text(1, Kind::kBytes, at); return;   // SHORT_BINBYTES
      case 'B': text(4, Kind::kBytes, at); return;   // BINBYTES
      case 0x8e: text(8, Kind::kBytes, at); return;  // BINBYTES8
      case '}': push({Kind::kDict}); return;         // EMPTY_DICT
      case ']': push({Kind::kList}); return;         // EMPTY_LIST
      case ')': push({Kind::kTuple}); return;        // EMPTY_TUPLE
      case '(': marks_.push_back(stack_.size()); return;  // MARK
      case 't': tuple_of(pop_mark(at)); return;           // TUPLE
      case 0x85: case 0x86: case 0x87: {                  // TUPLE1, TUPLE2, TUPLE3
        std::vector<uint32_t> items(static_cast<size_t>(op - 0x84));
        for (size_t k = items.size(); k-- > 0;) items[k] = pop(at);
        tuple_of(std::move(items));
        return;
      }
      case 'l': {  // LIST
        Value v{Kind::kList};
        v.items = pop_mark(at);
        push(std::move(v));
        return;
      }
      case 'd': {  // DICT
        Value v{Kind::kDict};
        v.items = pop_mark(at);
        if (v.items.size() % 2) refuse(fmt::format("DICT at byte {} with a key and no value", at));
        push(std::move(v));
        return;
      }
      case 'a': {  // APPEND
        const uint32_t item = pop(at);
        top_of_kind(Kind::kList, "list", at).items.push_back(item);
        return;
      }
      case 'e': {  // APPENDS
        std::vector<uint32_t> items = pop_mark(at);
        auto& list = top_of_kind(Kind::kList, "list", at).items;
        list.insert(list.end(), items.begin(), items.end());
        return;
      }
      case 's': {  // SETITEM
        const uint32_t value = pop(at), key = pop(at);
        auto& dict = top_of_kind(Kind::kDict, "dict", at).items;
        dict.push_back(key);
        dict.push_back(value);
        return;
      }
      case 'u': {  // SETITEMS
        std::vector<uint32_t> items = pop_mark(at);
        if (items.size() % 2) refuse(fmt::format("SETITEMS at byte {} with a key and no value", at));
        auto& dict = top_of_kind(Kind::kDict, "dict", at).items;
        dict.insert(dict.end(), items.begin(), items.end());
        return;
      }
      case '0': (void)pop(at); return;       // POP
      case '1': (void)pop_mark(at); return;  // POP_MARK
      case '2': {                            // DUP
        const uint32_t v = pop(at);
        stack_.push_back(v);
        stack_.push_back(v);
        return;
      }
      case 'q': memo_put(uint_le(1), at); return;      // BINPUT
      case 'r': memo_put(uint_le(4), at); return;      // LONG_BINPUT
      case 0x94: memo_put(memo_.size(), at); return;   // MEMOIZE
      case 'h': memo_get(uint_le(1), at); return;      // BINGET
      case 'j': memo_get(uint_le(4), at); return;      // LONG_BINGET
      default: break;
    }
    const char* name = nullptr;
    switch (op) {
      case 'c': name = "GLOBAL"; break;
      case 0x93: name = "STACK_GLOBAL"; break;
      case 'R': name = "REDUCE"; break;
      case 'b': name = "BUILD"; break;
      case 0x81: name = "NEWOBJ"; break;
      case 0x92: name = "NEWOBJ_EX"; break;
      case 'i': name = "INST"; break;
      case 'o': name = "OBJ"; break;
      case 'P': name = "PERSID"; break;
      case 'Q': name = "BINPERSID"; break;
      case 0x82: case 0x83: case 0x84: name = "EXT"; break;
      case 0x96: name = "BYTEARRAY8"; break;
      case 0x97: name = "NEXT_BUFFER"; break;
      case 0x98: name = "READONLY_BUFFER"; break;
      case 0x8f: name = "EMPTY_SET"; break;
      case 0x90: name = "ADDITEMS"; break;
      case 0x91: name = "FROZENSET"; break;
      default: break;
    }
    if (name)
      refuse(fmt::format("pickle opcode {} ({:#04x}) at byte {} is refused: only plain data (dict, list, tuple, "
                         "str, bytes, int, float, bool, None) is read",
                         name, op, at));
    refuse(fmt::format("unknown or unsupported pickle opcode {:#04x} at byte {}", op, at));
  }

  nlohmann::json to_json(uint32_t index, int depth, size_t* written) const {
    if (depth > kMaxDepth) refuse(fmt::format("values nested deeper than {}", kMaxDepth));
    if (++*written > kMaxWritten) refuse(fmt::format("more than {} values once memo references are expanded", kMaxWritten));
    const Value& v = values_[index];
    switch (v.kind) {
      case Kind::kNone: return nullptr;
      case Kind::kBool: return v.b;
      case Kind::kInt: return v.i;
      case Kind::kFloat: return v.f;
      case Kind::kStr: return v.s;
      case Kind::kBytes: return nlohmann::json::binary(std::vector<uint8_t>(v.s.begin(), v.s.end()));
      case Kind::kList:
      case Kind::kTuple: {
        nlohmann::json a = nlohmann::json::array();
        for (uint32_t item : v.items) a.push_back(to_json(item, depth + 1, written));
        return a;
      }
      case Kind::kDict: {
        nlohmann::json o = nlohmann::json::object();
        for (size_t k = 0; k + 1 < v.items.size(); k += 2) {
          const Value& key = values_[v.items[k]];
          std::string name;
          if (key.kind == Kind::kStr) name = key.s;
          else if (key.kind == Kind::kInt) name = std::to_string(key.i);
          else refuse("a dict key that is neither a str nor an int");
          o[name] = to_json(v.items[k + 1], depth + 1, written);
        }
        return o;
      }
    }
    return nullptr;
  }

  std::string_view in_;
  size_t pos_ = 0;
  std::vector<Value> values_;
  std::vector<uint32_t> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, uint32_t> memo_;
};

}  // namespace

std::optional<nlohmann::json> read_pickle_data(std::string_view bytes, std::string* error) {
  try {
    return Reader(bytes).run();
  } catch (const Refused& r) {
    if (error) *error = r.why;
    return std::nullopt;
  }
}

}  // namespace scalescope::analyze
