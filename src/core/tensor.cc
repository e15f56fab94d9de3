// Tensor geometry: construction, views that share storage, and the strided copy behind contiguous().
#include <dew/tensor.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <optional>

#include "core/allocator.h"
#include "core/autograd.h"
#include "core/strided.h"
#include "cuda/runtime.h"

namespace dew {

int64_t numel_of(const Shape& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

Strides contiguous_strides(const Shape& shape) {
  Strides s(shape.size());
  int64_t step = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    s[i] = step;
    step *= shape[i];
  }
  return s;
}

std::string shape_str(const Shape& shape) {
  return fmt::format("[{}]", fmt::join(shape, ","));
}

Device Device::parse(const std::string& text) {
  if (text == "cpu") return cpu();
  if (text.rfind("cuda", 0) == 0) {
    if (text == "cuda") return cuda(0);
    if (text.size() > 5 && text[4] == ':' && text.find_first_not_of("0123456789", 5) == std::string::npos)
      return cuda(std::stoi(text.substr(5)));
  }
  fail("device '{}' is not known; expected 'cpu', 'cuda' or 'cuda:N'", text);
}

std::string Device::str() const {
  return kind == Kind::cpu ? "cpu" : fmt::format("cuda:{}", index);
}

Storage::Storage(size_t bytes, Device dev) : device(dev) {
  if (dev.kind == Device::Kind::cuda)
    data = cuda::allocate(dev.index, bytes, &nbytes);
  else
    data = detail::cpu_allocate(bytes, &nbytes);
}

Storage::~Storage() {
  release();
}

void Storage::release() {
  if (released) return;
  if (device.kind == Device::Kind::cuda)
    cuda::deallocate(device.index, data, nbytes);
  else
    detail::cpu_free(data, nbytes);
  data = nullptr;
  released = true;
}

void Storage::acquire() {
  if (!released) return;
  size_t got = 0;
  data = device.kind == Device::Kind::cuda ? cuda::allocate(device.index, nbytes, &got)
                                           : detail::cpu_allocate(nbytes, &got);
  released = false;
}

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  for (int64_t s : shape)
    DEW_REQUIRE(s >= 0, "[tensor] shape {} has a negative size; expected sizes >= 0", shape_str(shape));
  Tensor t;
  t.storage_ = std::make_shared<Storage>(size_t(numel_of(shape)) * dtype_size(dtype), device);
  t.shape_ = shape;
  t.strides_ = contiguous_strides(shape);
  t.dtype_ = dtype;
  return t;
}

Tensor Tensor::full(const Shape& shape, double value, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  t.fill(value);
  return t;
}

void Tensor::fill(double value) {
  DEW_REQUIRE(is_contiguous(), "[tensor] fill of {} needs a contiguous tensor", describe());
  visit_dtype(dtype_, [&](auto zero) {
    using T = decltype(zero);
    const T v = Scalar<T>::from_f64(value);
    T* p = static_cast<T*>(raw_data());
    if (device().kind == Device::Kind::cuda)
      cuda::fill(device().index, p, &v, sizeof(T), numel());
    else
      for (int64_t i = 0, n = numel(); i < n; ++i) p[i] = v;
  });
  bump_version();
}

void Tensor::copy_from(const Tensor& src) {
  DEW_REQUIRE(src.shape() == shape() && src.dtype() == dtype_,
              "[tensor] copy_from {} into {}: expected the same shape and dtype", src.describe(), describe());
  detail::copy_strided(src.device() == device() ? src : src.to(device()), *this);
  bump_version();
}

Tensor Tensor::from_values(const std::vector<double>& values, const Shape& shape, DType dtype) {
  DEW_REQUIRE(int64_t(values.size()) == numel_of(shape),
              "[tensor] from_values: {} values for shape {}; expected {}", values.size(), shape_str(shape),
              numel_of(shape));
  Tensor t = empty(shape, dtype);
  visit_dtype(dtype, [&](auto zero) {
    using T = decltype(zero);
    T* p = static_cast<T*>(t.raw_data());
    for (size_t i = 0; i < values.size(); ++i) p[i] = Scalar<T>::from_f64(values[i]);
  });
  return t;
}

int64_t Tensor::size(int64_t d) const {
  return shape_[size_t(normalize_axis(d, dim(), "tensor.size"))];
}

bool Tensor::is_contiguous() const {
  int64_t step = 1;
  for (size_t i = shape_.size(); i-- > 0;) {
    if (shape_[i] != 1 && strides_[i] != step) return false;
    step *= shape_[i];
  }
  return true;
}

std::string Tensor::describe() const {
  return fmt::format("{}{} ({})", dtype_name(dtype_), shape_str(shape_), device().str());
}

void* Tensor::raw_data() const {
  DEW_REQUIRE(storage_,
              "[tensor] the tensor is undefined; expected a tensor made by empty(), full() or an op");
  DEW_REQUIRE(!storage_->released,
              "[tensor] {} is a parameter sharded over ranks whose bytes are released (shard = \"full\"); "
              "it is read only between its gather and its release (NOTE [released storage])",
              describe());
  return static_cast<char*>(storage_->data) + offset_ * int64_t(dtype_size(dtype_));
}

void Tensor::release_storage() const {
  DEW_REQUIRE(storage_ && offset_ == 0 && is_contiguous(),
              "[tensor] release_storage() on {}; expected a contiguous tensor at its storage's start",
              describe());
  storage_->release();
}

void Tensor::acquire_storage() const {
  DEW_REQUIRE(storage_, "[tensor] acquire_storage() on an undefined tensor");
  storage_->acquire();
}

Tensor Tensor::with_geometry(Shape shape, Strides strides, int64_t offset) const {
  Tensor t = *this;
  t.autograd_.reset();  // a view is a new tensor; record_view gives it a graph identity when needed
  t.shape_ = std::move(shape);
  t.strides_ = std::move(strides);
  t.offset_ = offset;
  return t;
}

Tensor Tensor::slice(int64_t d, int64_t start, int64_t end, int64_t step) const {
  d = normalize_axis(d, dim(), "slice");
  int64_t n = shape_[size_t(d)];
  DEW_REQUIRE(step > 0, "[slice] step {} on dim {}; expected a step >= 1", step, d);
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  Shape shape = shape_;
  Strides strides = strides_;
  shape[size_t(d)] = (end - start + step - 1) / step;
  strides[size_t(d)] *= step;
  Tensor v = with_geometry(shape, strides, offset_ + start * strides_[size_t(d)]);
  if (autograd_)
    detail::record_view(*this, v, {detail::ViewSpec::Kind::slice, shape_, {d, start, end, step}},
                        [=](const Tensor& t) { return t.slice(d, start, end, step); });
  return v;
}

Tensor Tensor::joined_view(const std::vector<Tensor>& parts) {
  if (parts.empty()) return {};
  const Tensor& first = parts.front();
  Shape shape = first.shape_;
  if (shape.empty()) return {};
  int64_t next = first.offset_;
  for (const Tensor& p : parts) {
    const bool fits = p.defined() && p.storage_ == first.storage_ && p.dtype_ == first.dtype_ &&
                      p.dim() == first.dim() &&
                      std::equal(p.shape_.begin() + 1, p.shape_.end(), shape.begin() + 1) &&
                      p.is_contiguous() && p.offset_ == next && !p.requires_grad();
    if (!fits) return {};
    next += p.numel();
  }
  shape[0] = 0;
  for (const Tensor& p : parts) shape[0] += p.shape_[0];
  return first.with_geometry(shape, contiguous_strides(shape), first.offset_);
}

Tensor Tensor::select(int64_t d, int64_t index) const {
  d = normalize_axis(d, dim(), "select");
  int64_t n = shape_[size_t(d)];
  DEW_REQUIRE(index >= -n && index < n, "[select] index {} on dim {} of size {}; expected -{} <= index < {}",
              index, d, n, n, n);
  if (index < 0) index += n;
  Shape shape = shape_;
  Strides strides = strides_;
  shape.erase(shape.begin() + d);
  strides.erase(strides.begin() + d);
  Tensor v = with_geometry(shape, strides, offset_ + index * strides_[size_t(d)]);
  if (autograd_)
    detail::record_view(*this, v, {detail::ViewSpec::Kind::select, shape_, {d, index}},
                        [=](const Tensor& t) { return t.select(d, index); });
  return v;
}

Tensor Tensor::permute(const std::vector<int64_t>& order) const {
  DEW_REQUIRE(int64_t(order.size()) == dim(), "[permute] order has {} axes for a tensor of rank {}",
              order.size(), dim());
  std::vector<bool> seen(order.size(), false);
  Shape shape(order.size());
  Strides strides(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    int64_t a = normalize_axis(order[i], dim(), "permute");
    DEW_REQUIRE(!seen[size_t(a)], "[permute] axis {} appears twice in order [{}]; expected a permutation", a,
                fmt::join(order, ","));
    seen[size_t(a)] = true;
    shape[i] = shape_[size_t(a)];
    strides[i] = strides_[size_t(a)];
  }
  Tensor v = with_geometry(shape, strides, offset_);
  if (autograd_)
    detail::record_view(*this, v, {detail::ViewSpec::Kind::permute, shape_, order},
                        [&](const Tensor& t) { return t.permute(order); });
  return v;
}

Tensor Tensor::transpose(int64_t d0, int64_t d1) const {
  std::vector<int64_t> order(static_cast<size_t>(dim()));
  std::iota(order.begin(), order.end(), 0);
  std::swap(order[size_t(normalize_axis(d0, dim(), "transpose"))],
            order[size_t(normalize_axis(d1, dim(), "transpose"))]);
  return permute(order);
}

namespace {

// The strides that view (shape, strides) as `wanted` without moving an element, as torch's view finds
// them: each run of axes that lie one inside the next is split or merged into wanted's axes of the same
// element count; none when an axis of `wanted` would span two runs.
std::optional<Strides> view_strides(const Shape& shape, const Strides& strides, const Shape& wanted) {
  Strides out(wanted.size());
  int64_t w = int64_t(wanted.size()) - 1, base = strides.empty() ? 1 : strides.back(), run = 1, viewed = 1;
  for (int64_t d = int64_t(shape.size()) - 1; d >= 0; --d) {
    run *= shape[size_t(d)];
    const bool run_ends = d == 0 || (shape[size_t(d - 1)] != 1 && strides[size_t(d - 1)] != run * base);
    if (!run_ends) continue;
    while (w >= 0 && (viewed < run || wanted[size_t(w)] == 1)) {
      out[size_t(w)] = viewed * base;
      viewed *= wanted[size_t(w)];
      --w;
    }
    if (viewed != run) return std::nullopt;
    if (d > 0) base = strides[size_t(d - 1)], run = 1, viewed = 1;
  }
  if (w != -1) return std::nullopt;
  return out;
}

}  // namespace

Tensor Tensor::reshape(const Shape& requested) const {
  Shape shape = requested;
  int64_t known = 1, infer_at = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      DEW_REQUIRE(infer_at < 0, "[reshape] shape {} has two -1 sizes; expected at most one",
                  shape_str(requested));
      infer_at = int64_t(i);
    } else {
      DEW_REQUIRE(shape[i] >= 0, "[reshape] shape {} has a negative size", shape_str(requested));
      known *= shape[i];
    }
  }
  if (infer_at >= 0) {
    DEW_REQUIRE(known > 0 && numel() % known == 0, "[reshape] cannot infer -1 in {} for {} elements",
                shape_str(requested), numel());
    shape[size_t(infer_at)] = numel() / known;
  }
  DEW_REQUIRE(numel_of(shape) == numel(),
              "[reshape] {} has {} elements; expected a shape of {} elements, got {}", describe(), numel(),
              numel(), shape_str(requested));
  std::optional<Strides> strides =
      is_contiguous() ? contiguous_strides(shape) : view_strides(shape_, strides_, shape);
  DEW_REQUIRE(
      strides.has_value(),
      "[reshape] {} (strides {}) is not contiguous and cannot be viewed as {}; call contiguous() first",
      describe(), shape_str(strides_), shape_str(shape));
  Tensor v = with_geometry(shape, *strides, offset_);
  if (autograd_)
    detail::record_view(*this, v, {detail::ViewSpec::Kind::reshape, shape_, {}},
                        [&](const Tensor& t) { return t.contiguous().reshape(shape); });
  return v;
}

Tensor Tensor::expand(const Shape& shape) const {
  DEW_REQUIRE(shape.size() >= shape_.size(), "[expand] cannot expand {} to fewer dims {}", describe(),
              shape_str(shape));
  size_t lead = shape.size() - shape_.size();
  Strides strides(shape.size(), 0);
  for (size_t i = 0; i < shape_.size(); ++i) {
    int64_t have = shape_[i], want = shape[lead + i];
    DEW_REQUIRE(have == want || have == 1,
                "[expand] {} cannot broadcast to {}: dim {} is {}, expected 1 or {}", describe(),
                shape_str(shape), i, have, want);
    strides[lead + i] = have == want ? strides_[i] : 0;
  }
  Tensor v = with_geometry(shape, strides, offset_);
  if (autograd_)
    detail::record_view(*this, v, {detail::ViewSpec::Kind::expand, shape_, {}},
                        [&](const Tensor& t) { return t.expand(shape); });
  return v;
}

Tensor Tensor::squeeze(int64_t d) const {
  d = normalize_axis(d, dim(), "squeeze");
  DEW_REQUIRE(shape_[size_t(d)] == 1, "[squeeze] dim {} of {} has size {}; expected 1", d, describe(),
              shape_[size_t(d)]);
  return select(d, 0);
}

Tensor Tensor::unsqueeze(int64_t d) const {
  d = normalize_axis(d, dim() + 1, "unsqueeze");
  Shape shape = shape_;
  Strides strides = strides_;
  int64_t stride = d < dim() ? strides_[size_t(d)] * shape_[size_t(d)] : 1;
  shape.insert(shape.begin() + d, 1);
  strides.insert(strides.begin() + d, stride);
  Tensor v = with_geometry(shape, strides, offset_);
  if (autograd_)
    detail::record_view(*this, v, {detail::ViewSpec::Kind::unsqueeze, shape_, {d}},
                        [=](const Tensor& t) { return t.unsqueeze(d); });
  return v;
}

Tensor Tensor::contiguous() const {
  return is_contiguous() ? *this : clone();
}

Tensor Tensor::clone() const {
  Tensor out = empty(shape_, dtype_, device());
  detail::copy_strided(*this, out);
  if (autograd_)
    detail::record_view(*this, out, {detail::ViewSpec::Kind::copy, shape_, {}},
                        [](const Tensor& t) { return t.clone(); });
  return out;
}

Tensor Tensor::to(Device target) const {
  if (target == device()) return *this;
  const Tensor src = contiguous();
  Tensor out = empty(shape_, dtype_, target);
  auto side = [](Device d) { return d.kind == Device::Kind::cuda ? d.index : -1; };
  cuda::copy_bytes(out.raw_data(), side(target), src.raw_data(), side(src.device()),
                   size_t(numel()) * dtype_size(dtype_));
  if (autograd_) {
    const Device from = device();
    detail::record_view(
        *this, out, {detail::ViewSpec::Kind::to_device, shape_, {int64_t(from.kind), int64_t(from.index)}},
        [target](const Tensor& t) { return t.to(target); });
  }
  return out;
}

std::vector<double> Tensor::to_f64_vector() const {
  if (device().kind != Device::Kind::cpu) return to(Device::cpu()).to_f64_vector();
  std::vector<double> values(static_cast<size_t>(numel()));
  visit_dtype(dtype_, [&](auto zero) {
    using T = decltype(zero);
    size_t i = 0;
    detail::for_each_offset(shape_, strides_, [&](int64_t off) {
      values[i++] = Scalar<T>::to_f64(static_cast<const T*>(raw_data())[off]);
    });
  });
  return values;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* what) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    DEW_REQUIRE(x == y || x == 1 || y == 1, "[{}] shapes {} and {} do not broadcast: {} vs {} at dim {}",
                what, shape_str(a), shape_str(b), x, y, i);
    out[i] = x == 1 ? y : x;
  }
  return out;
}

int64_t normalize_axis(int64_t axis, int64_t rank, const char* what) {
  DEW_REQUIRE(axis >= -rank && axis < rank,
              "[{}] axis {} is out of range for rank {}; expected {} <= axis < {}", what, axis, rank, -rank,
              rank);
  return axis < 0 ? axis + rank : axis;
}

}  // namespace dew
