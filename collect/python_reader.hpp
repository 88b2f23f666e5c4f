#pragma once
// Python stacks read from outside a running CPython process, the way py-spy
// does it: no code in the process, no stop. The reader finds _PyRuntime
// through the ELF symbol table of the python executable or the libpython it
// maps (/proc/PID/maps), reads the interpreter's version (Py_Version), then
// at each sample walks interpreters -> thread states -> the
// _PyInterpreterFrame chain -> code objects with process_vm_readv, and
// decodes each frame's line from the code object's location table.
//
// The process runs on while it is read, so a sample can tear: a frame popped
// and its memory reused between two reads. Every object read is checked
// against the type it must have (PyCode_Type, PyUnicode_Type, PyBytes_Type,
// addresses from the same symbol table); a thread whose walk meets anything
// else is dropped from that sample and counted as torn, never named from
// garbage. Supported: CPython 3.11 and 3.12 (layouts below); any other
// version is a one-line note, never a read.
//
//   std::string note;
//   auto r = PythonProcessReader::open(pid, &note);   // null: note says why
//   std::vector<PythonThreadStack> stacks;  r->sample(&stacks);

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "trace/model/python_stacks.hpp"

namespace scalescope::collect {

// Byte offsets of the fields a stack walk reads, for one CPython minor
// version on a 64-bit Linux build (x86-64 and aarch64 share them).
struct CPythonLayout {
  uint32_t minor = 0;
  uint64_t runtime_interpreters_head = 0;                       // _PyRuntimeState.interpreters.head
  uint64_t interp_next = 0, interp_threads_head = 0;            // PyInterpreterState
  uint64_t tstate_next = 0, tstate_native_thread_id = 0;        // PyThreadState
  uint64_t tstate_cframe = 0, cframe_current_frame = 0;         // PyThreadState.cframe->current_frame
  uint64_t frame_code = 0, frame_previous = 0;                  // _PyInterpreterFrame
  uint64_t frame_prev_instr = 0, frame_owner = 0;
  int frame_owned_by_cstack = -1;                               // owner of C-stack entry frames (skipped); -1: none
  uint64_t code_firstlineno = 0, code_filename = 0, code_name = 0;  // PyCodeObject
  uint64_t code_qualname = 0, code_linetable = 0, code_adaptive = 0;
  uint64_t unicode_length = 0, unicode_state = 0;               // PyASCIIObject
  uint64_t unicode_ascii_data = 0, unicode_compact_data = 0;    // sizeof(PyASCIIObject), sizeof(PyCompactUnicodeObject)
  uint64_t bytes_size = 0, bytes_data = 0;                      // PyBytesObject.ob_size, ob_sval
};

// The layout for a Py_Version value (0x030B02F0 is 3.11.2); null when the
// minor version is not one this reader knows.
const CPythonLayout* cpython_layout(uint32_t py_version_hex);

// The line of the instruction at byte_offset of a code object, decoded from
// its co_linetable (the 3.11+ location table, Objects/locations.md in
// CPython); 0 when the table gives the instruction no line or ends before it.
// Bounded: bytes past the table are never read.
int32_t line_for_offset(std::span<const uint8_t> location_table, int32_t first_line, int64_t byte_offset);

// Reads n bytes of the other process at addr; false when it cannot.
using RemoteRead = std::function<bool(uint64_t addr, size_t n, void* out)>;

// Where the type objects lie in the other process: what each object read is
// checked against.
struct CPythonTypes {
  uint64_t code = 0, unicode = 0, bytes = 0;
};

struct PythonThreadStack {
  uint32_t native_id = 0;                        // the OS thread id (PyThreadState.native_thread_id)
  std::vector<trace::PythonStackFrame> frames;  // leaf first; function is the qualified name
  bool truncated = false;                        // deeper than kMaxPythonDepth: the outermost frames cut
};

inline constexpr size_t kMaxPythonDepth = 64;  // as the bootstrap keeps (_pystacks.MAX_DEPTH)

// Decoded code objects, by address; a code object freed and another put at
// its address is told apart by its fields (name, file, table pointers).
class CodeCache {
 public:
  struct Code {
    uint64_t filename = 0, qualname = 0, linetable = 0;  // the pointers it was read from
    int32_t first_line = 0;
    std::string file, function;
    std::vector<uint8_t> table;
  };
  const Code* find(uint64_t addr, const Code& key) const;
  const Code* put(uint64_t addr, Code code);
  size_t size() const { return codes_.size(); }

 private:
  std::unordered_map<uint64_t, Code> codes_;
};

// One sample of every thread of every interpreter, over any memory (the live
// process or, in tests and the fuzzer, bytes). Threads whose walk tore are
// left out and added to *torn.
std::vector<PythonThreadStack> read_thread_stacks(const CPythonLayout& layout, const CPythonTypes& types,
                                                  uint64_t runtime_addr, const RemoteRead& read, CodeCache& cache,
                                                  uint64_t* torn);

class PythonProcessReader {
 public:
  // Null, with *note set, when pid is not a CPython process ("pid 7: not a
  // Python process"), runs a version this reader does not support
  // ("python stacks from outside: CPython 3.13 not supported"), or cannot be
  // read (permissions: same user or CAP_SYS_PTRACE, Yama's ptrace_scope).
  // *is_python (when given) tells the first case from the others.
  static std::unique_ptr<PythonProcessReader> open(uint32_t pid, std::string* note, bool* is_python = nullptr);

  // One sample; false when the process is gone or can no longer be read.
  bool sample(std::vector<PythonThreadStack>* out);

  uint32_t pid() const { return pid_; }
  uint32_t version_minor() const { return layout_->minor; }
  uint64_t torn() const { return torn_; }

 private:
  PythonProcessReader() = default;
  uint32_t pid_ = 0;
  const CPythonLayout* layout_ = nullptr;
  CPythonTypes types_;
  uint64_t runtime_ = 0, torn_ = 0;
  CodeCache cache_;
};

// One sample of a process's Python threads (the process may be this one: a
// hang dump reads its own interpreter so, without the GIL). Empty when the
// process is not CPython; empty with *note set when it is but cannot be read.
std::vector<PythonThreadStack> sample_python_threads_once(uint32_t pid, std::string* note);

}  // namespace scalescope::collect
