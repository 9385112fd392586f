// `rtfmri connectome BOLD (--threshold R | --density D) --out PREFIX`: the options; the work is run_connectome
// (core/connectome/connectome_run.hpp). docs/algorithms/connectome.md, docs/scale.md.
#include <memory>

#include "cli/command_support.hpp"
#include "core/connectome/connectome_run.hpp"

namespace {

void setup(CLI::App& app, rtf::cli::GlobalOptions& globals) {
  auto args = std::make_shared<rtf::ConnectomeOptions>();
  auto* cmd = app.add_subcommand(
      "connectome",
      "Voxel-wise connectome of a 4D NIfTI: thresholded correlations of every voxel pair, scipy.sparse "
      "CSR output (docs/algorithms/connectome.md)");
  cmd->footer(
      "Several devices and hosts (docs/scale.md): `rtfmri --devices all connectome ...` (or gpu, cpu, "
      "PLATFORM:DEVICE lists, cpu/N for N sub-devices) spreads the pairs over this machine's devices; `mpirun -np K "
      "rtfmri connectome ...` (or srun) over K processes, each on its own devices (--devices). The upper triangle is "
      "cut into chunks of 128-node tile rows of equal work; every rank reads the inputs (rank 0's copies where it does "
      "not see its files) and prepares the node series, checked against rank 0's (which is sent where one differs); "
      "rank 0 merges the edges and writes the outputs, which equal one device's bit for bit. Finished chunks are kept "
      "in PREFIX_chunks/ until the outputs are "
      "written (or in --chunk-dir): a stopped run started again with the same inputs and options reuses them.");
  cmd->add_option("BOLD", args->bold, "Preprocessed 4D NIfTI (e.g. our smooth/detrend/mc outputs)")
      ->required()
      ->check(rtf::cli::existing_file_on_rank_zero());
  cmd->add_option("--mask", args->mask,
                  "Nodes: the non-zero voxels of this mask (default: the brain mask of the mean "
                  "volume)")
      ->check(rtf::cli::existing_file_on_rank_zero());
  cmd->add_option("--method", args->method,
                  "pearson, spearman (average ranks for ties) or kendall (tau-b: ties in either series, as "
                  "scipy.stats.kendalltau)")
      ->check(CLI::IsMember({"pearson", "spearman", "kendall"}))
      ->capture_default_str();
  cmd->add_option("--threshold", args->threshold, "Keep pairs with r >= R (with --absolute: |r| >= R)");
  cmd->add_option("--density", args->density,
                  "Keep the fraction D of the pairs with the largest r (|r| with --absolute), exactly: a sampled cut, "
                  "one pass, the k largest selected");
  cmd->add_option("--seed", args->seed, "Seed of the node sample that estimates the density's cut")
      ->capture_default_str();
  cmd->add_flag("--absolute", args->absolute,
                "Keep negative correlations too (|r| >= R); without it negative correlations are dropped");
  cmd->add_option("--out", args->out,
                  "Output prefix: PREFIX_edges.npz (scipy.sparse.load_npz), PREFIX_nodes.npz (voxels: node -> voxel "
                  "index, x fastest; dims), PREFIX_degree.nii.gz, PREFIX_strength.nii.gz, PREFIX_connectome.json")
      ->required();
  cmd->add_option("--chunk-dir", args->chunk_dir,
                  "Where finished chunks are kept until the outputs are written, for a restart (default "
                  "PREFIX_chunks; a dense graph's chunks take as much space as its edges, e.g. ~90 GB at N 10^6 and "
                  "density 1%: put them on fast scratch, or `none` to keep none)");
  cmd->callback([args, &globals] { rtf::run_connectome(*args, {globals.device, globals.devices}); });
}

RTF_REGISTER_COMMAND(76, setup);

}  // namespace
