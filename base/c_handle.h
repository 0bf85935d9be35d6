// One owning alias for every C library handle (libcap cap_t, libnl objects, ...):
//   using CapHandle = CHandle<std::remove_pointer_t<cap_t>, FreeCap>;
#pragma once

#include <memory>

namespace sbx::base {

template <auto Free>
struct Deleter {
  template <typename T>
  void operator()(T* p) const {
    if (p != nullptr) Free(p);
  }
};

template <typename T, auto Free>
using CHandle = std::unique_ptr<T, Deleter<Free>>;

}  // namespace sbx::base
