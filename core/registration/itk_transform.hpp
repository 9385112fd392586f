// Affine transforms as ITK text transform files (what ITK, ANTs, antsApplyTransforms and nitransforms read), and the
// conversion between ITK's physical space (LPS mm) and ours (NIfTI world, RAS mm). docs/algorithms/registration.md has
// a worked example.
//
// An ITK transform maps points of the fixed (reference) space to the moving (input) space: the image resampled onto
// the fixed grid takes at x the moving image's value at T(x). ITK's affine is y = M (x - c) + c + t with M the
// "Parameters" (9 matrix entries row by row, then t) and c the "FixedParameters" (the centre), all in LPS. In RAS,
// with F = diag(-1, -1, 1): T_ras = F T_lps F.
#pragma once

#include <Eigen/Core>
#include <filesystem>
#include <string>

namespace rtf {

// Reads the one transform of an ITK text transform file (#Insight Transform File V1.0) and returns it in RAS as a
// 4x4 world -> world matrix (fixed -> moving). Accepted types, double or float: AffineTransform_*_3_3,
// MatrixOffsetTransformBase_*_3_3, TranslationTransform_*_3_3 and IdentityTransform_*_3_3. Throws std::runtime_error
// naming the file and the problem for anything else (a composite of several transforms, a binary .mat, a displacement
// field, a wrong number of parameters, a non-invertible matrix).
Eigen::Matrix4d read_itk_affine(const std::filesystem::path& path);

// Writes `ras` (world -> world, fixed -> moving) as AffineTransform_double_3_3 in LPS with centre 0, every value with
// 17 significant digits. The file appears atomically (written beside it under a temporary name, then renamed).
void write_itk_affine(const std::filesystem::path& path, const Eigen::Matrix4d& ras);

// The text of such a file (for tests and for embedding in reports).
std::string format_itk_affine(const Eigen::Matrix4d& ras);

// LPS <-> RAS for a world -> world affine (the same formula both ways).
Eigen::Matrix4d flip_lps_ras(const Eigen::Matrix4d& affine);

}  // namespace rtf
