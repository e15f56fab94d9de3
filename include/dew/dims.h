// Dims: a tensor's sizes or strides. The part of std::vector<int64_t>'s interface Dew uses, with the first
// kInline values held in the object itself and the heap used only past them, so that making a tensor or
// a view allocates nothing for its geometry: a decode step makes thousands of them, and two heap vectors
// each were most of its allocations (docs/architecture.md, "What a tensor costs").
#pragma once

#include <algorithm>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <vector>

namespace dew {

class Dims {
 public:
  static constexpr size_t kInline = 6;  // ranks up to 6 (B,T,H,D and a few more) never touch the heap
  using value_type = int64_t;
  using size_type = size_t;
  using difference_type = std::ptrdiff_t;
  using reference = int64_t&;
  using const_reference = const int64_t&;
  using pointer = int64_t*;
  using const_pointer = const int64_t*;
  using iterator = int64_t*;
  using const_iterator = const int64_t*;
  using reverse_iterator = std::reverse_iterator<iterator>;
  using const_reverse_iterator = std::reverse_iterator<const_iterator>;

  Dims() noexcept {}  // user-provided: a const Dims (and a const Tensor) may be default-made
  Dims(std::initializer_list<int64_t> values) { assign(values.begin(), values.end()); }
  explicit Dims(size_t n, int64_t value = 0) { resize(n, value); }
  template <std::input_iterator It>
  Dims(It first, It last) {
    assign(first, last);
  }
  Dims(const std::vector<int64_t>& values) { assign(values.begin(), values.end()); }  // NOLINT: implicit
  Dims(const Dims& other) { assign(other.begin(), other.end()); }
  Dims(Dims&& other) noexcept { take(other); }
  Dims& operator=(const Dims& other) {
    if (this != &other) assign(other.begin(), other.end());
    return *this;
  }
  Dims& operator=(Dims&& other) noexcept {
    if (this != &other) {
      release();
      take(other);
    }
    return *this;
  }
  Dims& operator=(std::initializer_list<int64_t> values) {
    assign(values.begin(), values.end());
    return *this;
  }
  ~Dims() { release(); }

  // Where an interface takes a std::vector<int64_t> (a permutation, a JSON array).
  operator std::vector<int64_t>() const { return {begin(), end()}; }  // NOLINT: implicit

  template <class It>
  void assign(It first, It last) {
    clear();
    for (; first != last; ++first) push_back(int64_t(*first));
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t capacity() const { return capacity_; }
  int64_t* data() { return data_; }
  const int64_t* data() const { return data_; }
  iterator begin() { return data_; }
  iterator end() { return data_ + size_; }
  const_iterator begin() const { return data_; }
  const_iterator end() const { return data_ + size_; }
  const_iterator cbegin() const { return begin(); }
  const_iterator cend() const { return end(); }
  reverse_iterator rbegin() { return reverse_iterator(end()); }
  reverse_iterator rend() { return reverse_iterator(begin()); }
  const_reverse_iterator rbegin() const { return const_reverse_iterator(end()); }
  const_reverse_iterator rend() const { return const_reverse_iterator(begin()); }
  int64_t& operator[](size_t i) { return data_[i]; }
  const int64_t& operator[](size_t i) const { return data_[i]; }
  int64_t& front() { return data_[0]; }
  const int64_t& front() const { return data_[0]; }
  int64_t& back() { return data_[size_ - 1]; }
  const int64_t& back() const { return data_[size_ - 1]; }

  void reserve(size_t n) {
    if (n <= capacity_) return;
    int64_t* grown = new int64_t[n];
    std::copy(begin(), end(), grown);
    release();
    data_ = grown;
    capacity_ = n;
  }
  void push_back(int64_t value) {
    if (size_ == capacity_) reserve(capacity_ * 2);
    data_[size_++] = value;
  }
  void pop_back() { --size_; }
  void clear() { size_ = 0; }
  void resize(size_t n, int64_t value = 0) {
    reserve(n);
    for (size_t i = size_; i < n; ++i) data_[i] = value;
    size_ = n;
  }
  iterator insert(const_iterator pos, int64_t value) { return insert(pos, &value, &value + 1); }
  template <std::input_iterator It>
  iterator insert(const_iterator pos, It first, It last) {  // the range may be this one's own values
    const size_t at = size_t(pos - begin());
    Dims out(begin(), begin() + at);
    for (; first != last; ++first) out.push_back(int64_t(*first));
    out.insert_tail(begin() + at, end());
    *this = std::move(out);
    return begin() + at;
  }
  iterator insert(const_iterator pos, std::initializer_list<int64_t> values) {
    return insert(pos, values.begin(), values.end());
  }
  iterator erase(const_iterator pos) { return erase(pos, pos + 1); }
  iterator erase(const_iterator first, const_iterator last) {
    const size_t at = size_t(first - begin()), gone = size_t(last - first);
    std::copy(begin() + at + gone, end(), begin() + at);
    size_ -= gone;
    return begin() + at;
  }

  friend bool operator==(const Dims& a, const Dims& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }
  friend std::strong_ordering operator<=>(const Dims& a, const Dims& b) {
    return std::lexicographical_compare_three_way(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  bool on_heap() const { return data_ != inline_; }
  void insert_tail(const_iterator first, const_iterator last) {
    for (; first != last; ++first) push_back(*first);
  }
  void release() {
    if (on_heap()) delete[] data_;
    data_ = inline_;
    capacity_ = kInline;
  }
  // Moves other's values here (this holds nothing); other is left empty.
  void take(Dims& other) {
    size_ = other.size_;
    if (other.on_heap()) {
      data_ = other.data_;
      capacity_ = other.capacity_;
      other.data_ = other.inline_;
      other.capacity_ = kInline;
    } else {
      std::copy(other.begin(), other.end(), inline_);
    }
    other.size_ = 0;
  }

  int64_t* data_ = inline_;
  size_t size_ = 0;
  size_t capacity_ = kInline;
  int64_t inline_[kInline];
};

}  // namespace dew
