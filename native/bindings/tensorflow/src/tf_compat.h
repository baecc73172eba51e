// What differs between the TensorFlow C++ APIs this binding compiles against (1.15 .. 2.21): the OK
// status, the string and int64 element types, access to a tensor's buffer.
#pragma once

#include "tensorflow/core/framework/tensor.h"
#include "tensorflow/core/framework/types.h"
#include "tensorflow/core/lib/core/status.h"

// PERSEUS_TF_MAJOR / PERSEUS_TF_MINOR: the version built against, defined by CMakeLists.txt
#if !defined(PERSEUS_TF_MAJOR) || !defined(PERSEUS_TF_MINOR)
#error "PERSEUS_TF_MAJOR and PERSEUS_TF_MINOR must name the TensorFlow version built against"
#endif

namespace perseus_tf {

// TensorFlow's own C++ type of DT_INT64 (`long long` up to 2.x's int64 = int64_t switch) and DT_STRING
// (std::string before tstring, 2.1), so Tensor::scalar<T>() and GetAttr() match their overloads exactly.
using TfInt64 = ::tensorflow::EnumToDataType<::tensorflow::DT_INT64>::Type;
using TfString = ::tensorflow::EnumToDataType<::tensorflow::DT_STRING>::Type;

// A tensor's buffer: Tensor::data() is private before TensorFlow 2; tensor_data() is public in every
// version (a read-only view, of the tensor's own writable buffer).
inline void* buffer_of(const ::tensorflow::Tensor& t) { return const_cast<char*>(t.tensor_data().data()); }

inline ::tensorflow::Status ok_status() {
#if PERSEUS_TF_MAJOR < 2 || (PERSEUS_TF_MAJOR == 2 && PERSEUS_TF_MINOR < 10)
  return ::tensorflow::Status::OK();  // OkStatus() arrived in 2.10; Status::OK() left in 2.13
#else
  return ::tensorflow::OkStatus();
#endif
}

}  // namespace perseus_tf
