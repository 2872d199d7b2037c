// An allocator for large arrays that are walked at random (a fleet's histogram rows): blocks of
// 2 MiB and more are mapped on 2 MiB boundaries and offered to the kernel for transparent huge
// pages (madvise), so that a fleet of 100,000 workloads costs a few hundred page faults and TLB
// entries instead of tens of thousands. Where THP is off this is plain anonymous memory. Small
// blocks come from the default allocator.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>

namespace gpuvpa {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;

template <typename T>
class HugePageAllocator {
 public:
  using value_type = T;
  HugePageAllocator() = default;
  template <typename U>
  explicit HugePageAllocator(const HugePageAllocator<U>&) {}

  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes < kHugePageBytes) return std::allocator<T>().allocate(n);
    const size_t size = RoundUp(bytes);
    // One huge page more than needed, so that an aligned start lies inside; the rest goes back.
    void* const mapped = ::mmap(nullptr, size + kHugePageBytes, PROT_READ | PROT_WRITE,
                                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapped == MAP_FAILED) throw std::bad_alloc();
    const auto start = reinterpret_cast<uintptr_t>(mapped);
    const uintptr_t aligned = RoundUp(start);
    if (aligned > start) ::munmap(mapped, aligned - start);
    const uintptr_t tail = start + size + kHugePageBytes - (aligned + size);
    if (tail > 0) ::munmap(reinterpret_cast<void*>(aligned + size), tail);
    ::madvise(reinterpret_cast<void*>(aligned), size, MADV_HUGEPAGE);  // a hint: may be off
    return reinterpret_cast<T*>(aligned);
  }
  void deallocate(T* p, size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes < kHugePageBytes)
      std::allocator<T>().deallocate(p, n);
    else
      ::munmap(p, RoundUp(bytes));
  }
  template <typename U>
  bool operator==(const HugePageAllocator<U>&) const {
    return true;
  }

 private:
  static uintptr_t RoundUp(uintptr_t v) { return (v + kHugePageBytes - 1) & ~(kHugePageBytes - 1); }
};

}  // namespace gpuvpa
