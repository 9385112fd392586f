// Ball-and-stick MCMC of many voxels on the device (kernels/ball_stick.cl; model: core/diffusion/ball_stick_model.hpp,
// docs/algorithms/bedpost.md): voxel blocks sized to the device's memory, each run in launches of a few hundred
// iterations (progress between them). Streams are keyed by the voxel's index in the whole mask (`first_voxel` + its
// position), so any split into blocks, devices or hosts gives the same chains.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/device/device.hpp"
#include "core/diffusion/ball_stick_model.hpp"

namespace rtf {

struct BallStickRun {
  int voxels = 0, samples = 0, fibres = 0;
  std::vector<float> draws;                                   // [3 fibre + (0 th, 1 ph, 2 f)][sample][voxel]
  std::vector<double> mean_s0, mean_d, mean_d_std, mean_tau;  // [voxel], over the kept samples
  BallStickVector accepted{}, rejected{};                     // over all voxels while recording
  const float* th(int fibre, int sample) const { return at(3 * fibre, sample); }
  const float* ph(int fibre, int sample) const { return at(3 * fibre + 1, sample); }
  const float* f(int fibre, int sample) const { return at(3 * fibre + 2, sample); }

 private:
  const float* at(int row, int sample) const {
    return draws.data() + (static_cast<size_t>(row) * static_cast<size_t>(samples) + static_cast<size_t>(sample)) *
                              static_cast<size_t>(voxels);
  }
};

// Voxel-iterations done and in all.
using BallStickProgress = std::function<void(int64_t done, int64_t total)>;

// Work-items per voxel the chains use on `device` for this many measurements (options.lanes where set).
int ball_stick_lanes(const Device& device, int measurements, const BallStickOptions& options);

// Runs burn-in + jumps iterations of every voxel. `data`: [voxel][measurement]; `init`: one state per voxel (e.g.
// initialise_ball_stick). `use_double` computes in double (the reference's arithmetic; needs cl_khr_fp64). Throws
// std::invalid_argument for inconsistent sizes or options.
BallStickRun ball_stick_mcmc(Device& device, const DiffusionScheme& scheme, const std::vector<float>& data,
                             const std::vector<BallStickParams>& init, const BallStickOptions& options,
                             uint32_t first_voxel = 0, const BallStickProgress& progress = {}, bool use_double = false);

// The runs of consecutive voxel blocks (in voxel order, the same options) as one run of all their voxels: draws and
// means placed per voxel, acceptance counts summed (whole numbers: exact in any order). Throws std::invalid_argument
// for blocks of different samples or fibres.
BallStickRun join_ball_stick_runs(const std::vector<BallStickRun>& blocks);

// The state after each of the first `iterations` iterations, [iteration][quantity][voxel] (tests: against the
// reference's chain, draw for draw).
std::vector<double> ball_stick_trace(Device& device, const DiffusionScheme& scheme, const std::vector<float>& data,
                                     const std::vector<BallStickParams>& init, const BallStickOptions& options,
                                     uint32_t first_voxel, int iterations, bool use_double);

}  // namespace rtf
