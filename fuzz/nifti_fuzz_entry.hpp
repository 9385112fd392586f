// The NIfTI reader's fuzzing entry, shared by the libFuzzer target (fuzz_nifti_reader.cpp) and the ctest
// that replays tests/data/nifti_corpus without libFuzzer (tests/io/test_fuzz_corpus_replay.cpp).
// The input's bytes become a temporary .nii (.nii.gz when they start with the gzip magic) read with small
// limits. NiftiError is the expected outcome for bad input; any other exception escapes (libFuzzer reports
// it as a crash) and a broken invariant aborts. Inputs that load are written back and re-read, which must
// reproduce the image: exactly through NIfTI-2, up to float32 rounding of the geometry through NIfTI-1.
// Uncompressed inputs are also read gzip-compressed, which must give the same outcome and image.
#pragma once

#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <system_error>

#include "core/io/byte_stream.hpp"
#include "core/io/nifti_io.hpp"

namespace rtf::fuzz {

enum class FuzzOutcome { kLoaded, kRejected };

inline const NiftiReadLimits& fuzz_limits() {
  static const NiftiReadLimits limits{.max_dim = 1 << 12, .max_bytes = 64ull << 20};
  return limits;
}

[[noreturn]] inline void fuzz_invariant_failed(const char* what) {
  std::fprintf(stderr, "nifti fuzz invariant failed: %s\n", what);
  std::abort();
}

inline double as_float(double v) {
  return static_cast<double>(static_cast<float>(v));
}

// Writes `image` as NIfTI-`version`, reads it back and compares with what the format can keep.
inline void check_round_trip(const Image& image, const std::filesystem::path& dir, int version) {
  const std::filesystem::path copy = dir / "round_trip.nii";
  try {
    write_nifti(copy, image, DataType::kFloat32, version);
  } catch (const NiftiError&) {
    if (version == 2) throw;  // NIfTI-2 must take anything the reader returns
    return;                   // NIfTI-1 may refuse geometry beyond float32
  }
  const Image back = read_nifti(copy, fuzz_limits());
  const ImageHeader& a = image.header();
  const ImageHeader& b = back.header();
  if (a.dims != b.dims || a.num_volumes != b.num_volumes) fuzz_invariant_failed("dims changed");
  if (image.data().size() != back.data().size() ||
      std::memcmp(image.data().data(), back.data().data(), image.data().size() * sizeof(float)) != 0) {
    fuzz_invariant_failed("voxel values changed");
  }
  const bool exact = version == 2;
  for (size_t i = 0; i < 3; ++i) {
    if (b.voxel_mm[i] != (exact ? a.voxel_mm[i] : as_float(a.voxel_mm[i]))) fuzz_invariant_failed("voxel size");
  }
  for (int r = 0; r < 4; ++r) {
    for (int c = 0; c < 4; ++c) {
      if (b.affine(r, c) != (exact ? a.affine(r, c) : as_float(a.affine(r, c)))) fuzz_invariant_failed("affine");
    }
  }
  if (b.tr_s != (exact ? a.tr_s : as_float(a.tr_s))) fuzz_invariant_failed("TR changed");
  std::error_code ec;
  std::filesystem::remove(copy, ec);
}

inline bool same_image(const Image& a, const Image& b) {
  return a.header().dims == b.header().dims && a.nt() == b.nt() && a.header().affine == b.header().affine &&
         a.header().tr_s == b.header().tr_s && a.data().size() == b.data().size() &&
         std::memcmp(a.data().data(), b.data().data(), a.data().size() * sizeof(float)) == 0;
}

// Reading the same bytes from a .nii.gz must agree with reading them from a .nii.
inline void check_compressed_agrees(const uint8_t* data, size_t size, const std::optional<Image>& plain,
                                    const std::filesystem::path& dir) {
  const std::filesystem::path copy = dir / "compressed_copy.nii.gz";
  io::ByteWriter writer(copy, /*gzip=*/true);
  writer.write(data, size);
  writer.close();
  std::optional<Image> compressed;
  try {
    compressed = read_nifti(copy, fuzz_limits());
  } catch (const NiftiError&) {
  }
  if (plain.has_value() != compressed.has_value()) fuzz_invariant_failed("plain and gzip reads disagree");
  if (plain && !same_image(*plain, *compressed)) fuzz_invariant_failed("plain and gzip reads differ");
  std::error_code ec;
  std::filesystem::remove(copy, ec);
}

inline FuzzOutcome fuzz_nifti_outcome(const uint8_t* data, size_t size) {
  // One scratch directory per process, removed at exit.
  struct ScratchDir {
    std::filesystem::path path =
        std::filesystem::temp_directory_path() / ("rtf-nifti-fuzz-" + std::to_string(::getpid()));
    ScratchDir() { std::filesystem::create_directories(path); }
    ~ScratchDir() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static const ScratchDir scratch;
  const std::filesystem::path& dir = scratch.path;
  const bool gzip = size >= 2 && data[0] == 0x1F && data[1] == 0x8B;
  const std::filesystem::path input = dir / (gzip ? "input.nii.gz" : "input.nii");
  {
    std::ofstream out(input, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    if (!out) fuzz_invariant_failed("cannot write the input file");
  }
  FuzzOutcome outcome = FuzzOutcome::kRejected;
  std::optional<Image> loaded;
  try {
    loaded = read_nifti(input, fuzz_limits());
    const Image& image = *loaded;
    if (image.data().size() != static_cast<size_t>(image.header().total_voxels())) {
      fuzz_invariant_failed("data size does not match the header");
    }
    const ImageHeader header_only = read_nifti_header(input, fuzz_limits());
    if (header_only.dims != image.header().dims || !(header_only.affine == image.header().affine)) {
      fuzz_invariant_failed("read_nifti_header disagrees with read_nifti");
    }
    outcome = FuzzOutcome::kLoaded;
    check_round_trip(image, dir, 2);
    check_round_trip(image, dir, 1);
  } catch (const NiftiError& e) {
    if (outcome == FuzzOutcome::kLoaded) fuzz_invariant_failed("re-reading a written image failed");
    if (std::string(e.what()).find(input.string()) == std::string::npos) {
      fuzz_invariant_failed("NiftiError message does not name the file");
    }
  }
  if (!gzip) check_compressed_agrees(data, size, loaded, dir);
  std::error_code ec;
  std::filesystem::remove(input, ec);
  return outcome;
}

inline int fuzz_nifti_one_input(const uint8_t* data, size_t size) {
  (void)fuzz_nifti_outcome(data, size);
  return 0;
}

}  // namespace rtf::fuzz
