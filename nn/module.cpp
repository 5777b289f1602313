#include "nn/module.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

std::vector<std::pair<std::string, Tensor>> Module::named_parameters() const {
  // Own parameters first, then each child's, depth-first, in registration order.
  std::vector<std::pair<std::string, Tensor>> out = params_;
  for (const auto& [child_name, child] : children_) {
    for (auto& [name, tensor] : child->named_parameters()) {
      out.emplace_back(child_name + "." + name, tensor);
    }
  }
  return out;
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (auto& [name, tensor] : named_parameters()) out.push_back(tensor);
  return out;
}

std::size_t Module::num_parameters() const {
  std::size_t count = 0;
  for (const auto& tensor : parameters()) count += tensor.size();
  return count;
}

void Module::zero_grad() {
  for (auto& tensor : parameters()) tensor.zero_grad();
}

Tensor Module::register_parameter(const std::string& name, Tensor t) {
  t.set_requires_grad(true);
  t.set_name(name);
  params_.emplace_back(name, t);
  return t;
}

void Module::register_module(const std::string& name, Module& child) {
  children_.emplace_back(name, &child);
  child.set_path(path_.empty() ? name : path_ + "." + name);
}

void Module::set_ops_path(OpsPath path) {
  ops_path_ = path;
  for (auto& [name, child] : children_) child->set_ops_path(path);
}

void Module::set_path(const std::string& path) {
  path_ = path;
  for (auto& [name, child] : children_) child->set_path(path + "." + name);
}

}  // namespace GLASS_PRECISION
}  // namespace glass
