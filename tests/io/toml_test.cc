// The TOML config reader's typed fields: a number field takes an integer as the nearest double, however
// large (a fuzzed config once made it throw std::bad_optional_access past every handler), and a field of
// the wrong type is refused with an error naming it.
#include <dew/error.h>
#include <gtest/gtest.h>

#include "error_of.h"
#include "io/toml.h"

namespace dew {
namespace {

TEST(TomlFields, ANumberFieldTakesAnyIntegerAsTheNearestDouble) {
  const toml::table root =
      parse_toml("[train]\npeak_lr = 222222222222222224\ngrad_clip = 3\nz_loss = 0.5\n", "test.toml", {});
  const TomlFields train(*root["train"].as_table(), "test.toml: train");
  EXPECT_EQ(train.number_or("peak_lr", 1.0), 222222222222222224.0);
  EXPECT_EQ(train.number_or("grad_clip", 1.0), 3.0);
  EXPECT_EQ(train.number_or("z_loss", 1.0), 0.5);
  EXPECT_EQ(train.number_or("absent", 7.0), 7.0);
}

TEST(TomlFields, ANumberFieldOfAnotherTypeIsRefusedByName) {
  const toml::table root = parse_toml("[train]\npeak_lr = \"fast\"\n", "test.toml", {});
  const TomlFields train(*root["train"].as_table(), "test.toml: train");
  const std::string error = testing::error_of([&] { (void)train.number_or("peak_lr", 1.0); });
  EXPECT_NE(error.find("peak_lr"), std::string::npos) << error;
  EXPECT_NE(error.find("expected a number"), std::string::npos) << error;
}

}  // namespace
}  // namespace dew
