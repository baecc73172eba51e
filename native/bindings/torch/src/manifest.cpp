// The build manifest of this wheel, in its own translation unit: it is the only source that differs
// between releases and framework builds, so the compiler cache reuses every other object.
#include <string>

#include "common.h"
#include "perseus_torch_manifest.h"

namespace perseus_torch {

std::string build_manifest() { return kPerseusBuildManifest; }

}  // namespace perseus_torch
