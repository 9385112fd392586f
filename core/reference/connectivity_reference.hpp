// Double-precision reference for functional connectivity (core/connectivity), written for clarity, not speed:
// region means over finite voxels, Pearson correlation over pairwise-complete observations (two passes: means first,
// then centred sums), seed correlation maps over a range of volumes, ROI x ROI matrices, and Fisher's z with the
// project's clamp (core/connectivity/fisher_z.hpp). docs/algorithms/connectivity.md.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <span>
#include <vector>

namespace rtf::reference {

// Mean of each region's finite voxels in one volume (`roi_of_voxel`: region in [0, rois) or -1 per voxel); NaN for a
// region without a finite voxel.
std::vector<double> roi_means(std::span<const float> volume, std::span<const int32_t> roi_of_voxel, int64_t rois);

// Pearson r of x and y over the indices where both are finite; NaN with fewer than 2 such pairs or when either is
// constant over them. Clamped to [-1, 1].
double pearson(std::span<const double> x, std::span<const double> y);

// Seed correlation map over volumes first .. first + count - 1 of `series` ([t][voxel], `voxels` per volume): the seed
// time course is the mean of the seed voxels' finite values per volume; r of every voxel's time course with it.
std::vector<double> seed_correlation_map(std::span<const float> series, int64_t voxels, int64_t first, int64_t count,
                                         std::span<const int32_t> seed_voxels);

// R x R correlation of the columns of `means` (rows: volumes, columns: regions). Columns with present[c] == false
// (regions without voxels) give NaN rows and columns; rows in which a present column is not finite are dropped.
// Diagonal: 1 for a present region that varies.
Eigen::MatrixXd roi_correlation_matrix(const Eigen::MatrixXd& means, const std::vector<bool>& present);

// Elementwise Fisher z (rtf::fisher_z: atanh with |r| clamped to 1 - 2^-24, NaN kept).
Eigen::MatrixXd fisher_z(const Eigen::MatrixXd& r);
std::vector<double> fisher_z(std::span<const double> r);

}  // namespace rtf::reference
