#include "report/topo_tables.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "collect/host_facts.hpp"

namespace scalescope::report {
namespace {

// Two nodes of two CPUs, this process allowed CPUs 1 and 2 (one on each), a
// GPU on node 1 and one whose node the platform does not report.
TEST(TopoTables, CpusAndGpusByNode) {
  collect::HostTopology host;
  host.hostname = "node7";
  host.cpus_online = 4;
  host.node_of_cpu = {0, 0, 1, 1};
  host.cpus_allowed = {1, 2};
  host.gpus = {{"0000:19:00.0", 0x2335, 1}, {"0000:3b:00.0", 0x2335, -1}};
  host.memory_policy = "default";
  const std::vector<Table> t = topo_tables(host, "/sys");
  ASSERT_EQ(t.size(), 3u);
  const nlohmann::json summary = t[0].json(), numa = t[1].json(), gpus = t[2].json();
  EXPECT_EQ(summary["rows"][0]["numa_nodes"], 2);
  EXPECT_EQ(summary["rows"][0]["gpus"], 2);
  EXPECT_EQ(summary["rows"][0]["cpus_allowed"], "1-2");
  ASSERT_EQ(numa["rows"].size(), 2u);
  EXPECT_EQ(numa["rows"][0]["cpus"], "0-1");
  EXPECT_EQ(numa["rows"][0]["cpus_allowed_here"], "1");
  EXPECT_EQ(numa["rows"][0]["gpus"], 0);
  EXPECT_EQ(numa["rows"][1]["cpus_allowed_here"], "2");
  EXPECT_EQ(numa["rows"][1]["gpus"], 1);
  ASSERT_EQ(gpus["rows"].size(), 2u);
  EXPECT_EQ(gpus["rows"][0]["pci_device_id"], "0x2335");
  EXPECT_EQ(gpus["rows"][0]["numa_node_cpus"], "2-3");
  EXPECT_EQ(gpus["rows"][1]["numa_node_cpus"], "");
  EXPECT_FALSE(summary.contains("notes"));
}

// The JSON of the same host: CPUs as lists of numbers, the device id a
// number, a node the platform does not report as null.
TEST(TopoTables, JsonIsTyped) {
  collect::HostTopology host;
  host.hostname = "node7";
  host.cpus_online = 4;
  host.node_of_cpu = {0, 0, 1, 1};
  host.cpus_allowed = {1, 2};
  host.gpus = {{"0000:19:00.0", 0x2335, 1}, {"0000:3b:00.0", 0x2335, -1}};
  host.memory_policy = "default";
  const nlohmann::json j = topo_json(host, "/sys");
  EXPECT_EQ(j["sys_root"], "/sys");
  EXPECT_EQ(j["hostname"], "node7");
  EXPECT_EQ(j["cpus_online"], 4);
  EXPECT_EQ(j["cpus_allowed"], nlohmann::json({1, 2}));
  EXPECT_EQ(j["memory_policy"], "default");
  ASSERT_EQ(j["numa_nodes"].size(), 2u);
  EXPECT_EQ(j["numa_nodes"][0],
            nlohmann::json({{"node", 0}, {"cpus", {0, 1}}, {"cpus_allowed_here", {1}}, {"gpus", 0}}));
  EXPECT_EQ(j["numa_nodes"][1]["cpus_allowed_here"], nlohmann::json({2}));
  EXPECT_EQ(j["numa_nodes"][1]["gpus"], 1);
  ASSERT_EQ(j["gpus"].size(), 2u);
  EXPECT_EQ(j["gpus"][0]["pci_bus_id"], "0000:19:00.0");
  EXPECT_EQ(j["gpus"][0]["pci_device_id"], 0x2335);
  EXPECT_EQ(j["gpus"][0]["numa_node"], 1);
  EXPECT_EQ(j["gpus"][0]["numa_node_cpus"], nlohmann::json({2, 3}));
  EXPECT_TRUE(j["gpus"][1]["numa_node"].is_null());
  EXPECT_TRUE(j["gpus"][1]["numa_node_cpus"].empty());
}

// A host without NUMA or GPU information says where it looked.
TEST(TopoTables, SaysWhereItLookedWhenNothingIsThere) {
  const std::vector<Table> t = topo_tables(collect::HostTopology{}, "/captured/sys");
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].notes().at(0), "no NUMA information under /captured/sys/devices/system/node");
  EXPECT_TRUE(t[1].rows().empty());
  EXPECT_EQ(t[2].notes().at(0), "no NVIDIA GPU (vendor 0x10de) under /captured/sys/bus/pci/devices");
  const nlohmann::json j = topo_json(collect::HostTopology{}, "/captured/sys");
  EXPECT_TRUE(j["numa_nodes"].empty());
  EXPECT_TRUE(j["gpus"].empty());
}

}  // namespace
}  // namespace scalescope::report
