#pragma once
// Module: something with named parameters (like torch.nn.Module).

#include <string>
#include <utility>
#include <vector>

#include "autograd/tensor.hpp"
#include "nn/config.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

/// Base class of every layer. Holds its own parameters and pointers to its child modules, so
/// named_parameters() lists everything with dotted names ("layers.0.attention.wq.weight").
/// Modules are not copyable (children are referenced by address).
///
/// Parameters are Tensor handles shared between the member (e.g. `Linear::weight`) and this
/// list. To load weights, write into the existing storage (`p.value() = loaded;` with the same
/// shape, or `std::copy` into `p.value()`), never assign a new Tensor to the member: that would
/// detach the member from named_parameters() (and from the optimizer).
class Module {
 public:
  Module() = default;
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  /// Every parameter of this module and its children, depth-first in registration order,
  /// with the full dotted name.
  std::vector<std::pair<std::string, Tensor>> named_parameters() const;
  std::vector<Tensor> parameters() const;
  /// Total number of scalars in all parameters.
  std::size_t num_parameters() const;
  /// Sets every parameter's gradient to zero.
  void zero_grad();
  /// Where this module sits in the model, e.g. "layers.2.attention" ("" for the root). Set when
  /// a parent registers it (and again for the whole subtree when the parent itself is
  /// registered); parameter names and tracer snapshots are built from it.
  const std::string& path() const { return path_; }
  /// Which code computes this module (OpsPath, nn/config.hpp); reference until set.
  OpsPath ops_path() const { return ops_path_; }
  /// Chooses the path for this module and every child, recursively; the weights stay.
  virtual void set_ops_path(OpsPath path);

 protected:
  /// Registers a parameter (sets requires_grad and its name) and returns it.
  Tensor register_parameter(const std::string& name, Tensor t);
  /// Registers a child module stored elsewhere (usually a member of the derived class).
  void register_module(const std::string& name, Module& child);

 private:
  std::vector<std::pair<std::string, Tensor>> params_;
  std::vector<std::pair<std::string, Module*>> children_;
  std::string path_;
  OpsPath ops_path_ = OpsPath::reference;
  void set_path(const std::string& path);
};

}  // namespace GLASS_PRECISION
}  // namespace glass
