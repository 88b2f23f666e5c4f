#include "collect/host_facts.hpp"

#include <gtest/gtest.h>

#include "base/error.hpp"

namespace scalescope::collect {
namespace {

const std::string kTestdata = SCALESCOPE_COLLECT_TESTDATA;

TEST(CollectHostFacts, CpuList) {
  EXPECT_EQ(parse_cpu_list("0-3,8,10-11\n"), (std::vector<uint32_t>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_TRUE(parse_cpu_list("\n").empty());
  EXPECT_THROW(parse_cpu_list("3-1"), Error);
  EXPECT_THROW(parse_cpu_list("a"), Error);
  EXPECT_THROW(parse_cpu_list("0-99999999"), Error);
  EXPECT_EQ(format_cpu_list({0, 1, 2, 5, 7, 8}), "0-2,5,7-8");
  EXPECT_EQ(format_cpu_list({}), "");
}

TEST(CollectHostFacts, NumaMapsTwoNodesWithHugePages) {
  auto text = read_text_file(kTestdata + "/numa_maps_2node.txt");
  ASSERT_TRUE(text);
  auto pages = parse_numa_maps(*text, 4096);
  ASSERT_EQ(pages.size(), 2u);
  EXPECT_EQ(pages[0].node, 0);
  EXPECT_EQ(pages[0].bytes, (100u + 1000u + 4u + 10u) * 4096u);
  EXPECT_EQ(pages[1].node, 1);
  // 16 huge pages of 2 MiB count 32 MiB, not 16 x 4 KiB.
  EXPECT_EQ(pages[1].bytes, (20u + 2000u + 4u) * 4096u + 16u * 2048u * 1024u);
}

TEST(CollectHostFacts, NumaMapsCapturedAndTorn) {
  auto text = read_text_file(kTestdata + "/numa_maps_captured_1node.txt");
  ASSERT_TRUE(text);
  auto pages = parse_numa_maps(*text, 4096);
  ASSERT_EQ(pages.size(), 1u);
  EXPECT_EQ(pages[0].bytes, 48u * 4096u);
  // A read torn mid-line at exit is skipped field by field, never thrown.
  auto torn = parse_numa_maps("7f00 default anon=3 N0=3 kernelpagesize_kB=4\n7f01 default anon=2 N1=", 4096);
  ASSERT_EQ(torn.size(), 1u);
  EXPECT_EQ(torn[0].bytes, 3u * 4096u);
}

TEST(CollectHostFacts, SysfsNodesAndGpus) {
  auto nodes = read_cpu_numa_nodes(kTestdata + "/sys");
  ASSERT_EQ(nodes.size(), 224u);
  EXPECT_EQ(nodes[0], 0);
  EXPECT_EQ(nodes[55], 0);
  EXPECT_EQ(nodes[56], 1);
  EXPECT_EQ(nodes[112], 0);
  EXPECT_EQ(nodes[223], 1);
  auto gpus = read_pci_gpus(kTestdata + "/sys");
  ASSERT_EQ(gpus.size(), 2u);  // the NVIDIA audio function and the Intel bridge are not GPUs
  EXPECT_EQ(gpus[0].bus_id, "0000:19:00.0");
  EXPECT_EQ(gpus[0].device_id, 0x2335u);
  EXPECT_EQ(gpus[0].numa_node, 0);
  EXPECT_EQ(gpus[1].numa_node, 1);
  // CUDA's 8-digit domain spelling finds the same device.
  EXPECT_EQ(read_pci_numa_node("00000000:9A:00.0", kTestdata + "/sys"), 1);
  EXPECT_EQ(read_pci_numa_node("0000:ff:00.0", kTestdata + "/sys"), -1);
  EXPECT_TRUE(read_pci_gpus(kTestdata + "/no-such-sys").empty());
}

TEST(CollectHostFacts, MemoryPolicy) {
  EXPECT_EQ(format_memory_policy(0, {}), "default");
  EXPECT_EQ(format_memory_policy(2, {1}), "bind:1");
  EXPECT_EQ(format_memory_policy(3, {0, 1}), "interleave:0-1");
  EXPECT_EQ(format_memory_policy(1, {}), "local");
  EXPECT_EQ(format_memory_policy(1 | (1 << 15), {0}), "preferred:0");  // MPOL_F_STATIC_NODES flag ignored
  EXPECT_NE(read_memory_policy(), "unknown");
}

TEST(CollectHostFacts, ThisProcess) {
  trace::Metadata meta;
  fill_host_facts(meta, {{"RANK", "1"}, {"WORLD_SIZE", "2"}});
  EXPECT_FALSE(meta.hostname.empty());
  EXPECT_EQ(meta.pid, static_cast<uint32_t>(getpid()));
  EXPECT_EQ(meta.rank, 1);
  EXPECT_EQ(meta.world_size, 2);
  EXPECT_FALSE(meta.cpu_affinity.empty());
  EXPECT_NE(meta.command_line.find("collect_host_test"), std::string::npos);
  EXPECT_FALSE(meta.pages_at_start.empty());
}

}  // namespace
}  // namespace scalescope::collect
