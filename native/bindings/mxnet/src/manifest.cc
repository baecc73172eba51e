// The build manifest, in its own translation unit: the only source that differs between builds.
#include "binding.h"
#include "perseus_mxnet_manifest.h"

extern "C" const char* perseus_mxnet_build_manifest(void) { return kPerseusBuildManifest; }
