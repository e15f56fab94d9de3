// The CUDA runtime glue that core and the ops call: devices, the caching allocator, the compute
// stream, copies between host and device, fills and strided copies. Plain C++ (no CUDA headers), so
// any file can include it; a build without the toolkit links absent.cc: no devices, and every use
// that needs one says so. Kernels include launch.h instead.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace dew::cuda {

// Usable devices: 0 without a driver or a device. Never throws.
int device_count();

struct DeviceProperties {
  std::string name;
  int sm = 0;  // compute capability as major*10 + minor (90 on an H100/H200)
  int multiprocessors = 0;
  int64_t memory_bytes = 0;
  int64_t l2_bytes = 0;
  int64_t shared_per_block_optin = 0;  // the most dynamic shared memory a kernel may ask for
};
// Throws naming the device when it does not exist.
const DeviceProperties& properties(int device);

// The caching allocator over cudaMalloc: blocks are kept by size class for reuse on the device's one
// compute stream (every kernel and copy of a device runs on it, so reuse is ordered after earlier
// work). An allocation the device refuses releases the cache and retries before OutOfMemory.
struct AllocatorStats {
  int64_t bytes_in_use = 0;
  int64_t peak_bytes = 0;
  int64_t bytes_cached = 0;
};
void* allocate(int device, size_t nbytes, size_t* actual);
void deallocate(int device, void* p, size_t actual);
AllocatorStats allocator_stats(int device);
void reset_peak(int device);
void release_cached(int device);  // waits for the device, then frees every cached block

// Scratch memory for a launcher: n elements of A from the caching allocator, returned when it goes out
// of scope. Work queued on the device's stream before then still reads it safely: the block is reused
// only by work queued after, on the same stream.
template <class A>
class DeviceBuffer {
 public:
  DeviceBuffer(int device, int64_t n)
      : device_(device),
        data_(static_cast<A*>(allocate(device, size_t(n > 0 ? n : 1) * sizeof(A), &bytes_))) {}
  ~DeviceBuffer() { deallocate(device_, data_, bytes_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  A* data() const { return data_; }

 private:
  int device_;
  size_t bytes_ = 0;
  A* data_;
};

// The compute stream of a device (a cudaStream_t), created on first use.
void* stream(int device);
void synchronize(int device);

// Copies nbytes between any two places; a side is the host when its device is -1. Transfers with
// the host go through pinned staging buffers and are complete when the call returns.
void copy_bytes(void* dst, int dst_device, const void* src, int src_device, size_t nbytes);

// dst[i] = pattern for n elements of element_size bytes (1, 2, 4 or 8), on the device's stream.
void fill(int device, void* dst, const void* pattern, size_t element_size, int64_t n);

// A strided copy on one device: every element of a view (shape, strides in elements) into another
// view of the same shape; rank up to kMaxRank.
inline constexpr int kMaxRank = 8;
void copy_strided(int device, const void* src, const int64_t* src_strides, void* dst,
                  const int64_t* dst_strides, const int64_t* shape, int rank, size_t element_size);

// Device time between two points on a device's stream, for benchmarks (CUDA events).
class Timer {
 public:
  explicit Timer(int device);
  ~Timer();
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;
  void start();
  double stop_ms();  // waits for the stream, returns milliseconds since start()

 private:
  int device_;
  void* start_ = nullptr;
  void* stop_ = nullptr;
};

}  // namespace dew::cuda
