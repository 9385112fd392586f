// Each output is a task (its values gathered, then written); the tasks run on host threads, each taking the next.
#include "core/diffusion/bedpost_outputs.hpp"

#include <fmt/format.h>

#include <atomic>
#include <exception>
#include <functional>
#include <mutex>

#include "core/diffusion/dyads.hpp"
#include "core/io/nifti_io.hpp"
#include "core/util/host_threads.hpp"

namespace rtf {

namespace {

// `volumes` maps of the mask voxels ([volume][voxel]) as a 3D (one volume) or 4D image on `grid`.
void write_maps(const std::filesystem::path& path, const ImageHeader& grid, const std::vector<int64_t>& voxels,
                const std::vector<float>& values, int volumes) {
  ImageHeader h = grid;
  h.num_volumes = volumes;
  h.tr_s = 0.0;
  h.vector_components = false;
  Image image(h, 0.0f);
  const size_t n = voxels.size(), per_volume = static_cast<size_t>(grid.voxels_per_volume());
  for (size_t t = 0; t < static_cast<size_t>(volumes); ++t) {
    for (size_t v = 0; v < n; ++v) image.data()[t * per_volume + static_cast<size_t>(voxels[v])] = values[t * n + v];
  }
  write_nifti(path, image);
}

}  // namespace

std::vector<std::string> write_bedpost_maps(const std::filesystem::path& dir, const ImageHeader& grid,
                                            const std::vector<int64_t>& voxels, const BallStickRun& run,
                                            const BallStickOptions& o) {
  const auto nv = static_cast<size_t>(run.voxels);
  const int samples = run.samples;
  std::vector<std::pair<std::string, std::function<void(const std::filesystem::path&)>>> tasks;
  const auto add = [&](std::string name, std::function<std::vector<float>()> values, int volumes) {
    tasks.emplace_back(name, [&, values = std::move(values), volumes](const std::filesystem::path& path) {
      write_maps(path, grid, voxels, values(), volumes);
    });
  };
  // One row of the draws (3 fibre + which) over the samples, or its mean.
  const auto row = [&](int j, int which, int s) {
    return which == 0 ? run.th(j, s) : which == 1 ? run.ph(j, s) : run.f(j, s);
  };
  const auto merged = [&, samples, nv](int j, int which) {
    std::vector<float> values(static_cast<size_t>(samples) * nv);
    for (int s = 0; s < samples; ++s) {
      std::copy(row(j, which, s), row(j, which, s) + nv, values.begin() + static_cast<std::ptrdiff_t>(s * nv));
    }
    return values;
  };
  const auto mean = [&, samples, nv](int j, int which) {
    std::vector<float> m(nv, 0.0f);
    for (int s = 0; s < samples; ++s) {
      const float* x = row(j, which, s);
      for (size_t v = 0; v < nv; ++v) m[v] += x[v] / static_cast<float>(samples);
    }
    return m;
  };
  const char* names[] = {"th", "ph", "f"};
  for (int j = 0; j < o.fibres; ++j) {
    for (int which = 0; which < 3; ++which) {
      add(
          fmt::format("merged_{}{}samples", names[which], j + 1), [=] { return merged(j, which); }, samples);
      add(
          fmt::format("mean_{}{}samples", names[which], j + 1), [=] { return mean(j, which); }, 1);
    }
    const auto dyads = [&, j, samples, nv](bool dispersion) {
      std::vector<float> out(dispersion ? nv : 3 * nv);
      for (size_t v = 0; v < nv; ++v) {
        const Dyad d = mean_dyad(run.th(j, 0) + v, run.ph(j, 0) + v, samples, run.voxels);
        if (dispersion) {
          out[v] = static_cast<float>(d.dispersion);
        } else {
          for (size_t c = 0; c < 3; ++c) out[c * nv + v] = static_cast<float>(d.vector[c]);
        }
      }
      return out;
    };
    add(
        fmt::format("dyads{}", j + 1), [=] { return dyads(false); }, 3);
    add(
        fmt::format("dyads{}_dispersion", j + 1), [=] { return dyads(true); }, 1);
  }
  add(
      "mean_fsumsamples",
      [&, nv] {
        std::vector<float> sum(nv, 0.0f);
        for (int j = 0; j < o.fibres; ++j) {
          const std::vector<float> m = mean(j, 2);
          for (size_t v = 0; v < nv; ++v) sum[v] += m[v];
        }
        return sum;
      },
      1);
  const auto of = [](const std::vector<double>& x) { return [&x] { return std::vector<float>(x.begin(), x.end()); }; };
  add("mean_dsamples", of(run.mean_d), 1);
  add("mean_S0samples", of(run.mean_s0), 1);
  if (o.model == 2) add("mean_d_stdsamples", of(run.mean_d_std), 1);
  if (o.rician) add("mean_tausamples", of(run.mean_tau), 1);
  add(
      "nodif_brain_mask", [nv] { return std::vector<float>(nv, 1.0f); }, 1);

  std::atomic<size_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  host_ranges(tasks.size(), host_thread_count(), [&](size_t, size_t, size_t) {
    for (size_t k = next++; k < tasks.size(); k = next++) {
      try {
        tasks[k].second(dir / (tasks[k].first + ".nii.gz"));
      } catch (...) {
        const std::lock_guard<std::mutex> lock(failure_mutex);
        if (!failure) failure = std::current_exception();
      }
    }
  });
  if (failure) std::rethrow_exception(failure);
  std::vector<std::string> written;
  for (const auto& t : tasks) written.push_back(t.first + ".nii.gz");
  return written;
}

}  // namespace rtf
