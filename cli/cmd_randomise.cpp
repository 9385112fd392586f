// `rtfmri randomise`: FSL randomise's command line (-i -o -d -t -e -m -1 -n -x -c -C -D --seed); the work is
// run_randomise (core/permutation/randomise.hpp). docs/algorithms/randomise.md, docs/scale.md.
#include <memory>

#include "cli/command_support.hpp"
#include "core/permutation/randomise.hpp"

namespace {

void setup(CLI::App& app, rtf::cli::GlobalOptions& globals) {
  auto args = std::make_shared<rtf::RandomiseOptions>();
  auto* cmd = app.add_subcommand(
      "randomise",
      "Permutation inference as FSL randomise (same options and output names): t and F statistics; voxel-wise (-x), "
      "cluster (-c/-C) and TFCE (-T) FWE-corrected p maps, written as 1 - p (docs/algorithms/randomise.md). The "
      "rearrangements run in chunks (512, the last quarter 128) over the devices of --devices (before the subcommand: "
      "rtfmri --devices "
      "all randomise ...) and over the ranks of mpirun / srun (mpirun -np 4 rtfmri randomise ...), with results "
      "identical to one device's; a stopped run keeps PREFIX_chunks/ and, started again, reuses its finished chunks");
  cmd->add_option("-i,--in", args->inputs, "4D input (one volume per subject), or one 3D image per subject (repeat -i)")
      ->required()
      ->check(rtf::cli::existing_file_on_rank_zero());
  cmd->add_option("-o,--out", args->output, "Output prefix: PREFIX_tstat1.nii.gz, PREFIX_vox_corrp_tstat1.nii.gz, ...")
      ->required();
  cmd->add_option("-d,--design", args->design, "Design matrix (FSL VEST design.mat: one row per subject)")
      ->check(rtf::cli::existing_file_on_rank_zero());
  cmd->add_option("-t,--tcon", args->contrasts, "t contrasts (FSL VEST design.con: one row per contrast)")
      ->check(rtf::cli::existing_file_on_rank_zero());
  cmd->add_option("-f,--fcon", args->f_contrasts,
                  "F tests (design.fts: a row per F test, 1 for each t contrast it joins): PREFIX_fstatK, voxel-wise "
                  "inference (-x); cluster inference (-c/-C) is for t contrasts")
      ->check(rtf::cli::existing_file_on_rank_zero());
  cmd->add_option("-e,--exchangeability", args->groups,
                  "Exchangeability blocks (design.grp): subjects are permuted only within their block")
      ->check(rtf::cli::existing_file_on_rank_zero());
  cmd->add_option("-m,--mask", args->mask, "Mask on the input's grid (default: voxels not zero in every subject)")
      ->check(rtf::cli::existing_file_on_rank_zero());
  cmd->add_flag("-1,--one-sample", args->one_sample, "One-sample group-mean test by sign flipping (no -d/-t)");
  cmd->add_option("-n,--permutations", args->permutations,
                  "Rearrangements, the unpermuted one included; all distinct ones when there are no more")
      ->capture_default_str()
      ->check(rtf::cli::at_least(1, "the number of permutations"));
  cmd->add_flag("-x,--voxelwise", args->voxelwise,
                "Voxel-wise uncorrected and FWE-corrected p maps (vox_p, vox_corrp)");
  cmd->add_flag("-T,--tfce", args->tfce,
                "TFCE (E 0.5, H 2, 26-connected, step = the largest observed t / 100) of t contrasts: "
                "PREFIX_tfce_tstatK, PREFIX_tfce_corrp_tstatK");
  cmd->add_flag("--T2", args->tfce_2d, "TFCE with randomise's 2D setting (E 1, for TBSS skeletons): as -T otherwise");
  cmd->add_option("--tfce_H", args->tfce_h, "TFCE height exponent H")
      ->check(rtf::cli::non_negative())
      ->capture_default_str();
  cmd->add_option("--tfce_E", args->tfce_e, "TFCE extent exponent E")
      ->check(rtf::cli::non_negative())
      ->capture_default_str();
  cmd->add_option("--tfce_C", args->tfce_c, "TFCE connectivity: 6, 18 or 26 neighbours")
      ->check(CLI::IsMember({6, 18, 26}))
      ->capture_default_str();
  cmd->add_option("-c,--cluster-extent", args->cluster_extent,
                  "Cluster-extent inference of t contrasts, clusters of t > this (26-connected): "
                  "PREFIX_clustere_corrp_tstatK")
      ->check(rtf::cli::positive("a cluster-forming threshold (t)"));
  cmd->add_option("-C,--cluster-mass", args->cluster_mass,
                  "Cluster-mass inference (sum of t - threshold over a cluster): PREFIX_clusterm_corrp_tstatK")
      ->check(rtf::cli::positive("a cluster-forming threshold (t)"));
  cmd->add_flag("-D,--demean", args->demean, "Demean the data and the design's columns first");
  cmd->add_option("--seed", args->seed,
                  "Seed of the random rearrangements (the same seed gives the same ones anywhere)")
      ->capture_default_str();
  cmd->callback([args, &globals] { rtf::run_randomise(*args, {globals.device, globals.devices}); });
}

RTF_REGISTER_COMMAND(75, setup);

}  // namespace
