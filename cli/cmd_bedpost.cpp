// `rtfmri bedpost DIR`: FSL bedpostx's options; the work is run_bedpost (core/diffusion/bedpost.hpp).
// docs/algorithms/bedpost.md, docs/scale.md.
#include <memory>

#include "cli/command_support.hpp"
#include "core/diffusion/bedpost.hpp"

namespace {

void setup(CLI::App& app, rtf::cli::GlobalOptions& globals) {
  auto args = std::make_shared<rtf::BedpostOptions>();
  auto* cmd = app.add_subcommand(
      "bedpost",
      "FSL bedpostx's ball-and-stick model by MCMC on the device: fibre orientations and fractions per voxel, with "
      "FSL's outputs (docs/algorithms/bedpost.md). Spreads blocks of voxels over the devices of --devices (e.g. "
      "`rtfmri --devices gpu bedpost DIR`) and over the ranks of `mpirun -np K rtfmri bedpost DIR` (rank 0 reads and "
      "writes; docs/scale.md); any split gives the same chains, bit for bit");
  cmd->add_option("DIR", args->dir,
                  "bedpostx's input folder: data.nii.gz (4D), bvals, bvecs (FSL: 3 rows), nodif_brain_mask.nii.gz")
      ->required()
      ->check(rtf::cli::existing_directory_on_rank_zero());
  rtf::BallStickOptions& o = args->chains;
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
  cmd->add_option("--chunk-voxels", args->chunk_voxels,
                  "Voxels per block handed to a device (0: from the devices: one block per device while a device's "
                  "share is below 131,072 voxels, else up to 4 per device of at least 65,536, as many for every "
                  "device; the results do not depend on it)")
      ->check(rtf::cli::non_negative())
      ->capture_default_str();
  cmd->add_flag("--host-start", args->host_start,
                "Compute each voxel's starting state (tensor fit, then Levenberg-Marquardt) on the host's cores in "
                "double, as the reference does, instead of on the devices (the default where a device has fp64; the "
                "two agree to rounding on well-posed voxels, docs/algorithms/bedpost.md)");
  cmd->add_option(
      "--out", args->out,
      "Output folder (default DIR.bedpostX; must not exist), with FSL's files: merged_th<i>samples, "
      "merged_ph<i>samples, merged_f<i>samples (one volume per sample), mean_th/ph/f<i>samples, "
      "mean_dsamples, mean_S0samples, mean_fsumsamples (mean_d_stdsamples: model 2; mean_tausamples: "
      "--rician), dyads<i>, dyads<i>_dispersion, nodif_brain_mask, bvals, bvecs, and bedpost.json; built as "
      "OUT.partial and renamed when complete (a run stopped midway keeps its finished blocks in OUT.partial/chunks/: "
      "the same command again reuses them)");
  cmd->callback([args, &globals] { rtf::run_bedpost(*args, {globals.device, globals.devices}); });
}

RTF_REGISTER_COMMAND(78, setup);

}  // namespace
