// Steering with an SAE's latents (see steering.hpp).

#include "interp/steering.hpp"

#include <cmath>
#include <stdexcept>

#include "interp/sae_inspect.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

std::vector<double> steering_vector(const SparseAutoencoder& sae,
                                    const std::vector<Steer>& steers) {
  std::vector<double> v(sae.d_model(), 0.0);
  for (const Steer& s : steers) {
    if (!std::isfinite(s.scale))
      throw std::invalid_argument("the steering scale of latent " + std::to_string(s.latent) +
                                  " is not a finite number");
    const std::vector<double> u = latent_direction(sae, s.latent);  // unit W_dec row
    for (std::size_t i = 0; i < v.size(); ++i) v[i] += s.scale * u[i];
  }
  return v;
}

void add_steering_hook(Tracer& tracer, const std::string& point, std::vector<double> vector) {
  tracer.add_hook(point, [v = std::move(vector)](const std::string& name, Array& x) {
    const std::size_t d = v.size();  // x (B, n, d): every row gets + v
    if (x.size() % d != 0 || x.shape().back() != d)
      throw std::invalid_argument("steering at " + name + ": the stream's last axis is " +
                                  std::to_string(x.shape().back()) + ", the vector has " +
                                  std::to_string(d));
    Scalar* row = x.data();
    for (std::size_t r = 0; r < x.size() / d; ++r, row += d)
      for (std::size_t i = 0; i < d; ++i) row[i] += static_cast<Scalar>(v[i]);
  });
}

}  // namespace GLASS_PRECISION
}  // namespace glass
