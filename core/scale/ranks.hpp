// The processes of one job: MPI's world when rtfmri runs under mpirun or srun and was built with MPI (OpenMPI from
// Debian, optional at build time), else this process alone. Only the calling thread of main() talks to MPI
// (MPI_THREAD_FUNNELED): device threads hand their results to it. docs/scale.md.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/scale/chunk_bytes.hpp"

namespace rtf {

class Ranks {
 public:
  // Starts MPI when the build has it and the environment says mpirun/srun started us (OMPI_COMM_WORLD_SIZE,
  // PMIX_RANK, PMI_RANK); once, from main(), before any other thread exists. Otherwise a job of one process.
  static void init(int* argc, char*** argv);
  // Ends MPI (MPI_Finalize) if init started it; main() calls it before returning. Idempotent.
  static void finalize();
  static Ranks& world();
  static bool built_with_mpi();

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool root() const { return rank_ == 0; }
  bool mpi() const { return mpi_; }
  const std::string& host() const { return host_; }
  std::string where() const;  // "rank R of K on HOST", or "HOST" alone

  // Collectives (no-ops for a job of one process). `bytes` on the root goes to every rank.
  void broadcast(ChunkBytes& bytes) const;
  void barrier() const;
  int64_t sum(int64_t value) const;  // over every rank
  // Every rank's flag OR-ed (a rank that failed a check tells the others).
  bool any(bool flag) const;

  // Point to point: a message of bytes with a tag; poll returns one if one has arrived (from any rank).
  struct Message {
    int from = 0, tag = 0;
    ChunkBytes bytes;
  };
  void send(int to, int tag, std::span<const uint8_t> bytes) const;
  std::optional<Message> poll(int tag) const;

  // Rank 0's input file (or folder: its files, not its subfolders) as a path this rank can read: `path` itself where
  // this rank sees the same files there (same sizes and modification times: one host, or a shared file system),
  // else a copy sent by rank 0 over MPI into a temporary folder of this process, removed at exit. Every rank calls it
  // for the same paths in the same order. Without MPI: `path`.
  std::string local_input(const std::string& path) const;

  // Ends every rank of the job at once (MPI_Abort) after printing `message` on stderr with where() in front: a failed
  // rank never leaves the others waiting. Without MPI: prints and exits with status 1.
  [[noreturn]] void abort(const std::string& message) const;

 private:
  Ranks() = default;
  int rank_ = 0, size_ = 1;
  bool mpi_ = false;
  std::string host_;
};

}  // namespace rtf
