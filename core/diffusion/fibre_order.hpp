// bedpostx's output order: each voxel's fibres sorted by their mean f over the kept samples, largest first (xfibres
// sorts before saving, so that fibre 1 is the strongest everywhere; its samples, mean f and dyads move together).
#pragma once

#include "core/diffusion/ball_stick_mcmc.hpp"

namespace rtf {

// Reorders run.draws in place, per voxel; a stable sort (equal means keep their order).
void sort_fibres_by_mean_f(BallStickRun& run);

}  // namespace rtf
