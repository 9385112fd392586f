// `rtfmri glm BOLD --events FILE --contrast NAME=EXPR --out PREFIX`: the options of the first-level GLM (OLS, AR(P)
// with the permutation test, --bayes); the work is run_glm (core/first_level/glm_command.hpp). docs/algorithms/glm.md,
// glm_ar.md, bayes_glm.md.
#include <memory>

#include "cli/command_support.hpp"
#include "core/first_level/glm_command.hpp"

namespace {

void setup(CLI::App& app, rtf::cli::GlobalOptions& globals) {
  auto c = std::make_shared<rtf::GlmOptions>();
  auto* cmd = app.add_subcommand("glm", "First-level GLM of a 4D NIfTI with SPM's design (docs/algorithms/glm.md)");
  cmd->add_option("BOLD", c->bold, "4D NIfTI")->required()->check(rtf::cli::existing_file_on_rank_zero());
  cmd->add_option("--events", c->events, "BIDS events.tsv (onset, duration, trial_type[, modulation])")
      ->required()
      ->check(rtf::cli::existing_file_on_rank_zero());
  cmd->add_option("--contrast", c->contrasts,
                  "NAME=EXPR over the design's columns, e.g. faces-houses=faces-houses; 'a; b' makes an F contrast "
                  "(repeatable)")
      ->required();
  cmd->add_option("--out", c->out,
                  "Output prefix: PREFIX_design.tsv, _beta.nii.gz, _sigma2.nii.gz, _mask.nii.gz, "
                  "_contrast-NAME_stat-{effect,t,F}.nii.gz, _glm.json")
      ->required();
  cmd->add_option("--tr", c->tr_s, "TR in seconds (default: the header's)")->check(rtf::cli::positive());
  cmd->add_option("--derivatives", c->derivatives, "HRF basis: canonical, + temporal, + temporal and dispersion")
      ->check(CLI::IsMember({"none", "temporal", "dispersion"}))
      ->capture_default_str();
  cmd->add_option("--highpass", c->highpass_s, "SPM DCT high-pass cutoff in seconds (0: no drift terms)")
      ->check(rtf::cli::non_negative())
      ->capture_default_str();
  cmd->add_option("--poly", c->poly, "Legendre drift of this order instead of the DCT")->check(CLI::Range(0, 10));
  cmd->add_option("--microtime-onset", c->microtime_onset,
                  "SPM's fMRI_T0 (1..16): the bin at which regressors are sampled")
      ->check(CLI::Range(1, 16))
      ->capture_default_str();
  cmd->add_option("--confounds", c->confounds, "Extra regressors: FSL .par, rtfmri _fd.tsv or a tsv with a header")
      ->check(rtf::cli::existing_file_on_rank_zero());
  cmd->add_option("--confound-columns", c->confound_columns, "Use only these columns of --confounds (by name)");
  cmd->add_option("--ar1", c->ar1, "AR(1) prewhitening with this coefficient (e.g. 0.2, SPM's global prior); 0: OLS")
      ->check(CLI::Range(-0.99, 0.99))
      ->capture_default_str();
  cmd->add_option("--mask", c->mask, "Fit only inside this mask (default: a brain mask of the mean volume)")
      ->check(rtf::cli::existing_file_on_rank_zero());
  cmd->add_flag("--no-mask", c->no_mask, "Fit every voxel");
  cmd->add_option("--threshold", c->threshold, "|t| threshold for the printed summary (F: its square)")
      ->capture_default_str();
  cmd->add_option("--noise", c->noise,
                  "ols, or arP (P = 1..4): per-voxel AR(P) by Cochrane-Orcutt as statsmodels' GLSAR, AR maps smoothed "
                  "(BROCCOLI's ar4); also writes PREFIX_ar.nii.gz (docs/algorithms/glm_ar.md). With --bayes: the "
                  "sampled AR(P) noise (default ar1)")
      ->check(CLI::IsMember({"ols", "ar1", "ar2", "ar3", "ar4"}))
      ->capture_default_str();
  cmd->add_option("--ar-iterations", c->ar_iterations, "Cochrane-Orcutt fits (GLSAR's maxiter)")
      ->check(CLI::Range(1, 20))
      ->capture_default_str();
  cmd->add_option("--ar-fwhm", c->ar_fwhm, "FWHM in mm of the AR maps' smoothing inside the mask (0: none)")
      ->check(rtf::cli::non_negative())
      ->capture_default_str();
  cmd->add_option("--fwhm", c->fwhm,
                  "Smooth the data (inside the mask) before the AR fit, and every permutation's surrogate likewise "
                  "(mm; 0: none)")
      ->check(rtf::cli::non_negative())
      ->capture_default_str();
  cmd->add_option("--permutations", c->permutations,
                  "First-level permutation test with N rearrangements (Eklund et al. 2012: whiten, permute, re-colour, "
                  "smooth, fit); needs --noise arP")
      ->check(CLI::Range(0, 10000000));
  cmd->add_option("--inference", c->inference,
                  "voxel, cluster-extent, cluster-mass, tfce (repeatable): PREFIX_contrast-NAME_{vox,clustere,clusterm,"
                  "tfce}_corrp.nii.gz (1 - FWE p) and _null_*.txt")
      ->capture_default_str();
  cmd->add_option("--cluster-threshold", c->cluster_threshold, "Cluster-forming t for cluster inference")
      ->check(rtf::cli::positive())
      ->capture_default_str();
  cmd->add_option("--permute-mode", c->permute_mode,
                  "Rearrange the whitened residuals' time points, or flip their signs")
      ->check(CLI::IsMember({"permute", "signflip"}))
      ->capture_default_str();
  cmd->add_option("--seed", c->seed, "Seed of the permutations (the same seed, the same permutations on every device)")
      ->capture_default_str();
  cmd->add_option("--tfce-e", c->tfce_e, "TFCE extent exponent E")
      ->check(rtf::cli::non_negative())
      ->capture_default_str();
  cmd->add_option("--tfce-h", c->tfce_h, "TFCE height exponent H")
      ->check(rtf::cli::non_negative())
      ->capture_default_str();
  cmd->add_option("--connectivity", c->connectivity, "Cluster and TFCE neighbourhood: 6, 18 or 26")
      ->check(CLI::IsMember({6, 18, 26}))
      ->capture_default_str();
  cmd->add_flag("--bayes", c->bayes,
                "Bayesian GLM: Gibbs sampler over beta, sigma^2 and AR(P) rho (--noise ar1..ar4, default ar1) with "
                "BROCCOLI's priors; writes each t contrast's posterior mean, SD and PPM P(c'beta > 0), sigma^2's and "
                "rho's posterior means (PREFIX_ar_postmean: 4D, one volume per coefficient, for P > 1), and "
                "split-R-hat / ESS in PREFIX_glm.json (docs/algorithms/bayes_glm.md; --seed seeds the chains). Spreads "
                "blocks of voxels over --devices and the ranks of `mpirun -np K rtfmri glm ... --bayes` with the same "
                "results (docs/scale.md)");
  cmd->add_option("--draws", c->bayes_options.draws, "--bayes: kept draws per chain")
      ->check(CLI::Range(32, 10000000))
      ->capture_default_str();
  cmd->add_option("--burn-in", c->bayes_options.burn_in, "--bayes: steps dropped at the start of each chain")
      ->check(CLI::Range(0, 10000000))
      ->capture_default_str();
  cmd->add_option("--chains", c->bayes_options.chains, "--bayes: chains per voxel (split-R-hat needs >= 1; 2+ advised)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->add_option("--chunk-voxels", c->bayes_options.chunk_voxels,
                  "--bayes: voxels per block handed to a device of --devices or an mpirun rank (0: 4 blocks per "
                  "device, at least 256; the results do not depend on it)")
      ->check(rtf::cli::non_negative())
      ->capture_default_str();
  cmd->add_option("--batch", c->batch, "Surrogate data sets per device launch (memory: batch x the series x 3)")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  cmd->callback([c, cmd, &globals] {
    c->noise_given = cmd->count("--noise") > 0;
    rtf::run_glm(*c, {globals.device, globals.devices});
  });
}

RTF_REGISTER_COMMAND(66, setup);

}  // namespace
