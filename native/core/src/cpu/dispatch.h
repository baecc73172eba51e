// Runtime choice of the CPU kernel table: from cpuid once, or forced (env / API) for tests.
#pragma once

#include "perseus/core.h"
#include "kernels.h"

namespace perseus {
namespace cpu {

// The kernels in use. Fails (with perseus_last_error set) only when PERSEUS_CPU_DISPATCH names a
// path that is unknown or that this CPU cannot run.
perseus_status active_kernels(const Kernels** kernels);

}  // namespace cpu
}  // namespace perseus
