// Tensor: a typed, strided view of reference-counted storage on one device. Views share storage;
// nothing moves between devices implicitly. Not an operation library: arithmetic lives in ops.h.
// Contract: strides are in elements; storage is 64-byte aligned and counted by its allocator.
#pragma once

#include <dew/dims.h>
#include <dew/dtype.h>
#include <dew/error.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace dew {

namespace detail {
struct AutogradMeta;
struct TensorAutograd;
}  // namespace detail

using Shape = Dims;
using Strides = Dims;

int64_t numel_of(const Shape& shape);
Strides contiguous_strides(const Shape& shape);
std::string shape_str(const Shape& shape);

struct Device {
  enum class Kind : uint8_t { cpu, cuda };
  Kind kind = Kind::cpu;
  int index = 0;
  static Device cpu() { return {}; }
  static Device cuda(int i) { return {Kind::cuda, i}; }
  // "cpu" or "cuda:N"; throws naming the accepted spellings.
  static Device parse(const std::string& text);
  std::string str() const;
  bool operator==(const Device&) const = default;
};

// One allocation. Freed through the allocator that made it, which may cache it for reuse.
struct Storage {
  void* data = nullptr;
  size_t nbytes = 0;
  Device device;
  uint64_t version = 0;  // bumped by every write into existing data (saved tensors check it)
  // NOTE [released storage]: a parameter sharded over ranks (ZeRO-3, docs/parallel.md) gives its bytes
  // back between uses and takes them again, keeping its identity: the tape's saved references to it
  // read the refilled bytes. Reading it while released is refused.
  bool released = false;
  Storage(size_t nbytes, Device device);
  ~Storage();
  void release();  // the bytes freed
  void acquire();  // allocated again, contents undefined
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
};

class Tensor {
 public:
  Tensor() = default;
  // Uninitialized storage of numel_of(shape) elements.
  static Tensor empty(const Shape& shape, DType dtype, Device device = Device::cpu());
  static Tensor full(const Shape& shape, double value, DType dtype, Device device = Device::cpu());
  static Tensor zeros(const Shape& shape, DType dtype, Device device = Device::cpu()) {
    return full(shape, 0.0, dtype, device);
  }
  // Values rounded to dtype by the rules of dtype.h.
  static Tensor from_values(const std::vector<double>& values, const Shape& shape, DType dtype);

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  const Strides& strides() const { return strides_; }
  int64_t dim() const { return int64_t(shape_.size()); }
  int64_t size(int64_t d) const;  // negative d counts from the end
  int64_t numel() const { return numel_of(shape_); }
  DType dtype() const { return dtype_; }
  Device device() const { return storage_ ? storage_->device : Device{}; }
  int64_t offset() const { return offset_; }
  bool is_contiguous() const;
  bool shares_storage_with(const Tensor& other) const { return storage_ == other.storage_; }
  // NOTE [released storage]: the whole storage's bytes freed (and later allocated again, undefined), for
  // every tensor that shares it; a contiguous tensor at its storage's start may. Both are idempotent.
  void release_storage() const;
  void acquire_storage() const;
  bool storage_released() const { return storage_ && storage_->released; }
  std::string describe() const;  // "f32[4,8] (cpu)"

  void* raw_data() const;
  template <class T>
  T* data() const {
    DEW_REQUIRE(Scalar<T>::dtype == dtype_, "[tensor] data<{}>() on a {} tensor",
                dtype_name(Scalar<T>::dtype), dtype_name(dtype_));
    return static_cast<T*>(raw_data());
  }

  // Sets every element to value, rounded to the dtype; the tensor must be contiguous.
  void fill(double value);
  // Copies src's elements into this tensor in place (a view writes through to its storage): the same
  // shape and dtype, any strides on either side; src on another device is brought over first. Not
  // recorded for differentiation (as fill): for weights, optimizer state and caches.
  void copy_from(const Tensor& src);

  // Views: share storage, never copy.
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1) const;
  Tensor select(int64_t dim, int64_t index) const;  // drops dim
  Tensor permute(const std::vector<int64_t>& order) const;
  Tensor transpose(int64_t d0, int64_t d1) const;
  Tensor reshape(const Shape& shape) const;  // a view where strides can express it (torch's view); one -1
  Tensor expand(const Shape& shape) const;   // broadcast: size-1 dims get stride 0
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;
  // `parts` (N_i, ...) of one dtype and trailing shape as one (Σ N_i, ...) view, when each is contiguous
  // and begins in one storage where the part before it ends (rows packed one after another); undefined
  // when they do not, or when one requires a gradient (the view is not recorded for differentiation).
  static Tensor joined_view(const std::vector<Tensor>& parts);

  // A contiguous copy when not contiguous, else this tensor.
  Tensor contiguous() const;
  Tensor clone() const;  // always a fresh contiguous copy
  // A contiguous copy on `device` (this tensor when already there); differentiable: the gradient
  // goes back to this tensor's device. The only way data moves between devices.
  Tensor to(Device device) const;
  // Reads every element as double (tests, printing); exact for every dtype but i64 beyond 2^53.
  std::vector<double> to_f64_vector() const;

  // Differentiation (autodiff.h). A copy of a tensor is the same tensor; a view is a new one, recorded.
  Tensor& requires_grad_(bool on = true);  // leaves only
  bool requires_grad() const;  // a leaf that requires a gradient, or computed from one while recording
  Tensor grad() const;         // the gradient accumulated by backward; undefined before
  void zero_grad();
  Tensor detach() const;     // the same data as a new leaf outside every graph (stop_gradient)
  uint64_t version() const;  // the storage's write count
  void bump_version();       // after writing into the data in place

 private:
  friend struct detail::TensorAutograd;
  std::shared_ptr<detail::AutogradMeta> autograd_;
  std::shared_ptr<Storage> storage_;
  int64_t offset_ = 0;
  Shape shape_;
  Strides strides_;
  DType dtype_ = DType::f32;
  Tensor with_geometry(Shape shape, Strides strides, int64_t offset) const;
};

// Broadcast result of two shapes (numpy rules); throws naming `what` and both shapes.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* what);
// Normalizes a possibly negative axis; throws naming `what` and the valid range.
int64_t normalize_axis(int64_t axis, int64_t rank, const char* what);

}  // namespace dew
