// Permutation and sign-flip sets (permutation_set.hpp): counting, exhaustive enumeration, seeded random draws.
#include "core/permutation/permutation_set.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <stdexcept>

namespace rtf {

namespace {

// splitmix64 (Steele, Lea & Flood 2014): a fixed, portable stream for a seed.
class Stream {
 public:
  explicit Stream(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, m), m >= 1, without modulo bias (draws above the largest multiple of m are rejected).
  uint64_t below(uint64_t m) {
    const uint64_t limit = std::numeric_limits<uint64_t>::max() - std::numeric_limits<uint64_t>::max() % m;
    uint64_t x = next();
    while (x >= limit) x = next();
    return x % m;
  }

 private:
  uint64_t state_;
};

// Per subject, the id of its class of identical design rows (0.. in order of first appearance).
std::vector<int> row_classes(int n, const Eigen::MatrixXd* rows) {
  std::vector<int> label(static_cast<size_t>(n));
  if (rows == nullptr) {
    std::iota(label.begin(), label.end(), 0);
    return label;
  }
  std::vector<Eigen::Index> firsts;
  for (int i = 0; i < n; ++i) {
    int found = -1;
    for (size_t c = 0; c < firsts.size() && found < 0; ++c) {
      if (rows->row(i) == rows->row(firsts[c])) found = static_cast<int>(c);
    }
    if (found < 0) {
      found = static_cast<int>(firsts.size());
      firsts.push_back(i);
    }
    label[static_cast<size_t>(i)] = found;
  }
  return label;
}

// log of the number of distinct arrangements of a multiset of labels: n! / prod(k!).
double log_multiset_permutations(const std::vector<int>& labels) {
  std::map<int, int> counts;
  for (int l : labels) ++counts[l];
  double r = std::lgamma(static_cast<double>(labels.size()) + 1.0);
  for (const auto& [l, k] : counts) r -= std::lgamma(static_cast<double>(k) + 1.0);
  return r;
}

// One exchangeability block: its subjects (ascending), their labels, and per label the block's rows of that label
// (ascending), indexed by label.
struct Block {
  std::vector<int> members, home;
  std::vector<std::vector<int>> destinations;
};

Block make_block(const std::vector<int>& members, const std::vector<int>& home) {
  Block b{members, home, {}};
  b.destinations.resize(static_cast<size_t>(*std::max_element(home.begin(), home.end())) + 1);
  for (size_t i = 0; i < members.size(); ++i) b.destinations[static_cast<size_t>(home[i])].push_back(members[i]);
  return b;
}

// The permutation (destination row -> source subject) that sends the block's subjects to the destinations of their
// labels in `arrangement` (labels per source, in the same order): each class's destination rows (ascending) receive
// the sources with that label (ascending). `used`: scratch of at least destinations.size() entries.
void fill_order(const Block& b, const std::vector<int>& arrangement, std::vector<size_t>& used, int32_t* order) {
  for (int label : b.home) used[static_cast<size_t>(label)] = 0;
  for (size_t s = 0; s < b.members.size(); ++s) {
    const auto label = static_cast<size_t>(arrangement[s]);
    order[b.destinations[label][used[label]++]] = b.members[s];
  }
}

}  // namespace

PermutationSet make_permutation_set(PermutationKind kind, int n, int requested, uint64_t seed,
                                    const std::vector<int>& blocks, const Eigen::MatrixXd* rows) {
  if (requested < 1) throw std::invalid_argument(fmt::format("permutations: {} requested (at least 1)", requested));
  if (n < 1) throw std::invalid_argument("permutations: no subjects");
  if (!blocks.empty() && static_cast<int>(blocks.size()) != n) {
    throw std::invalid_argument(fmt::format("exchangeability blocks: {} entries for {} subjects", blocks.size(), n));
  }
  PermutationSet set;
  set.kind = kind;
  set.n = n;
  Stream stream(seed);
  if (kind == PermutationKind::kSignFlip) {
    if (!blocks.empty()) {
      throw std::invalid_argument("exchangeability blocks (-e) with sign flipping (-1) are not supported");
    }
    set.distinct = std::ldexp(1.0, n);
    set.exhaustive = set.distinct <= static_cast<double>(requested);
    set.count = set.exhaustive ? static_cast<int>(set.distinct) : requested;
    set.signs.assign(static_cast<size_t>(set.count) * static_cast<size_t>(n), 1);
    for (int k = 1; k < set.count; ++k) {
      int8_t* s = &set.signs[static_cast<size_t>(k) * static_cast<size_t>(n)];
      if (set.exhaustive) {
        for (int i = 0; i < n; ++i) s[i] = ((static_cast<uint64_t>(k) >> i) & 1U) != 0 ? -1 : 1;
      } else {
        uint64_t bits = 0;
        for (int i = 0; i < n; ++i) {
          if (i % 64 == 0) bits = stream.next();
          s[i] = (bits >> (i % 64)) & 1U ? -1 : 1;
        }
      }
    }
    return set;
  }
  // Permutations within blocks; the classes of identical rows make swaps within a class changes of nothing.
  const std::vector<int> labels = row_classes(n, rows);
  std::map<int, std::vector<int>> members;  // block -> subjects, ascending
  for (int i = 0; i < n; ++i) members[blocks.empty() ? 0 : blocks[static_cast<size_t>(i)]].push_back(i);
  double log_distinct = 0.0;
  std::vector<std::vector<int>> homes;  // per block, the labels of its members
  for (const auto& [b, m] : members) {
    std::vector<int> home;
    for (int i : m) home.push_back(labels[static_cast<size_t>(i)]);
    log_distinct += log_multiset_permutations(home);
    homes.push_back(home);
  }
  set.distinct = std::exp(log_distinct);
  set.exhaustive = log_distinct <= std::log(static_cast<double>(requested)) + 1e-9;
  std::vector<Block> block_list;
  {
    size_t i = 0;
    for (const auto& [b, m] : members) block_list.push_back(make_block(m, homes[i++]));
  }
  std::vector<size_t> used(static_cast<size_t>(n) + 1, 0);
  if (set.exhaustive) {
    // Every block's distinct arrangements, then their Cartesian product (the first of each is the identity).
    std::vector<std::vector<std::vector<int>>> per_block;
    for (const auto& home : homes) {
      std::vector<int> arrangement = home;
      std::sort(arrangement.begin(), arrangement.end());
      std::vector<std::vector<int>> all{home};
      do {
        if (arrangement != home) all.push_back(arrangement);
      } while (std::next_permutation(arrangement.begin(), arrangement.end()));
      per_block.push_back(std::move(all));
    }
    set.count = static_cast<int>(std::llround(set.distinct));
    set.order.resize(static_cast<size_t>(set.count) * static_cast<size_t>(n));
    std::vector<size_t> digit(per_block.size(), 0);
    for (int k = 0; k < set.count; ++k) {
      int32_t* order = &set.order[static_cast<size_t>(k) * static_cast<size_t>(n)];
      for (size_t b = 0; b < per_block.size(); ++b) fill_order(block_list[b], per_block[b][digit[b]], used, order);
      for (size_t b = 0; b < digit.size(); ++b) {  // next mixed-radix number
        if (++digit[b] < per_block[b].size()) break;
        digit[b] = 0;
      }
    }
    return set;
  }
  set.count = requested;
  set.order.resize(static_cast<size_t>(set.count) * static_cast<size_t>(n));
  for (int k = 0; k < set.count; ++k) {
    int32_t* order = &set.order[static_cast<size_t>(k) * static_cast<size_t>(n)];
    for (size_t b = 0; b < block_list.size(); ++b) {
      std::vector<int> arrangement = homes[b];
      if (k > 0) {  // Fisher-Yates over the block's labels
        for (size_t i = arrangement.size(); i > 1; --i) {
          std::swap(arrangement[i - 1], arrangement[stream.below(i)]);
        }
      }
      fill_order(block_list[b], arrangement, used, order);
    }
  }
  return set;
}

}  // namespace rtf
