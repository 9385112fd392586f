// `rtfmri decode BOLD... --events EVENTS... --out PREFIX`: the options of the cross-validated linear decoder; the work
// is run_decode_command (core/decoding/decode_command.hpp). docs/algorithms/decoding.md.
#include <memory>

#include "cli/command_support.hpp"
#include "core/decoding/decode_command.hpp"

namespace {

void setup(CLI::App& app, rtf::cli::GlobalOptions& globals) {
  auto o = std::make_shared<rtf::DecodeOptions>();
  auto poly = std::make_shared<int>(1);
  auto highpass = std::make_shared<double>(0.0);
  auto no_zscore = std::make_shared<bool>(false);
  auto* cmd = app.add_subcommand(
      "decode",
      "Cross-validated linear decoding (MVPA) of labelled volumes: L2 logistic regression, linear SVM or ridge "
      "classifier trained on the device, the objectives of scikit-learn's LogisticRegression, LinearSVC and "
      "RidgeClassifier (docs/algorithms/decoding.md)");
  cmd->add_option("BOLD", o->bold, "4D NIfTI runs on one grid (each file one run)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--events", o->events,
                  "BIDS events.tsv per run, in the runs' order (onset, duration, trial_type: the labels)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--out", o->out,
                  "Output prefix: PREFIX_predictions.tsv, _folds.tsv, _confusion.tsv, _weights.nii.gz, _model.json "
                  "(the live decoder's model file), _decode.json, with --permutations _null_accuracy.txt")
      ->required();
  cmd->add_option("--mask", o->mask,
                  "Feature voxels: the mask's non-zero voxels (default: a brain mask of run 1's mean)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--mask-labels", o->mask_labels, "Only the --mask voxels of these values (an atlas's regions)")
      ->delimiter(',');
  cmd->add_option("--model", o->model, "logistic (binary, or multinomial), svm (one-vs-rest) or ridge (classifier)")
      ->check(CLI::IsMember({"logistic", "svm", "ridge"}))
      ->capture_default_str();
  cmd->add_option("--loss", o->loss, "svm: LinearSVC's loss")
      ->check(CLI::IsMember({"squared_hinge", "hinge"}))
      ->capture_default_str();
  cmd->add_option("--C", o->solver.c, "logistic and svm: the inverse regularisation strength (scikit-learn's C)")
      ->check(rtf::cli::positive())
      ->capture_default_str();
  cmd->add_option("--alpha", o->solver.alpha, "ridge: the regularisation strength (scikit-learn's alpha)")
      ->check(rtf::cli::positive())
      ->capture_default_str();
  cmd->add_option("--intercept-scaling", o->solver.intercept_scaling,
                  "svm: the constant feature whose (penalised) weight is the intercept (LinearSVC's intercept_scaling)")
      ->check(rtf::cli::positive())
      ->capture_default_str();
  cmd->add_option("--tol", o->solver.tolerance, "Solver tolerance (docs/algorithms/decoding.md states each rule)")
      ->check(rtf::cli::positive())
      ->capture_default_str();
  cmd->add_option("--max-iterations", o->solver.max_iterations, "Newton iterations (logistic) or passes (svm)")
      ->check(CLI::Range(1, 100000000))
      ->capture_default_str();
  cmd->add_option("--cv", o->cv,
                  "Folds: leave-one-run-out, k-fold (contiguous, as KFold without shuffling) or blocks "
                  "(leave-one-block-out: each labelling event one fold)")
      ->check(CLI::IsMember({"leave-one-run-out", "k-fold", "blocks"}))
      ->capture_default_str();
  cmd->add_option("--folds", o->folds, "k-fold's k")->check(CLI::Range(2, 1000000))->capture_default_str();
  cmd->add_option("--lag", o->labels.lag_s,
                  "Haemodynamic lag in seconds: volume t (at t TR) takes the label of the events covering t TR - lag")
      ->check(rtf::cli::non_negative())
      ->capture_default_str();
  cmd->add_option("--rest", o->labels.rest,
                  "Label the volumes no event covers with this condition (default: left out)");
  cmd->add_option("--conditions", o->labels.conditions, "Only these conditions are samples (default: every one)")
      ->delimiter(',');
  cmd->add_option("--poly", *poly, "Per-run Legendre detrending of this order (1: linear; -1: none)")
      ->check(CLI::Range(-1, 10))
      ->capture_default_str();
  cmd->add_option("--highpass", *highpass, "Per-run SPM DCT high-pass cutoff in seconds (0: none)")
      ->check(rtf::cli::non_negative())
      ->capture_default_str();
  cmd->add_flag("--no-zscore", *no_zscore, "Do not z-score the features per run (only detrend)");
  cmd->add_option("--tr", o->tr_s, "TR in seconds (default: the headers')")->check(rtf::cli::positive());
  cmd->add_option("--permutations", o->permutations,
                  "Permutation test of the accuracy: N rearrangements of the labels within runs, the observed one "
                  "included (FSL's count; p = #{null >= observed} / N)")
      ->check(CLI::Range(0, 10000000));
  cmd->add_option("--seed", o->seed, "Seed of the permutations")->capture_default_str();
  cmd->callback([o, poly, highpass, no_zscore, &globals] {
    o->features.poly_order = *poly >= 0 ? std::optional<int>(*poly) : std::nullopt;
    o->features.highpass_cutoff_s = *highpass > 0 ? std::optional<double>(*highpass) : std::nullopt;
    o->features.zscore = !*no_zscore;
    rtf::run_decode_command(*o, [&globals] { return rtf::cli::open_device(globals); });
  });
}

RTF_REGISTER_COMMAND(67, setup);

}  // namespace
