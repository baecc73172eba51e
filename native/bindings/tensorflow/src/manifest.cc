// The build manifest of this library, in its own translation unit: it is the only source that differs
// between releases and TensorFlow builds, so the compiler cache reuses every other object.
#include "engine_bridge.h"
#include "perseus_tensorflow_manifest.h"

extern "C" const char* perseus_tf_build_manifest(void) { return kPerseusBuildManifest; }
