#pragma once
// Data-parallel training over MPI: the processes started by `mpirun -np N glass train` (its
// ranks) each take 1/N of every batch, and after backward they average their gradients, which
// is exactly the gradient of the whole batch (a mean of N equal-sized shard means is the mean
// of the whole; docs/treino.md, "Treino em vários processos"). All of MPI lives in this file's
// .cpp; without MPI (GLASS_MPI off) every program is one rank of one.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "autograd/tensor.hpp"

namespace glass {

/// The processes of one data-parallel run. The default one is a single process (rank 0 of 1),
/// for which every collective below returns its input as it is.
class Communicator {
 public:
  /// One process alone.
  Communicator() = default;

  /// MPI_COMM_WORLD when this process was started by mpirun (OpenMPI's OMPI_COMM_WORLD_SIZE or
  /// a PMI launcher's PMI_SIZE/PMIX_RANK in the environment) and the program was built with
  /// MPI: MPI is initialised at the first call and finalised when the program exits. Otherwise
  /// a single process (no MPI call is made).
  static Communicator world();

  /// Whether this program was built with MPI (the CMake option GLASS_MPI).
  static bool built_with_mpi();

  int rank() const { return rank_; }  ///< 0 .. size-1; rank 0 does all the I/O
  int size() const { return size_; }  ///< number of processes (N of mpirun -np N)
  bool is_root() const { return rank_ == 0; }

  /// buffer[i] <- sum over the ranks of buffer[i], in place, on every rank (one MPI_Allreduce).
  /// Every rank gets the same bits (checked by same_on_all_ranks at each evaluation).
  void all_reduce_sum(std::vector<float>& buffer) const;
  void all_reduce_sum(std::vector<double>& buffer) const;
  /// True when `flag` is set on at least one rank (the same answer on every rank).
  bool any(bool flag) const;
  /// The largest `value` over the ranks (the same answer on every rank; one MPI_Allreduce, MAX).
  int max(int value) const;
  /// True when every rank passed the same `value` (e.g. a checksum of its weights).
  bool same_on_all_ranks(std::uint64_t value) const;
  /// Ends every process of the run with exit code `code` (MPI_Abort); with one process, exits.
  [[noreturn]] void abort(int code) const;

 private:
  Communicator(int rank, int size) : rank_(rank), size_(size) {}
  int rank_ = 0, size_ = 1;
};

/// This rank's rows of a batch of B windows: rows [r*B/N, (r+1)*B/N) of the (B, T) array.
/// Throws std::invalid_argument when B does not divide by N.
Ids shard_rows(const Ids& batch, const Communicator& comm);

/// The mean over the ranks of every parameter's gradient (and of `loss`, this rank's loss),
/// written back into the gradients on every rank; returns the mean loss. Gradients and loss
/// travel in one flat float buffer, so one all-reduce per step whatever the number of tensors.
/// A parameter without a gradient counts as zeros. With one process: returns `loss`, touches
/// nothing. If every rank's loss and gradients are means over equally many predictions, the
/// result is the gradient of the whole batch (to float summation order).
double average_gradients(const std::vector<Tensor>& params, double loss, const Communicator& comm);

/// The gradient of a batch whose ranks' shards count different numbers of targets (a chat
/// fine-tune's loss mask ignores some): each rank's mean gradient and `loss` are weighted by its
/// `share` of the batch's counted targets (N_r / N, the shares summing to 1 over the ranks), and
/// the weighted sums are written back into the gradients on every rank; returns the weighted
/// loss. That is the mean over the N counted targets of the whole batch, the gradient one process
/// computes, to float summation order. One all-reduce, as average_gradients (which is this with
/// every share 1/N, for shards of equally many targets); a shard of no counted target (share 0,
/// loss and gradients 0) adds nothing. With one process: returns `loss`, touches nothing.
double combine_gradients(const std::vector<Tensor>& params, double loss, double share,
                         const Communicator& comm);

/// A 64-bit checksum of the exact bits of every parameter's value (FNV-1a over the bytes, in
/// order): equal weights give equal checksums; a single differing bit almost surely not.
std::uint64_t weights_checksum(const std::vector<Tensor>& params);

}  // namespace glass
