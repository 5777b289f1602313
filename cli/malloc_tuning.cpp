#include "cli/malloc_tuning.hpp"

#include <malloc.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>

namespace glass {

void tune_malloc_for_training() {
  // Keep freed memory in the process instead of returning it to the kernel (heap trim, munmap),
  // which would cost fresh page faults in the next step. The peak memory is unchanged.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
  mallopt(M_TOP_PAD, 16 << 20);
  // No fastbins: tensors are 64-byte aligned (posix_memalign), whose split-off remainders would
  // land in the fastbins and be merged again (malloc_consolidate) at every larger request
  // (the effect on generation: bench/README.md).
  mallopt(M_MXFAST, 0);

  // Transparent huge pages (2 MB instead of 4 KB) for the tensors. A training step touches far
  // more memory than the caches hold (~70 MB at B=12, T=64), and with 4 KB pages nearly every
  // cold access also misses the TLB (a page-table walk, dearer still in a virtual machine);
  // one 2 MB page covers 512 of them. Linux hands out huge pages only to memory advised with
  // MADV_HUGEPAGE when /sys/kernel/mm/transparent_hugepage/enabled is "madvise" (the usual
  // default). So reserve 1 GB of address space through malloc, advise it and free it at once:
  // the allocator hands the same range out again for the tensors. Nothing is touched, so nothing
  // is resident until used. This relies on tcmalloc keeping the freed range (glibc's malloc
  // unmaps a block this large on free, and the advice goes with it: harmless, no effect).
  // Its effect on the training step and on generation: bench/README.md.
  constexpr std::size_t kReserve = std::size_t(1) << 30, kHugePage = std::size_t(2) << 20;
  if (void* block = std::malloc(kReserve)) {
    const auto begin = (reinterpret_cast<std::uintptr_t>(block) + kHugePage - 1) & ~(kHugePage - 1);
    const auto end = (reinterpret_cast<std::uintptr_t>(block) + kReserve) & ~(kHugePage - 1);
    if (end > begin)
      madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);  // best effort
    std::free(block);
  }
}

}  // namespace glass
