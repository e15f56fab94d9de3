// The vjps of Tensor's views (slice, select, permute, reshape, expand, unsqueeze, clone), written with
// ops: core records views as geometry (core/autograd.h) because it cannot call ops itself.
#pragma once

#include <vector>

#include "core/autograd.h"

namespace dew::autodiff {

// {d_base} from the gradient of the view.
std::vector<Tensor> view_vjp(const detail::ViewSpec& view, const Tensor& d_view);

}  // namespace dew::autodiff
