// An objective's options as JSON and back (diffusion.json; the Trainer's [diffusion] table).
#include <dew/diffusion.h>
#include <dew/error.h>

#include <cmath>

#include "io/json.h"

namespace dew::diffusion {

VpSchedule vp_schedule(const ObjectiveOptions& o) {
  if (o.schedule == "linear") return VpSchedule::linear(o.schedule_steps);
  DEW_REQUIRE(o.schedule == "cosine", "[diffusion] schedule \"{}\"; expected \"linear\" or \"cosine\"",
              o.schedule);
  return VpSchedule::cosine(o.schedule_steps);
}

std::string objective_json(const ObjectiveOptions& o) {
  return nlohmann::json{{"objective", objective_name(o.objective)},
                        {"schedule", o.schedule},
                        {"schedule_steps", o.schedule_steps},
                        {"p_mean", o.p_mean},
                        {"p_std", o.p_std},
                        {"sigma_data", o.sigma_data},
                        {"logit_normal", o.logit_normal},
                        {"logit_mean", o.logit_mean},
                        {"logit_std", o.logit_std},
                        {"meanflow_ratio", o.meanflow_ratio},
                        {"meanflow_power", o.meanflow_power}}
             .dump(2) +
         "\n";
}

ObjectiveOptions parse_objective_json(const std::string& json_text, const std::string& source) {
  const nlohmann::json j = parse_json(json_text, source);
  DEW_REQUIRE(j.is_object(), "{}: expected an object of the objective's options", source);
  const JsonFields f{j, source};
  f.only({"objective", "schedule", "schedule_steps", "p_mean", "p_std", "sigma_data", "logit_normal",
          "logit_mean", "logit_std", "meanflow_ratio", "meanflow_power"});
  DEW_REQUIRE(f.has("objective"),
              "{}: \"objective\" is missing; expected ddpm-epsilon, ddpm-v, edm, flow or meanflow", source);
  ObjectiveOptions o;
  o.objective = parse_objective(f.text_or("objective", ""));
  o.schedule = f.text_or("schedule", o.schedule);
  o.schedule_steps = f.size_or("schedule_steps", o.schedule_steps);
  o.p_mean = f.number_or("p_mean", o.p_mean);
  o.p_std = f.number_or("p_std", o.p_std);
  o.sigma_data = f.number_or("sigma_data", o.sigma_data);
  o.logit_normal = f.flag_or("logit_normal", o.logit_normal);
  o.logit_mean = f.number_or("logit_mean", o.logit_mean);
  o.logit_std = f.number_or("logit_std", o.logit_std);
  o.meanflow_ratio = f.number_or("meanflow_ratio", o.meanflow_ratio);
  o.meanflow_power = f.number_or("meanflow_power", o.meanflow_power);
  vp_schedule(o);  // a schedule name or size that does not exist is refused here
  DEW_REQUIRE(o.p_std > 0 && o.sigma_data > 0 && o.logit_std > 0,
              "{}: p_std {}, sigma_data {}, logit_std {}; expected each > 0", source, o.p_std, o.sigma_data,
              o.logit_std);
  DEW_REQUIRE(o.meanflow_ratio >= 0 && o.meanflow_ratio <= 1 && o.meanflow_power >= 0,
              "{}: meanflow_ratio {} and meanflow_power {}; expected a ratio in [0, 1] and a power >= 0",
              source, o.meanflow_ratio, o.meanflow_power);
  return o;
}

}  // namespace dew::diffusion
