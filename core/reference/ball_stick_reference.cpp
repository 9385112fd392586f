// The reference ball-and-stick sampler: each compartment's attenuations kept per measurement (as the device keeps
// them), a proposal recomputing only the compartments it changes, the energy summed in measurement order.
#include "core/reference/ball_stick_reference.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/diffusion/ball_stick_signal.hpp"
#include "core/random/draws.hpp"

namespace rtf::reference {

double log_bessel_i0(double x) {
  const double ax = std::fabs(x);
  if (ax < 3.75) {
    const double t = (x / 3.75) * (x / 3.75);
    return std::log(
        1.0 + t * (3.5156229 + t * (3.0899424 + t * (1.2067492 + t * (0.2659732 + t * (0.0360768 + t * 0.0045813))))));
  }
  const double t = 3.75 / ax;
  const double poly =
      0.39894228 +
      t * (0.01328592 +
           t * (0.00225319 +
                t * (-0.00157565 +
                     t * (0.00916281 + t * (-0.02057706 + t * (0.02635537 + t * (-0.01647633 + t * 0.00392377)))))));
  return ax + std::log(poly / std::sqrt(ax));
}

double ball_stick_prior_energy(const BallStickParams& p, const BallStickOptions& o, uint32_t ard_mask) {
  double e = 0.0;
  if (o.model == 2) e += std::log(p.d_std);
  for (int j = 0; j < o.fibres; ++j) {
    const auto k = static_cast<size_t>(j);
    if (p.th[k] != 0.0) e += -std::log(std::fabs(std::sin(p.th[k]) / 2.0));
    if ((ard_mask >> j) & 1u) e += o.ard_weight * std::log(p.f[k]);
  }
  return e;
}

namespace {

// The state of one chain: parameters, the compartments' attenuations [compartment][measurement] (0: the ball,
// 1 + j: stick j) and the energy.
struct ChainState {
  const DiffusionScheme& scheme;
  const std::vector<double>& y;
  const BallStickOptions& o;
  uint32_t ard;
  int n;
  BallStickParams p;
  std::vector<std::vector<double>> comp;
  double energy = 0;

  std::vector<double> attenuations(const BallStickParams& q, int c) const {
    std::vector<double> a(static_cast<size_t>(n));
    std::array<double, 3> v{};
    if (c > 0) v = fibre_direction(q.th[static_cast<size_t>(c - 1)], q.ph[static_cast<size_t>(c - 1)]);
    for (int i = 0; i < n; ++i) {
      const auto k = static_cast<size_t>(i);
      double x = 1.0;
      if (c > 0) {
        const std::array<double, 3>& g = scheme.bvecs[k];
        const double dot = g[0] * v[0] + g[1] * v[1] + g[2] * v[2];
        x = dot * dot;
      }
      a[k] = compartment_attenuation(o.model, scheme.bvals[k], x, q.d, q.d_std);
    }
    return a;
  }

  double likelihood_energy(const BallStickParams& q, const std::vector<std::vector<double>>& c) const {
    double fsum = 0.0;
    for (int j = 0; j < o.fibres; ++j) fsum += q.f[static_cast<size_t>(j)];
    double total = 0.0;
    for (int i = 0; i < n; ++i) {
      const auto k = static_cast<size_t>(i);
      double acc = (1.0 - fsum) * c[0][k];
      for (int j = 0; j < o.fibres; ++j) acc += q.f[static_cast<size_t>(j)] * c[static_cast<size_t>(j + 1)][k];
      const double pred = q.s0 * acc;
      if (o.rician) {
        total += -0.5 * q.tau * (y[k] * y[k] + pred * pred) + log_bessel_i0(q.tau * pred * y[k]);
      } else {
        const double r = y[k] - pred;
        total += r * r;
      }
    }
    if (o.rician) return -static_cast<double>(n) * std::log(q.tau) - total;
    return (static_cast<double>(n) / 2.0) * std::log(total / 2.0);
  }

  double energy_of(const BallStickParams& q, const std::vector<std::vector<double>>& c) const {
    return ball_stick_prior_energy(q, o, ard) + likelihood_energy(q, c);
  }
};

}  // namespace

BallStickChain ball_stick_chain(const DiffusionScheme& scheme, const std::vector<double>& data,
                                const BallStickParams& init, const BallStickOptions& options, uint32_t voxel,
                                bool keep_states, int iterations) {
  const int n = scheme.measurements();
  if (n < 1 || static_cast<int>(data.size()) != n || options.fibres < 1 || options.fibres > kBallStickMaxFibres ||
      options.sample_every < 1) {
    throw std::invalid_argument("ball_stick_chain: data, scheme and options disagree");
  }
  if (iterations < 0) iterations = options.burn_in + options.jumps;
  ChainState s{scheme, data, options, ard_fibres(options), n, init, {}, 0.0};
  for (int c = 0; c <= options.fibres; ++c) s.comp.push_back(s.attenuations(init, c));
  s.energy = s.energy_of(s.p, s.comp);
  BallStickChain out;
  out.widths = initial_proposal_widths(init);
  BallStickVector& acc = out.accepted;
  BallStickVector& rej = out.rejected;
  const random::PhiloxKey key = random::seed_key(options.seed);
  const int samples = options.samples();

  for (int it = 0; it < iterations; ++it) {
    const auto step = static_cast<uint32_t>(it);
    // One Metropolis-Hastings update of quantity `par` from slot `slot`; `recompute`: -1 none, 0 every compartment,
    // 1 + j stick j.
    const auto update = [&](uint32_t slot, int par, int recompute) {
      const auto k = static_cast<size_t>(par);
      const random::PhiloxCounter w = random::philox4x32_10(random::stream_counter(voxel, 0, step, slot << 16), key);
      const double z = random::normal_from_words(w[0], w[1])[0];
      const double u = static_cast<double>(random::uniform_float(w[2]));
      BallStickVector v = pack_params(s.p);
      v[k] += z * out.widths[k];
      const BallStickParams q = unpack_params(v);
      bool valid = true;
      if (par == kParTau) valid = q.tau > 0.0;
      if (par == kParD) valid = q.d >= 0.0 && q.d <= kMaxDiffusivity;
      if (par == kParDStd) valid = q.d_std > 0.0 && q.d_std <= kMaxDiffusivityStd;
      if (par == kParS0) valid = q.s0 >= 0.0;
      if (par >= 4 && (par - 4) % 3 == 2) {
        double fsum = 0.0;
        for (int j = 0; j < options.fibres; ++j) fsum += q.f[static_cast<size_t>(j)];
        valid = q.f[static_cast<size_t>((par - 4) / 3)] > 0.0 && q.f[static_cast<size_t>((par - 4) / 3)] < 1.0 &&
                fsum <= 1.0;
      }
      if (!valid) {
        rej[k] += 1;
        return;
      }
      std::vector<std::vector<double>> c = s.comp;
      if (recompute == 0) {
        for (int m = 0; m <= options.fibres; ++m) c[static_cast<size_t>(m)] = s.attenuations(q, m);
      } else if (recompute > 0) {
        c[static_cast<size_t>(recompute)] = s.attenuations(q, recompute);
      }
      const double e = s.energy_of(q, c);
      if (std::log(u) < s.energy - e) {
        s.p = q;
        s.comp = std::move(c);
        s.energy = e;
        acc[k] += 1;
      } else {
        rej[k] += 1;
      }
    };
    if (options.rician) update(kSlotTau, kParTau, -1);
    update(kSlotD, kParD, 0);
    if (options.model == 2) update(kSlotDStd, kParDStd, 0);
    update(kSlotS0, kParS0, -1);
    for (int j = 0; j < options.fibres; ++j) {
      update(fibre_slot(j, 0), fibre_par(j, 0), j + 1);
      update(fibre_slot(j, 1), fibre_par(j, 1), j + 1);
      update(fibre_slot(j, 2), fibre_par(j, 2), -1);
    }
    if (it < options.burn_in && (it + 1) % options.update_proposal_every == 0) {
      for (size_t k = 0; k < out.widths.size(); ++k) {
        out.widths[k] = std::min(out.widths[k] * std::sqrt((acc[k] + 1.0) / (rej[k] + 1.0)), 1e10);
        acc[k] = rej[k] = 0;
      }
    }
    if (it == options.burn_in - 1) acc = rej = BallStickVector{};
    if (it >= options.burn_in && (it - options.burn_in + 1) % options.sample_every == 0 &&
        static_cast<int>(out.samples.size()) < samples) {
      out.samples.push_back(pack_params(s.p));
    }
    if (keep_states) out.states.push_back(pack_params(s.p));
  }
  return out;
}

}  // namespace rtf::reference
