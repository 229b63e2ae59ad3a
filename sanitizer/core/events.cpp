#include "events.h"

namespace nosync::san {

std::string_view to_string(ApiKind k) {
  switch (k) {
    case ApiKind::DeviceSync: return "device-sync";
    case ApiKind::ContextSync: return "context-sync";
    case ApiKind::StreamSync: return "stream-sync";
    case ApiKind::EventSync: return "event-sync";
    case ApiKind::Memcpy: return "memcpy";
    case ApiKind::MemcpyAsync: return "memcpy-async";
    case ApiKind::Memset: return "memset";
    case ApiKind::Free: return "free";
    case ApiKind::Malloc: return "malloc";
    case ApiKind::StreamQuery: return "stream-query";
    case ApiKind::EventQuery: return "event-query";
  }
  return "unknown";
}

std::string_view to_string(MemKind k) {
  switch (k) {
    case MemKind::Unknown: return "unknown";
    case MemKind::Device: return "device";
    case MemKind::Pinned: return "pinned";
    case MemKind::Pageable: return "pageable";
    case MemKind::Managed: return "managed";
  }
  return "unknown";
}

std::string_view to_string(Direction d) {
  switch (d) {
    case Direction::None: return "none";
    case Direction::HostToDevice: return "H2D";
    case Direction::DeviceToHost: return "D2H";
    case Direction::DeviceToDevice: return "D2D";
    case Direction::HostToHost: return "H2H";
  }
  return "none";
}

namespace {
bool host_side_pageable(const SyncEvent& e) {
  switch (e.direction) {
    case Direction::HostToDevice: return e.src == MemKind::Pageable;
    case Direction::DeviceToHost: return e.dst == MemKind::Pageable;
    default: return false;
  }
}
}  // namespace

bool is_host_blocking(const SyncEvent& e, bool malloc_is_sync) {
  switch (e.kind) {
    case ApiKind::DeviceSync:
    case ApiKind::ContextSync:
    case ApiKind::StreamSync:
    case ApiKind::EventSync:
      return true;
    case ApiKind::Free:
      return !e.null_free;
    case ApiKind::Memcpy:
      return e.direction == Direction::HostToDevice || e.direction == Direction::DeviceToHost;
    case ApiKind::MemcpyAsync:
      return host_side_pageable(e);
    case ApiKind::Memset:
      return e.dst == MemKind::Pinned || e.dst == MemKind::Managed;
    case ApiKind::Malloc:
      return malloc_is_sync;
    case ApiKind::StreamQuery:
    case ApiKind::EventQuery:
      return false;
  }
  return false;
}

}  // namespace nosync::san
