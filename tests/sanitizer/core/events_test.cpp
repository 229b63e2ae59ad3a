#include "events.h"

#include <gtest/gtest.h>

using namespace nosync::san;

namespace {
SyncEvent ev(ApiKind k, Direction d = Direction::None, MemKind src = MemKind::Unknown,
             MemKind dst = MemKind::Unknown) {
  SyncEvent e;
  e.kind = k;
  e.direction = d;
  e.src = src;
  e.dst = dst;
  return e;
}
}  // namespace

TEST(Events, SynchronizeCallsAlwaysBlock) {
  for (ApiKind k : {ApiKind::DeviceSync, ApiKind::ContextSync, ApiKind::StreamSync, ApiKind::EventSync, ApiKind::Free})
    EXPECT_TRUE(is_host_blocking(ev(k), false)) << to_string(k);
}

TEST(Events, FreeingNullIsNoOperation) {
  SyncEvent e = ev(ApiKind::Free);
  e.null_free = true;
  EXPECT_FALSE(is_host_blocking(e, false));
}

TEST(Events, QueriesNeverBlock) {
  EXPECT_FALSE(is_host_blocking(ev(ApiKind::StreamQuery), true));
  EXPECT_FALSE(is_host_blocking(ev(ApiKind::EventQuery), true));
  EXPECT_TRUE(is_query(ApiKind::EventQuery));
  EXPECT_FALSE(is_query(ApiKind::StreamSync));
}

TEST(Events, AsyncCopiesBlockOnlyWithPageableHostMemory) {
  EXPECT_TRUE(is_host_blocking(ev(ApiKind::MemcpyAsync, Direction::HostToDevice, MemKind::Pageable, MemKind::Device), false));
  EXPECT_TRUE(is_host_blocking(ev(ApiKind::MemcpyAsync, Direction::DeviceToHost, MemKind::Device, MemKind::Pageable), false));
  EXPECT_FALSE(is_host_blocking(ev(ApiKind::MemcpyAsync, Direction::HostToDevice, MemKind::Pinned, MemKind::Device), false));
  EXPECT_FALSE(is_host_blocking(ev(ApiKind::MemcpyAsync, Direction::DeviceToHost, MemKind::Device, MemKind::Pinned), false));
  EXPECT_FALSE(is_host_blocking(ev(ApiKind::MemcpyAsync, Direction::DeviceToDevice, MemKind::Device, MemKind::Device), false));
  // The destination of an upload being "pageable" is nonsense; only the host side counts.
  EXPECT_FALSE(is_host_blocking(ev(ApiKind::MemcpyAsync, Direction::HostToDevice, MemKind::Pinned, MemKind::Pageable), false));
}

TEST(Events, SyncCopiesBlockWhenADeviceIsOnOneSide) {
  EXPECT_TRUE(is_host_blocking(ev(ApiKind::Memcpy, Direction::HostToDevice), false));
  EXPECT_TRUE(is_host_blocking(ev(ApiKind::Memcpy, Direction::DeviceToHost), false));
  EXPECT_FALSE(is_host_blocking(ev(ApiKind::Memcpy, Direction::DeviceToDevice), false));
  EXPECT_FALSE(is_host_blocking(ev(ApiKind::Memcpy, Direction::HostToHost), false));
}

TEST(Events, MemsetBlocksOnlyIntoPinnedOrManagedMemory) {
  EXPECT_FALSE(is_host_blocking(ev(ApiKind::Memset, Direction::None, MemKind::Unknown, MemKind::Device), false));
  EXPECT_TRUE(is_host_blocking(ev(ApiKind::Memset, Direction::None, MemKind::Unknown, MemKind::Pinned), false));
  EXPECT_TRUE(is_host_blocking(ev(ApiKind::Memset, Direction::None, MemKind::Unknown, MemKind::Managed), false));
}

TEST(Events, MallocBlocksOnlyWhenAskedTo) {
  EXPECT_FALSE(is_host_blocking(ev(ApiKind::Malloc), false));
  EXPECT_TRUE(is_host_blocking(ev(ApiKind::Malloc), true));
}
