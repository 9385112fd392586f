// The decode command's files: TSVs with a header row (numbers in the shortest form that reads back exactly, n/a for
// none), the weights as float32 NIfTI, the model and summary as JSON.
#include "core/decoding/decode_outputs.hpp"

#include <fmt/format.h>

#include <cmath>
#include <string>

#include "core/io/atomic_file.hpp"
#include "core/io/nifti_io.hpp"

namespace rtf {

namespace {

std::string number(double v) {
  return std::isfinite(v) ? fmt::format("{}", v) : std::string("n/a");
}

// Column names of the decision values: "decision" for one function, else "decision_CLASS".
std::vector<std::string> decision_columns(const DecodeResult& r) {
  if (r.final_model.decision_functions() == 1) return {"decision"};
  std::vector<std::string> names;
  for (const std::string& c : r.samples.classes) names.push_back("decision_" + c);
  return names;
}

std::string predictions_tsv(const DecodeResult& r) {
  const bool probabilities = has_probabilities(r.model);
  std::string text = "run\tvolume\tblock\tlabel\tfold\tpredicted";
  for (const std::string& c : decision_columns(r)) text += "\t" + c;
  if (probabilities) {
    for (const std::string& c : r.samples.classes) text += "\tprobability_" + c;
  }
  text += "\n";
  const Eigen::MatrixXd probability =
      probabilities && r.cv.decisions.size() > 0 ? class_probabilities(r.cv.decisions) : Eigen::MatrixXd();
  const auto& s = r.samples;
  for (size_t i = 0; i < s.size(); ++i) {
    const int fold = r.cv.fold_of[i], predicted = r.cv.predicted[i];
    text += fmt::format("{}\t{}\t{}\t{}\t{}\t{}", s.run[i] + 1, s.volume[i], s.block[i] + 1,
                        s.classes[static_cast<size_t>(s.label[i])], fold >= 0 ? std::to_string(fold + 1) : "n/a",
                        predicted >= 0 ? s.classes[static_cast<size_t>(predicted)] : "n/a");
    const auto row = static_cast<Eigen::Index>(i);
    for (Eigen::Index m = 0; m < r.cv.decisions.cols(); ++m) text += "\t" + number(r.cv.decisions(row, m));
    for (Eigen::Index k = 0; k < probability.cols(); ++k) text += "\t" + number(probability(row, k));
    text += "\n";
  }
  return text;
}

std::string folds_tsv(const DecodeResult& r) {
  std::string text =
      "fold\tleft_out\ttrain_samples\ttest_samples\taccuracy\tbalanced_accuracy\titerations\tconverged\n";
  for (size_t f = 0; f < r.cv.folds.size(); ++f) {
    const FoldScore& s = r.cv.folds[f];
    int64_t tested = 0;
    for (const int fold : r.cv.fold_of) tested += fold == static_cast<int>(f);
    text += fmt::format("{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\n", f + 1, r.fold_names[f], r.fold_train_sizes[f], tested,
                        number(s.accuracy), number(s.balanced_accuracy), s.iterations, s.converged ? "yes" : "no");
  }
  return text;
}

std::string confusion_tsv(const DecodeResult& r) {
  std::string text = "true\\predicted";
  for (const std::string& c : r.samples.classes) text += "\t" + c;
  text += "\n";
  for (Eigen::Index t = 0; t < r.cv.confusion.rows(); ++t) {
    text += r.samples.classes[static_cast<size_t>(t)];
    for (Eigen::Index p = 0; p < r.cv.confusion.cols(); ++p) text += fmt::format("\t{}", r.cv.confusion(t, p));
    text += "\n";
  }
  return text;
}

Image weight_maps(const DecodeResult& r) {
  ImageHeader h = r.grid;
  const Eigen::MatrixXd& weights = r.final_model.coef;
  const std::vector<int>& voxels = r.final_model.voxels;
  const auto m = weights.cols();
  h.num_volumes = m;
  Image maps(h, 0.0f);
  for (Eigen::Index k = 0; k < m; ++k) {
    const std::span<float> volume = maps.volume(k);
    for (size_t f = 0; f < voxels.size(); ++f) {
      volume[static_cast<size_t>(voxels[f])] = static_cast<float>(weights(static_cast<Eigen::Index>(f), k));
    }
  }
  return maps;
}

}  // namespace

nlohmann::json decode_summary(const DecodeResult& r) {
  nlohmann::json j = r.settings;
  j["classes"] = r.samples.classes;
  j["class_counts"] = r.samples.class_counts();
  j["samples"] = r.samples.size();
  j["ambiguous_volumes"] = r.samples.ambiguous;
  j["unlabelled_volumes"] = r.samples.unlabelled;
  j["features"] = r.final_model.voxels.size();
  j["folds"] = r.cv.folds.size();
  j["accuracy"] = r.cv.mean_accuracy;
  j["balanced_accuracy"] = r.cv.mean_balanced_accuracy;
  nlohmann::json per_fold = nlohmann::json::array();
  for (const FoldScore& f : r.cv.folds)
    per_fold.push_back({{"accuracy", f.accuracy}, {"balanced_accuracy", f.balanced_accuracy}});
  j["fold_scores"] = per_fold;
  j["final_model"] = {{"iterations", r.final_iterations}, {"converged", r.final_converged}};
  if (r.permutations != nullptr) {
    j["permutation_test"] = {{"permutations", r.permutations->null.size()},
                             {"p_value", r.permutations->p_value},
                             {"exhaustive", r.permutations->exhaustive}};
  }
  j["timing_s"] = r.timing;
  return j;
}

void write_decode_files(const DecodeResult& r, const std::string& prefix, io::OutputSet& outputs) {
  write_text_atomically(outputs.add(prefix + "_predictions.tsv"), predictions_tsv(r));
  write_text_atomically(outputs.add(prefix + "_folds.tsv"), folds_tsv(r));
  write_text_atomically(outputs.add(prefix + "_confusion.tsv"), confusion_tsv(r));
  write_nifti(outputs.add(prefix + "_weights.nii.gz"), weight_maps(r));
  write_text_atomically(outputs.add(prefix + "_model.json"), decoder_model_to_json(r.final_model).dump() + "\n");
  write_text_atomically(outputs.add(prefix + "_decode.json"), decode_summary(r).dump(2) + "\n");
  if (r.permutations != nullptr) {
    std::string text;
    for (const double a : r.permutations->null) text += number(a) + "\n";
    write_text_atomically(outputs.add(prefix + "_null_accuracy.txt"), text);
  }
}

}  // namespace rtf
