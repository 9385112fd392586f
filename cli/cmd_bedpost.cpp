// `rtfmri bedpost DIR`: FSL bedpostx's ball-and-stick MCMC on the device. Reads DIR/data, bvals, bvecs and
// nodif_brain_mask as bedpostx does, initialises every voxel on the host (tensor, then a Levenberg-Marquardt fit),
// runs the chains (core/diffusion/ball_stick_mcmc.hpp) and writes DIR.bedpostX with FSL's file names, built as
// DIR.bedpostX.partial and renamed when complete. docs/algorithms/bedpost.md.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/cli_support.hpp"
#include "core/diffusion/ball_stick_init.hpp"
#include "core/diffusion/ball_stick_mcmc.hpp"
#include "core/diffusion/bedpost_outputs.hpp"
#include "core/diffusion/diffusion_data.hpp"
#include "core/diffusion/fibre_order.hpp"
#include "core/io/atomic_file.hpp"
#include "core/io/nifti_io.hpp"

namespace {

namespace fs = std::filesystem;

struct BedpostArgs {
  std::string dir, out;
  rtf::BallStickOptions options;
};

void copy_text(const fs::path& from, const fs::path& to) {
  std::ifstream in(from);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  rtf::write_text_atomically(to, text);
}

void run(const BedpostArgs& args, const rtf::cli::GlobalOptions& globals) {
  using namespace rtf;
  const cli::Stopwatch clock;
  const BallStickOptions& o = args.options;
  std::string dir = args.dir;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  const fs::path out = args.out.empty() ? fs::path(dir + ".bedpostX") : fs::path(args.out);
  if (fs::exists(out)) {
    throw std::invalid_argument(
        fmt::format("{} exists: remove it or choose another --out (bedpost never overwrites results)", out.string()));
  }
  if (o.fibres < 1 || o.fibres > kBallStickMaxFibres) {
    throw std::invalid_argument(fmt::format("-n {}: 1 to {} fibres", o.fibres, kBallStickMaxFibres));
  }
  if (!(o.ard_weight >= 0.0) || o.update_proposal_every < 1) {
    throw std::invalid_argument(
        fmt::format("-w {} (>= 0), --updateproposalevery {} (>= 1)", o.ard_weight, o.update_proposal_every));
  }
  if (o.jumps < o.sample_every || o.sample_every < 1 || o.burn_in < 0) {
    throw std::invalid_argument(fmt::format("-b {} -j {} -s {}: burn-in >= 0 and jumps >= sample-every >= 1", o.burn_in,
                                            o.jumps, o.sample_every));
  }
  const DiffusionInput input = read_bedpost_dir(dir);
  const int n = input.scheme.measurements();
  const auto voxels = static_cast<int>(input.voxels.size());
  spdlog::info("bedpost: {} voxels in {}/nodif_brain_mask, {} measurements, {} fibre(s), model {}, {} noise", voxels,
               dir, n, o.fibres, o.model, o.rician ? "Rician" : "Gaussian");
  const std::vector<float> data = gather_mask_signals(input);
  auto device = cli::open_device(globals);
  spdlog::info("bedpost: initialising {} voxels (tensor, then Levenberg-Marquardt) on the host's cores", voxels);
  const cli::Stopwatch init_clock;
  std::vector<uint8_t> fitted;
  const std::vector<BallStickParams> init =
      initialise_ball_stick(input.scheme, data.data(), voxels, o.fibres, o.model, &fitted);
  const double init_seconds = init_clock.seconds();
  const auto unfitted = static_cast<int64_t>(std::count(fitted.begin(), fitted.end(), 0));
  spdlog::info("bedpost: initialised in {:.2f} s ({} voxel(s) without a usable fit start from defaults)", init_seconds,
               unfitted);
  const int iterations = o.burn_in + o.jumps;
  cli::ProgressLog progress("voxels", 2.0);
  const cli::Stopwatch mcmc_clock;
  BallStickRun run = ball_stick_mcmc(*device, input.scheme, data, init, o, 0,
                                     [&](int64_t done, int64_t) { progress(done / iterations, voxels); });
  const double mcmc_seconds = mcmc_clock.seconds();
  sort_fibres_by_mean_f(run);  // bedpostx's output order: fibre 1 the strongest in every voxel

  // Outputs, into OUT.partial; renamed to OUT when every file is there.
  const fs::path partial = out.string() + ".partial";
  if (fs::exists(partial)) {
    spdlog::warn("bedpost: removing {} left by an interrupted run", partial.string());
    fs::remove_all(partial);
  }
  fs::create_directories(partial);
  const cli::Stopwatch write_clock;
  write_bedpost_maps(partial, input.data.header(), input.voxels, run, o);
  const double write_seconds = write_clock.seconds();
  const int samples = run.samples;
  copy_text(fs::path(dir) / "bvals", partial / "bvals");
  copy_text(fs::path(dir) / "bvecs", partial / "bvecs");
  nlohmann::json acceptance;
  const char* names[] = {"S0", "d", "d_std", "tau"};
  for (int k = 0; k < 4; ++k) {
    const double total = run.accepted[static_cast<size_t>(k)] + run.rejected[static_cast<size_t>(k)];
    if (total > 0) acceptance[names[k]] = run.accepted[static_cast<size_t>(k)] / total;
  }
  for (int j = 0; j < o.fibres; ++j) {
    for (int w = 0; w < 3; ++w) {
      const auto k = static_cast<size_t>(fibre_par(j, w));
      const double total = run.accepted[k] + run.rejected[k];
      if (total > 0)
        acceptance[fmt::format("{}{}", w == 0 ? "th" : w == 1 ? "ph" : "f", j + 1)] = run.accepted[k] / total;
    }
  }
  const nlohmann::json summary{{"dir", dir},
                               {"voxels", voxels},
                               {"measurements", n},
                               {"fibres", o.fibres},
                               {"ard_weight", o.ard_weight},
                               {"burn_in", o.burn_in},
                               {"jumps", o.jumps},
                               {"sample_every", o.sample_every},
                               {"samples", samples},
                               {"model", o.model},
                               {"rician", o.rician},
                               {"all_ard", o.all_ard},
                               {"no_ard", o.no_ard},
                               {"seed", o.seed},
                               {"unfitted_voxels", unfitted},
                               {"acceptance_while_recording", acceptance},
                               {"init_seconds", init_seconds},
                               {"mcmc_seconds", mcmc_seconds},
                               {"write_seconds", write_seconds},
                               {"seconds", clock.seconds()},
                               {"device", device->info().device_name}};
  write_text_atomically(partial / "bedpost.json", summary.dump(2) + "\n");
  fs::rename(partial, out);
  fmt::print(
      "bedpost: {} voxels, {} samples of {} fibre(s) -> {} (init {:.2f} s, MCMC {:.2f} s, writing {:.2f} s, {:.2f} s "
      "in "
      "all)\n",
      voxels, samples, o.fibres, out.string(), init_seconds, mcmc_seconds, write_seconds, clock.seconds());
}

void setup(CLI::App& app, rtf::cli::GlobalOptions& globals) {
  auto args = std::make_shared<BedpostArgs>();
  auto* cmd = app.add_subcommand(
      "bedpost",
      "FSL bedpostx's ball-and-stick model by MCMC on the device: fibre orientations and fractions per voxel, with "
      "FSL's outputs (docs/algorithms/bedpost.md)");
  cmd->add_option("DIR", args->dir,
                  "bedpostx's input folder: data.nii.gz (4D), bvals, bvecs (FSL: 3 rows), nodif_brain_mask.nii.gz")
      ->required()
      ->check(CLI::ExistingDirectory);
  rtf::BallStickOptions& o = args->options;
  cmd->add_option("-n,--nfibres", o.fibres, "Fibres per voxel (1..3)")->capture_default_str();
  cmd->add_option("-w,--fudge", o.ard_weight, "ARD weight: larger switches unsupported fibres off more readily")
      ->capture_default_str();
  cmd->add_option("-b,--burnin", o.burn_in, "Burn-in iterations (proposal widths adapt during them)")
      ->capture_default_str();
  cmd->add_option("-j,--njumps", o.jumps, "Iterations after burn-in")->capture_default_str();
  cmd->add_option("-s,--sampleevery", o.sample_every, "Keep every s-th iteration after burn-in (j / s samples)")
      ->capture_default_str();
  cmd->add_option("--model", o.model,
                  "1: ball and sticks, one diffusivity; 2: gamma-distributed diffusivities (d_std; for several "
                  "b-shells)")
      ->check(CLI::IsMember({1, 2}))
      ->capture_default_str();
  cmd->add_flag("--rician", o.rician, "Rician noise (samples the noise precision tau) instead of Gaussian");
  cmd->add_flag("--allard", o.all_ard, "ARD on the first fibre too");
  cmd->add_flag("--noard", o.no_ard, "No ARD on any fibre");
  cmd->add_option("--updateproposalevery", o.update_proposal_every,
                  "Adapt the proposal widths every this many burn-in iterations")
      ->capture_default_str();
  cmd->add_option("--seed", o.seed, "Seed of the random streams (same seed: same chains on any device)")
      ->capture_default_str();
  cmd->add_option(
      "--out", args->out,
      "Output folder (default DIR.bedpostX; must not exist), with FSL's files: merged_th<i>samples, "
      "merged_ph<i>samples, merged_f<i>samples (one volume per sample), mean_th/ph/f<i>samples, "
      "mean_dsamples, mean_S0samples, mean_fsumsamples (mean_d_stdsamples: model 2; mean_tausamples: "
      "--rician), dyads<i>, dyads<i>_dispersion, nodif_brain_mask, bvals, bvecs, and bedpost.json; built as "
      "OUT.partial and renamed when complete");
  cmd->callback([args, &globals] { run(*args, globals); });
}

RTF_REGISTER_COMMAND(78, setup);

}  // namespace
