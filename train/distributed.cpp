// Data-parallel training over MPI. See train/distributed.hpp.

#include "train/distributed.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <type_traits>

#include <fmt/format.h>
#include <xtensor/xview.hpp>

#if GLASS_MPI
#include <mpi.h>  // the C API only (CMake's MPI::MPI_CXX defines OMPI_SKIP_MPICXX)
#endif

namespace glass {

static_assert(std::is_same_v<Scalar, float>, "the gradients travel as MPI_FLOAT");

namespace {

/// Whether a launcher (mpirun, srun, mpiexec) started this process as one rank of a job.
bool started_by_launcher() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (const char* v = std::getenv(name); v != nullptr && *v != '\0') return true;
  return false;
}

#if GLASS_MPI
void finalize_mpi() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}
#endif

}  // namespace

bool Communicator::built_with_mpi() { return GLASS_MPI != 0; }

Communicator Communicator::world() {
#if GLASS_MPI
  if (!started_by_launcher()) return Communicator();
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    // Only the main thread calls MPI; the training threads (train/data_parallel.hpp) and the
    // --serve thread never do: MPI_THREAD_FUNNELED.
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    std::atexit(finalize_mpi);
    if (provided < MPI_THREAD_FUNNELED)
      throw std::runtime_error(
          "this MPI library cannot run alongside threads (MPI_THREAD_FUNNELED "
          "not provided); rebuild glass against OpenMPI or MPICH");
  }
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return Communicator(rank, size);
#else
  if (started_by_launcher())
    throw std::runtime_error(
        "this glass was built without MPI (GLASS_MPI off), so under mpirun every process would "
        "train the same run alone. Install libopenmpi-dev and rebuild, or run glass without mpirun.");
  return Communicator();
#endif
}

void Communicator::all_reduce_sum(std::vector<float>& buffer) const {
  if (size_ == 1) return;
#if GLASS_MPI
  MPI_Allreduce(MPI_IN_PLACE, buffer.data(), static_cast<int>(buffer.size()), MPI_FLOAT, MPI_SUM,
                MPI_COMM_WORLD);
#endif
}

void Communicator::all_reduce_sum(std::vector<double>& buffer) const {
  if (size_ == 1) return;
#if GLASS_MPI
  MPI_Allreduce(MPI_IN_PLACE, buffer.data(), static_cast<int>(buffer.size()), MPI_DOUBLE, MPI_SUM,
                MPI_COMM_WORLD);
#endif
}

bool Communicator::any(bool flag) const {
  if (size_ == 1) return flag;
  int value = flag ? 1 : 0;
#if GLASS_MPI
  MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
#endif
  return value != 0;
}

int Communicator::max(int value) const {
  if (size_ == 1) return value;
#if GLASS_MPI
  MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
#endif
  return value;
}

bool Communicator::same_on_all_ranks(std::uint64_t value) const {
  if (size_ == 1) return true;
  // Equal everywhere <=> the bitwise AND over the ranks equals the bitwise OR.
  unsigned long long all_and = value, all_or = value;
#if GLASS_MPI
  MPI_Allreduce(MPI_IN_PLACE, &all_and, 1, MPI_UNSIGNED_LONG_LONG, MPI_BAND, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &all_or, 1, MPI_UNSIGNED_LONG_LONG, MPI_BOR, MPI_COMM_WORLD);
#endif
  return all_and == all_or;
}

void Communicator::abort(int code) const {
#if GLASS_MPI
  if (size_ > 1) MPI_Abort(MPI_COMM_WORLD, code);
#endif
  std::exit(code);
}

Ids shard_rows(const Ids& batch, const Communicator& comm) {
  const std::size_t B = batch.shape(0), N = static_cast<std::size_t>(comm.size());
  if (B % N != 0)
    throw std::invalid_argument(
        fmt::format("a batch of {} windows cannot be split evenly among {} processes", B, N));
  if (N == 1) return batch;
  const std::size_t begin = static_cast<std::size_t>(comm.rank()) * (B / N);
  return xt::view(batch, xt::range(begin, begin + B / N), xt::all());
}

double average_gradients(const std::vector<Tensor>& params, double loss, const Communicator& comm) {
  if (comm.size() == 1) return loss;
  // One flat buffer: [grad of params[0] | grad of params[1] | ... | loss].
  std::size_t total = 1;
  for (const Tensor& p : params) total += p.size();
  std::vector<float> flat;
  flat.reserve(total);
  for (const Tensor& p : params) {
    if (p.has_grad())
      flat.insert(flat.end(), p.grad().data(), p.grad().data() + p.size());
    else
      flat.insert(flat.end(), p.size(), 0.0f);
  }
  flat.push_back(static_cast<float>(loss));

  comm.all_reduce_sum(flat);  // the sum of the N shards' gradients, on every rank

  const float inv_n = 1.0f / static_cast<float>(comm.size());  // sum / N = mean
  const float* g = flat.data();
  for (const Tensor& p : params) {
    Tensor param = p;  // a handle sharing the storage
    float* grad = param.grad().data();
    for (std::size_t i = 0; i < p.size(); ++i) grad[i] = g[i] * inv_n;
    g += p.size();
  }
  return static_cast<double>(*g * inv_n);
}

double combine_gradients(const std::vector<Tensor>& params, double loss, double share,
                         const Communicator& comm) {
  if (comm.size() == 1) return loss;
  // One flat buffer: [share * grad of params[0] | ... | share * loss], summed over the ranks.
  const float w = static_cast<float>(share);
  std::size_t total = 1;
  for (const Tensor& p : params) total += p.size();
  std::vector<float> flat;
  flat.reserve(total);
  for (const Tensor& p : params) {
    if (!p.has_grad()) {
      flat.insert(flat.end(), p.size(), 0.0f);
      continue;
    }
    const float* g = p.grad().data();
    for (std::size_t i = 0; i < p.size(); ++i) flat.push_back(g[i] * w);
  }
  flat.push_back(static_cast<float>(loss * share));

  comm.all_reduce_sum(flat);  // sum over the ranks of share_r * (gradient_r, loss_r)

  const float* g = flat.data();
  for (const Tensor& p : params) {
    Tensor param = p;  // a handle sharing the storage
    std::copy(g, g + p.size(), param.grad().data());
    g += p.size();
  }
  return static_cast<double>(*g);
}

std::uint64_t weights_checksum(const std::vector<Tensor>& params) {
  std::uint64_t h = 14695981039346656037ull;  // FNV-1a 64-bit offset basis
  for (const Tensor& p : params) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(p.value().data());
    for (std::size_t i = 0; i < p.size() * sizeof(float); ++i) {
      h ^= bytes[i];
      h *= 1099511628211ull;  // FNV prime
    }
  }
  return h;
}

}  // namespace glass
