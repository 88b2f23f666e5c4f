#include "collect/buffer_pool.hpp"

#include <gtest/gtest.h>

#include <thread>

namespace scalescope::collect {
namespace {

TEST(CollectBufferPool, FullPoolDropsAndCountsWithoutBlocking) {
  BufferPool pool(1000, 3);
  EXPECT_EQ(pool.buffer_bytes(), 1000u);
  uint8_t* a = pool.acquire();
  uint8_t* b = pool.acquire();
  uint8_t* c = pool.acquire();
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 8, 0u);
  EXPECT_EQ(pool.acquire(), nullptr);  // returns at once: the producer never waits
  EXPECT_EQ(pool.acquire(), nullptr);
  EXPECT_EQ(pool.acquire_failures(), 2u);
  pool.complete(a, 100);
  pool.complete(b, 200);
  std::vector<BufferPool::Filled> filled;
  pool.take_filled(filled, std::chrono::milliseconds(0));
  ASSERT_EQ(filled.size(), 2u);
  EXPECT_EQ(filled[1].valid_bytes, 200u);
  for (auto f : filled) pool.release(f.data);
  EXPECT_EQ(pool.free_count(), 2u);
  EXPECT_NE(pool.acquire(), nullptr);
}

TEST(CollectBufferPool, ConsumerWakesOnCompleteAndOnWake) {
  BufferPool pool(64, 2);
  uint8_t* a = pool.acquire();
  std::thread producer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    pool.complete(a, 8);
  });
  std::vector<BufferPool::Filled> filled;
  auto t0 = std::chrono::steady_clock::now();
  while (filled.empty()) pool.take_filled(filled, std::chrono::seconds(10));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  producer.join();
  filled.clear();
  std::thread waker([&] { pool.wake(); });
  pool.take_filled(filled, std::chrono::seconds(30));  // returns on wake, not after 30 s
  waker.join();
  EXPECT_TRUE(filled.empty());
}

TEST(CollectBufferPool, ManyProducersOneConsumer) {
  BufferPool pool(256, 8);
  std::atomic<uint64_t> completed{0};
  std::atomic<bool> done{false};
  std::thread consumer([&] {
    std::vector<BufferPool::Filled> filled;
    while (true) {
      bool last = done.load();  // producers finished before done: this pass sees all
      filled.clear();
      pool.take_filled(filled, std::chrono::milliseconds(5));
      for (auto f : filled) pool.release(f.data);
      if (last) break;
    }
  });
  std::vector<std::thread> producers;
  for (int t = 0; t < 4; ++t)
    producers.emplace_back([&] {
      for (int i = 0; i < 2000; ++i)
        if (uint8_t* b = pool.acquire()) {
          pool.complete(b, 8);
          ++completed;
        }
    });
  for (auto& p : producers) p.join();
  done = true;
  consumer.join();
  EXPECT_EQ(completed + pool.acquire_failures(), 8000u);
  EXPECT_EQ(pool.free_count(), 8u);
}

}  // namespace
}  // namespace scalescope::collect
