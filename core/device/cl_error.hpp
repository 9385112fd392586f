// Checked OpenCL calls: every cl* call goes through RTF_CL_CHECK, which throws ClError carrying
// the call text, the error's name, the file and the line.
#pragma once

#include <CL/cl.h>

#include <stdexcept>
#include <string>

namespace rtf {

// Name of an OpenCL error code, e.g. "CL_OUT_OF_RESOURCES" (or "CL_ERROR(-9999)" if unknown).
const char* cl_error_name(cl_int code);

class ClError : public std::runtime_error {
 public:
  ClError(cl_int code, const std::string& call, const char* file, int line);
  cl_int code() const { return code_; }

 private:
  cl_int code_;
};

// Raised when a program fails to compile; what() includes the full build log.
class ClBuildError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {
[[noreturn]] void throw_cl_error(cl_int code, const char* call, const char* file, int line);
}  // namespace detail

}  // namespace rtf

#define RTF_CL_CHECK(call)                                                      \
  do {                                                                          \
    const cl_int rtf_cl_status_ = (call);                                       \
    if (rtf_cl_status_ != CL_SUCCESS) {                                         \
      ::rtf::detail::throw_cl_error(rtf_cl_status_, #call, __FILE__, __LINE__); \
    }                                                                           \
  } while (0)

// For cl* functions that return an object and report through an out-parameter:
//   cl_mem m = RTF_CL_CREATE(clCreateBuffer(ctx, flags, bytes, nullptr, &rtf_cl_err));
#define RTF_CL_CREATE(call)                                                                             \
  [&]() {                                                                                               \
    cl_int rtf_cl_err = CL_SUCCESS;                                                                     \
    auto rtf_cl_obj_ = (call);                                                                          \
    if (rtf_cl_err != CL_SUCCESS) ::rtf::detail::throw_cl_error(rtf_cl_err, #call, __FILE__, __LINE__); \
    return rtf_cl_obj_;                                                                                 \
  }()
