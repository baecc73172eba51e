// What the core ops' host and device kernels share: the half type of a TensorFlow dtype, the core's status as a
// TensorFlow status.
#pragma once

#include <string>

#include "perseus/core.h"
#include "tensorflow/core/framework/types.h"
#include "tensorflow/core/lib/core/errors.h"
#include "tf_compat.h"

namespace perseus_tf {

inline perseus_half_dtype half_of(::tensorflow::DataType type) {
  return type == ::tensorflow::DT_BFLOAT16 ? PERSEUS_BFLOAT16 : PERSEUS_FLOAT16;
}

inline ::tensorflow::Status core_status(perseus_status status, const char* op) {
  if (status == PERSEUS_OK) return ok_status();
  const std::string message = std::string("perseus.") + op + ": " + perseus_last_error();
  if (status == PERSEUS_ERR_INVALID_ARGUMENT) return ::tensorflow::errors::InvalidArgument(message);
  if (status == PERSEUS_ERR_UNSUPPORTED) return ::tensorflow::errors::Unimplemented(message);
  return ::tensorflow::errors::Internal(message);
}

}  // namespace perseus_tf
