// The selector's choices, refusals and overrides, observed through the route log and the errors.
#include <dew/ops.h>
#include <gtest/gtest.h>

#include "error_of.h"

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include "gate/catalog.h"
#include "ops/matmul/matmul.h"
#include "routes.h"

namespace dew {
namespace {

Tensor ones(const Shape& s, DType t) {
  return Tensor::full(s, 1.0, t);
}

using testing::error_of;

class Selector : public ::testing::Test {
 protected:
  void TearDown() override { set_impl_overrides(""); }
};

TEST_F(Selector, MatmulTakesBlasForF32AndBf16AndPortableForF64) {
  EXPECT_ROUTE("matmul", "cpu.onednn", matmul(ones({4, 8}, DType::f32), ones({8, 3}, DType::f32)));
  EXPECT_ROUTE("matmul", "cpu.onednn", matmul(ones({4, 8}, DType::bf16), ones({8, 3}, DType::bf16)));
  EXPECT_ROUTE("matmul", "portable", matmul(ones({4, 8}, DType::f64), ones({8, 3}, DType::f64)));
}

TEST_F(Selector, ExplainListsEveryImplementationWithItsVerdict) {
  ops::MatmulArgs args{ones({2, 2}, DType::f64), ones({2, 2}, DType::f64), {}};
  auto verdicts = ops::Matmul::registry().explain(args);
  std::vector<std::string> names;
  for (const auto& v : verdicts) names.push_back(v.implementation);
  EXPECT_EQ(names, ops::Matmul::registry().names());  // every one, in order of preference
  auto verdict_of = [&](const std::string& name) {
    for (const auto& v : verdicts)
      if (v.implementation == name) return v;
    ADD_FAILURE() << "no verdict for " << name;
    return select::Verdict{};
  };
  EXPECT_FALSE(verdict_of("cpu.avx512.gemv_dpbf16").eligible);
  const select::Verdict onednn = verdict_of("cpu.onednn");
  EXPECT_FALSE(onednn.eligible);
  EXPECT_EQ(onednn.requirement, "dtype in {f32, bf16, f16}");
  EXPECT_EQ(onednn.reason, "dtype is f64");
  EXPECT_TRUE(verdict_of("portable").eligible);
  EXPECT_EQ(names.back(), "portable");
  if (ops::Matmul::registry().find("cuda.cublaslt")) {  // a build with the CUDA backend: first, refused here
    EXPECT_EQ(names.front(), "cuda.cublaslt");
    const select::Verdict gpu = verdict_of("cuda.cublaslt");
    EXPECT_FALSE(gpu.eligible);
    EXPECT_EQ(gpu.requirement, "device(cuda, sm >= 80)");
    EXPECT_EQ(gpu.reason, "device is cpu");
  }
}

// One row: the GEMV (weights (N,K)) or the column GEMV (weights (K,N)); a few rows: the tiles (NOTE [few
// rows]), or in f32 on AVX-512 from 9 rows against 256 weight rows or more the rows in lanes (NOTE [rows
// in lanes]); more: the library.
TEST_F(Selector, OneRowAgainstTransposedWeightsTakesTheGemv) {
  MatmulOptions linear;
  linear.transpose_b = true;
  const std::string gemv = select::cpu_supports(select::Isa::avx512) ? "cpu.avx512.gemv"
                           : select::cpu_supports(select::Isa::avx2) ? "cpu.avx2.gemv"
                                                                     : "cpu.onednn";
  EXPECT_ROUTE("matmul", gemv, matmul(ones({1, 1, 8}, DType::f32), ones({3, 8}, DType::f32), linear));
  const std::string bf16_gemv = select::cpu_supports(select::Isa::avx512) && cpu_features().avx512bf16
                                    ? "cpu.avx512.gemv_dpbf16"
                                    : gemv;
  EXPECT_ROUTE("matmul", bf16_gemv, matmul(ones({1, 8}, DType::bf16), ones({3, 8}, DType::bf16), linear));
  const std::string tiles = select::cpu_supports(select::Isa::avx512) ? "cpu.avx512.dot_tiles_few_rows"
                            : select::cpu_supports(select::Isa::avx2) ? "cpu.avx2.dot_tiles_few_rows"
                                                                      : "cpu.onednn";
  EXPECT_ROUTE("matmul", tiles, matmul(ones({2, 8}, DType::f32), ones({3, 8}, DType::f32), linear));
  if (select::cpu_supports(select::Isa::avx512)) {  // AVX-512 takes f32 products of more rows
    EXPECT_ROUTE("matmul", "cpu.avx512.rows_in_lanes",
                 matmul(ones({32, 8}, DType::f32), ones({5000, 8}, DType::f32), linear));
    EXPECT_ROUTE("matmul", "cpu.avx512.rows_in_lanes",
                 matmul(ones({9, 8}, DType::f32), ones({256, 8}, DType::f32), linear));
    EXPECT_ROUTE("matmul", tiles, matmul(ones({8, 8}, DType::f32), ones({5000, 8}, DType::f32), linear));
    EXPECT_ROUTE("matmul", tiles, matmul(ones({32, 8}, DType::f32), ones({255, 8}, DType::f32), linear));
    EXPECT_ROUTE("matmul", "cpu.onednn",
                 matmul(ones({32, 8}, DType::bf16), ones({5000, 8}, DType::bf16), linear));
    EXPECT_ROUTE("matmul", tiles, matmul(ones({64, 1024}, DType::f32), ones({3, 1024}, DType::f32), linear));
    EXPECT_ROUTE("matmul", "cpu.onednn",
                 matmul(ones({64, 1025}, DType::f32), ones({3, 1025}, DType::f32), linear));
  } else {
    EXPECT_ROUTE("matmul", "cpu.onednn", matmul(ones({9, 8}, DType::f32), ones({3, 8}, DType::f32), linear));
  }
  EXPECT_ROUTE("matmul", "cpu.onednn", matmul(ones({65, 8}, DType::f32), ones({3, 8}, DType::f32), linear));
  EXPECT_ROUTE("matmul", tiles, matmul(ones({8, 8}, DType::bf16), ones({4096, 8}, DType::bf16), linear));
  EXPECT_ROUTE("matmul", "cpu.onednn",
               matmul(ones({8, 8}, DType::bf16), ones({4097, 8}, DType::bf16), linear));
  EXPECT_ROUTE("matmul", "cpu.onednn", matmul(ones({9, 8}, DType::bf16), ones({3, 8}, DType::bf16), linear));
  const std::string columns = select::cpu_supports(select::Isa::avx512) ? "cpu.avx512.gemv_columns"
                              : select::cpu_supports(select::Isa::avx2) ? "cpu.avx2.gemv_columns"
                                                                        : "cpu.onednn";
  EXPECT_ROUTE("matmul", columns, matmul(ones({1, 8}, DType::f32), ones({8, 3}, DType::f32)));
  EXPECT_ROUTE("matmul", "cpu.onednn", matmul(ones({2, 8}, DType::f32), ones({8, 3}, DType::f32)));
}

TEST_F(Selector, PinAndExcludeThroughDewImpl) {
  set_impl_overrides("matmul:portable");
  EXPECT_ROUTE("matmul", "portable", matmul(ones({4, 8}, DType::f32), ones({8, 3}, DType::f32)));
  set_impl_overrides("matmul:-cpu.onednn");
  EXPECT_ROUTE("matmul", "portable", matmul(ones({4, 8}, DType::f32), ones({8, 3}, DType::f32)));
}

TEST_F(Selector, APinnedImplementationThatRefusesNamesTheRequirement) {
  set_impl_overrides("matmul:cpu.onednn");
  std::string e = error_of([] { matmul(ones({2, 2}, DType::f64), ones({2, 2}, DType::f64)); });
  EXPECT_NE(e.find("[matmul] no implementation accepts this call (f64)"), std::string::npos) << e;
  EXPECT_NE(e.find("cpu.onednn: needs dtype in {f32, bf16, f16} (dtype is f64)"), std::string::npos) << e;
}

TEST_F(Selector, UnknownPinsAndMalformedOverridesAreRefused) {
  set_impl_overrides("matmul:cpu.magic");
  std::string e = error_of([] { matmul(ones({2, 2}, DType::f32), ones({2, 2}, DType::f32)); });
  EXPECT_NE(e.find("'cpu.magic', which does not exist; expected one of: "), std::string::npos) << e;
  EXPECT_NE(e.find("cpu.avx512.gemv_dpbf16, cpu.avx512.gemv, cpu.avx2.gemv, cpu.avx512.gemv_columns, "
                   "cpu.avx2.gemv_columns, cpu.avx512.rows_in_lanes, cpu.avx512.dot_tiles_few_rows, "
                   "cpu.avx2.dot_tiles_few_rows, cpu.onednn, "
                   "cpu.avx512.dot_tiles, cpu.avx2.dot_tiles, portable"),
            std::string::npos)
      << e;
  EXPECT_NE(error_of([] { set_impl_overrides("matmul"); }).find("expected op:impl"), std::string::npos);
}

TEST_F(Selector, RouteLogCountsCallsPerCase) {
  reset_routes();
  for (int i = 0; i < 3; ++i) matmul(ones({2, 2}, DType::f32), ones({2, 2}, DType::f32));
  auto r = routes();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].count, 3);
  EXPECT_EQ(r[0].case_label, "f32");
}

// ops.def and the folders of src/ops/ name the same operations.
TEST(OpsDef, ListsExactlyTheOpFolders) {
  namespace fs = std::filesystem;
  std::set<std::string> folders, listed;
  for (const auto& entry : fs::directory_iterator(fs::path(DEW_SOURCE_DIR) / "src/ops"))
    if (entry.is_directory()) folders.insert(entry.path().filename().string());
  std::ifstream def(fs::path(DEW_SOURCE_DIR) / "src/ops/ops.def");
  std::regex line(R"(^DEW_OP\((\w+), (\w+), (\w+)\))");
  std::string text;
  std::smatch m;
  while (std::getline(def, text))
    if (std::regex_search(text, m, line)) listed.insert(m[2]);
  EXPECT_EQ(folders, listed);
  EXPECT_EQ(gate::catalog().size() > 0, true);
}

}  // namespace
}  // namespace dew
