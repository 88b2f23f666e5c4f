// Offline naming of native frames (format 1.4): frames recorded as (module,
// file offset) with the module's build-id are named from the file on this
// machine; a file whose build-id differs, a missing file, a module without a
// record, JIT code and a machine without libdw are reported, never misnamed.
// The module is this test binary; its functions' file offsets come from
// /proc/self/maps as the collector computes them.
#include "trace/model/frame_namer.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "trace/model/elf_build_id.hpp"
#include "trace/model/tests/test_support.hpp"

namespace scalescope::trace {
namespace {

namespace fs = std::filesystem;

extern "C" __attribute__((noinline, used)) int frame_namer_test_target(int x) {
  asm volatile("" ::: "memory");
  return x * 3 + 1;
}

struct Fixture {
  Trace t;
  std::string exe;
  uint64_t offset = 0;
  std::string build_id;
};

Fixture fixture() {
  Fixture f;
  EXPECT_TRUE(testing::locate_in_maps(reinterpret_cast<uintptr_t>(&frame_namer_test_target) + 4, &f.exe, &f.offset));
  std::string error;
  f.build_id = elf_build_id_of_file(f.exe.c_str(), &error).value_or("");
  EXPECT_FALSE(f.build_id.empty()) << "the test binary has no build-id note: " << error;
  return f;
}

std::string function_of(const Trace& t, uint32_t id) {
  for (size_t i = 0; i < t.host_callsites.size(); ++i)
    if (t.host_callsites.id[i] == id) return std::string(t.strings.view(t.host_callsites.function[i]));
  return "?";
}

FrameStatus status_of(const Trace& t, uint32_t id) {
  for (size_t i = 0; i < t.host_callsites.size(); ++i)
    if (t.host_callsites.id[i] == id) return t.host_callsites.status[i];
  return FrameStatus::kUnnamed;
}

TEST(ElfBuildId, ReadsTheNoteOfThisBinaryAndRejectsOtherBytes) {
  const Fixture f = fixture();
  EXPECT_EQ(f.build_id.size() % 2, 0u);
  EXPECT_GE(f.build_id.size(), 16u);
  for (char c : f.build_id) EXPECT_TRUE((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) << f.build_id;
  // The same from the bytes in memory.
  std::ifstream in(f.exe, std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string error;
  EXPECT_EQ(elf_build_id(bytes, &error).value_or("none"), f.build_id);
  // Not an ELF; a cut one; a missing file.
  const std::vector<uint8_t> text = {'h', 'e', 'l', 'l', 'o'};
  EXPECT_FALSE(elf_build_id(text, &error).has_value());
  EXPECT_EQ(error, "not an ELF file");
  bytes.resize(70);  // header, but the program headers are cut off
  EXPECT_FALSE(elf_build_id(bytes, &error).has_value());
  EXPECT_EQ(error, "truncated program headers");
  EXPECT_FALSE(elf_build_id_of_file("/nonexistent/libgone.so", &error).has_value());
  EXPECT_EQ(error, "No such file or directory");
}

TEST(FrameNamer, NamesFramesOfThisBinaryOfflineAndReportsWhyOthersAreNot) {
  Fixture f = fixture();
  Trace& t = f.t;
  const StringId exe = t.strings.intern(f.exe), gone = t.strings.intern("/nonexistent/libgone.so"),
                 unrecorded = t.strings.intern("/usr/lib/libunrecorded.so"), anon = t.strings.intern("[anon]");
  t.host_modules.push({100, exe, t.strings.intern(f.build_id), 0x555500000000, 0x555500100000, 0});
  t.host_modules.push({100, gone, t.strings.intern("0011223344556677"), 0x7f0000000000, 0x7f0000010000, 0x1000});
  t.host_callsites.push({1, 0, kNoString, exe, f.offset});
  t.host_callsites.push({2, 1, kNoString, gone, 0x1234});
  t.host_callsites.push({3, 1, kNoString, unrecorded, 0x1234});
  t.host_callsites.push({4, 1, kNoString, anon, 0x7f0012345678});
  t.host_callsites.push({5, 1, kNoString, kNoString, 0x10});
  t.host_callsites.push({6, 1, kNoString, exe, 0x7fffffffffff});  // past every segment
  FrameNamer namer;
  namer.name(t);
  EXPECT_EQ(function_of(t, 1), "frame_namer_test_target");
  EXPECT_EQ(status_of(t, 1), FrameStatus::kNamed);
  EXPECT_EQ(status_of(t, 2), FrameStatus::kModuleMissing);
  EXPECT_EQ(function_of(t, 2), "");
  EXPECT_EQ(status_of(t, 3), FrameStatus::kNoModuleRecord);
  EXPECT_EQ(status_of(t, 4), FrameStatus::kNotAFile);
  EXPECT_EQ(status_of(t, 5), FrameStatus::kUnmapped);
  EXPECT_EQ(status_of(t, 6), FrameStatus::kNoSymbol);
  EXPECT_EQ(function_of(t, 6), "");
  const std::string& line = t.meta.extra["host_stack_naming"];
  EXPECT_NE(line.find("offline: 1 of 6 frames named"), std::string::npos) << line;
  EXPECT_NE(line.find("module missing 1 (libgone.so)"), std::string::npos) << line;
  EXPECT_NE(line.find("no symbol 1"), std::string::npos) << line;
  EXPECT_EQ(namer.files_loaded(), 1u);
}

TEST(FrameNamer, ADifferingBuildIdIsReportedNotMisnamed) {
  Fixture f = fixture();
  Trace& t = f.t;
  const StringId exe = t.strings.intern(f.exe);
  // The same path, but the process ran another build.
  std::string other = f.build_id;
  other[0] = other[0] == 'a' ? 'b' : 'a';
  t.host_modules.push({100, exe, t.strings.intern(other), 0, 0, 0});
  t.host_callsites.push({1, 0, kNoString, exe, f.offset});
  FrameNamer namer;
  namer.name(t);
  EXPECT_EQ(status_of(t, 1), FrameStatus::kBuildIdDiffers);
  EXPECT_EQ(function_of(t, 1), "");
  EXPECT_NE(t.meta.extra["host_stack_naming"].find("build-id differs 1"), std::string::npos);
  EXPECT_EQ(namer.files_loaded(), 0u);  // a wrong file's symbols are never read
}

TEST(FrameNamer, LooksUnderSymfsFirst) {
  Fixture f = fixture();
  const fs::path symfs = fs::temp_directory_path() / ("frame_namer_symfs_" + std::to_string(getpid()));
  fs::remove_all(symfs);
  // The module ran at a path this machine lacks; a copy sits under symfs.
  const std::string elsewhere = "/opt/elsewhere/frame_namer_test";
  fs::create_directories(symfs / "opt/elsewhere");
  fs::copy_file("/proc/self/exe", symfs / "opt/elsewhere/frame_namer_test");
  // Under symfs at the real path: another ELF, which wins over the real file.
  const fs::path shadow = symfs / fs::path(f.exe).relative_path();
  fs::create_directories(shadow.parent_path());
  fs::copy_file("/bin/true", shadow);
  Trace t;
  const StringId moved = t.strings.intern(elsewhere), exe = t.strings.intern(f.exe);
  const StringId id = t.strings.intern(f.build_id);
  t.host_modules.push({100, moved, id, 0, 0, 0});
  t.host_modules.push({100, exe, id, 0, 0, 0});
  t.host_callsites.push({1, 0, kNoString, moved, f.offset});
  t.host_callsites.push({2, 0, kNoString, exe, f.offset});
  FrameNamer namer({symfs, false});
  namer.name(t);
  EXPECT_EQ(function_of(t, 1), "frame_namer_test_target");
  EXPECT_EQ(status_of(t, 2), FrameStatus::kBuildIdDiffers);
  Trace plain;  // without symfs the path is missing
  const StringId p = plain.strings.intern(elsewhere);
  plain.host_modules.push({100, p, plain.strings.intern(f.build_id), 0, 0, 0});
  plain.host_callsites.push({1, 0, kNoString, p, f.offset});
  FrameNamer().name(plain);
  EXPECT_EQ(status_of(plain, 1), FrameStatus::kModuleMissing);
  fs::remove_all(symfs);
}

TEST(FrameNamer, WithoutLibdwFramesSaySo) {
  Fixture f = fixture();
  Trace& t = f.t;
  const StringId exe = t.strings.intern(f.exe);
  t.host_modules.push({100, exe, t.strings.intern(f.build_id), 0, 0, 0});
  t.host_callsites.push({1, 0, kNoString, exe, f.offset});
  FrameNamer namer({{}, true});
  namer.name(t);
  EXPECT_EQ(status_of(t, 1), FrameStatus::kNoLibdw);
  EXPECT_NE(t.meta.extra["host_stack_naming"].find("libdw missing 1"), std::string::npos);
}

TEST(FrameNamer, LoadsEachFileOnceForManyTracesAndKeepsOldNames) {
  Fixture f = fixture();
  std::vector<Trace> ranks(3);
  for (Trace& t : ranks) {
    const StringId exe = t.strings.intern(f.exe);
    t.host_modules.push({100, exe, t.strings.intern(f.build_id), 0, 0, 0});
    t.host_callsites.push({1, 0, kNoString, exe, f.offset});
  }
  // A 1.3 file named at exit (no module rows): its name stays, counted named.
  Trace old;
  old.host_callsites.push({1, 0, old.strings.intern("main"), old.strings.intern("/usr/bin/python3"), 0x1040});
  old.host_callsites.push({2, 1, kNoString, old.strings.intern("/usr/bin/python3"), 0x2040});
  FrameNamer namer;
  for (Trace& t : ranks) namer.name(t);
  namer.name(old);
  for (const Trace& t : ranks) EXPECT_EQ(function_of(t, 1), "frame_namer_test_target");
  EXPECT_EQ(namer.files_loaded(), 1u);
  EXPECT_EQ(function_of(old, 1), "main");
  EXPECT_EQ(status_of(old, 1), FrameStatus::kNamed);
  EXPECT_EQ(status_of(old, 2), FrameStatus::kNoModuleRecord);
  // Traces without callsites: nothing to do, no summary.
  std::vector<Trace> none(2);
  name_frames(none);
  EXPECT_EQ(none[0].meta.extra.count("host_stack_naming"), 0u);
}

}  // namespace
}  // namespace scalescope::trace
