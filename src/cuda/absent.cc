// runtime.h in a build without the CUDA toolkit: no devices. device_count() answers 0; everything
// that needs a device refuses, saying how to get a build with CUDA.
#include <dew/error.h>

#include "cuda/runtime.h"

namespace dew::cuda {
namespace {

[[noreturn]] void refuse(int device) {
  fail(
      "[cuda] device cuda:{} is not available: this build of Dew has no CUDA backend (configure with the "
      "CUDA "
      "toolkit installed and DEW_CUDA=AUTO or ON)",
      device);
}

}  // namespace

int device_count() {
  return 0;
}
const DeviceProperties& properties(int device) {
  refuse(device);
}
void* allocate(int device, size_t, size_t*) {
  refuse(device);
}
void deallocate(int device, void*, size_t) {
  refuse(device);
}
AllocatorStats allocator_stats(int device) {
  refuse(device);
}
void reset_peak(int device) {
  refuse(device);
}
void release_cached(int device) {
  refuse(device);
}
void* stream(int device) {
  refuse(device);
}
void synchronize(int device) {
  refuse(device);
}
void copy_bytes(void*, int dst_device, const void*, int src_device, size_t) {
  refuse(dst_device >= 0 ? dst_device : src_device);
}
void fill(int device, void*, const void*, size_t, int64_t) {
  refuse(device);
}
void copy_strided(int device, const void*, const int64_t*, void*, const int64_t*, const int64_t*, int,
                  size_t) {
  refuse(device);
}
Timer::Timer(int device) : device_(device) {
  refuse(device);
}
Timer::~Timer() = default;
void Timer::start() {
  refuse(device_);
}
double Timer::stop_ms() {
  refuse(device_);
}

}  // namespace dew::cuda
