// Ranks: MPI's world (built with RTF_HAVE_MPI and started by mpirun/srun) or this process alone. Messages larger than
// MPI's int counts go in pieces of at most 1 GiB after a size header.
#include "core/scale/ranks.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "core/scale/chunk_bytes.hpp"

#ifdef RTF_HAVE_MPI
#include <mpi.h>
#endif

namespace rtf {

namespace {

namespace fs = std::filesystem;

bool g_started = false;  // init() started MPI
bool g_finalized = false;
fs::path g_input_dir;  // non-root ranks' copies of rank 0's inputs
int g_inputs = 0;

bool launched_by_mpi() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  return false;
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown-host";
  return name;
}

#ifdef RTF_HAVE_MPI
constexpr size_t kPiece = size_t{1} << 30;

void send_bytes(int to, int tag, std::span<const uint8_t> bytes) {
  uint64_t size = bytes.size();
  MPI_Send(&size, 1, MPI_UINT64_T, to, tag, MPI_COMM_WORLD);
  for (size_t at = 0; at < bytes.size(); at += kPiece) {
    const auto n = static_cast<int>(std::min(kPiece, bytes.size() - at));
    MPI_Send(bytes.data() + at, n, MPI_BYTE, to, tag, MPI_COMM_WORLD);
  }
}

ChunkBytes receive_bytes(int from, int tag) {
  uint64_t size = 0;
  MPI_Recv(&size, 1, MPI_UINT64_T, from, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  ChunkBytes bytes(size);
  for (size_t at = 0; at < bytes.size(); at += kPiece) {
    const auto n = static_cast<int>(std::min(kPiece, bytes.size() - at));
    MPI_Recv(bytes.data() + at, n, MPI_BYTE, from, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  return bytes;
}
#endif

std::vector<uint8_t> read_whole_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("{}: cannot open the file", path.string()));
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_whole_file(const fs::path& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error(fmt::format("{}: cannot write a copy of rank 0's input", path.string()));
}

}  // namespace

Ranks& Ranks::world() {
  static Ranks ranks;
  if (ranks.host_.empty()) ranks.host_ = host_name();
  return ranks;
}

bool Ranks::built_with_mpi() {
#ifdef RTF_HAVE_MPI
  return true;
#else
  return false;
#endif
}

void Ranks::init(int* argc, char*** argv) {
  Ranks& w = world();
#ifdef RTF_HAVE_MPI
  if (!g_started && launched_by_mpi()) {
    int provided = 0;
    MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
    g_started = true;
    MPI_Comm_rank(MPI_COMM_WORLD, &w.rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &w.size_);
    w.mpi_ = true;
  }
#else
  (void)argc;
  (void)argv;
  (void)w;
#endif
}

void Ranks::finalize() {
  if (!g_input_dir.empty()) {
    std::error_code ec;
    fs::remove_all(g_input_dir, ec);
    g_input_dir.clear();
  }
#ifdef RTF_HAVE_MPI
  if (g_started && !g_finalized) {
    g_finalized = true;
    MPI_Finalize();
  }
#endif
}

std::string Ranks::where() const {
  return mpi_ ? fmt::format("rank {} of {} on {}", rank_, size_, host_) : host_;
}

void Ranks::broadcast(ChunkBytes& bytes) const {
#ifdef RTF_HAVE_MPI
  if (!mpi_ || size_ == 1) return;
  uint64_t size = bytes.size();
  MPI_Bcast(&size, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  bytes.resize(size);
  for (size_t at = 0; at < bytes.size(); at += kPiece) {
    const auto n = static_cast<int>(std::min(kPiece, bytes.size() - at));
    MPI_Bcast(bytes.data() + at, n, MPI_BYTE, 0, MPI_COMM_WORLD);
  }
#else
  (void)bytes;
#endif
}

void Ranks::barrier() const {
#ifdef RTF_HAVE_MPI
  if (mpi_) MPI_Barrier(MPI_COMM_WORLD);
#endif
}

int64_t Ranks::sum(int64_t value) const {
#ifdef RTF_HAVE_MPI
  if (mpi_) {
    int64_t total = 0;
    MPI_Allreduce(&value, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    return total;
  }
#endif
  return value;
}

bool Ranks::any(bool flag) const {
#ifdef RTF_HAVE_MPI
  if (mpi_) {
    int in = flag ? 1 : 0, out = 0;
    MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    return out != 0;
  }
#endif
  return flag;
}

void Ranks::send(int to, int tag, std::span<const uint8_t> bytes) const {
#ifdef RTF_HAVE_MPI
  if (mpi_) {
    send_bytes(to, tag, bytes);
    return;
  }
#endif
  (void)to;
  (void)tag;
  (void)bytes;
  throw std::logic_error("Ranks::send without MPI");
}

std::optional<Ranks::Message> Ranks::poll(int tag) const {
#ifdef RTF_HAVE_MPI
  if (mpi_) {
    int flag = 0;
    MPI_Status status;
    MPI_Iprobe(MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &flag, &status);
    if (flag == 0) return std::nullopt;
    Message m;
    m.from = status.MPI_SOURCE;
    m.tag = tag;
    m.bytes = receive_bytes(m.from, tag);
    return m;
  }
#endif
  (void)tag;
  return std::nullopt;
}

std::string Ranks::local_input(const std::string& path) const {
  if (!mpi_ || size_ == 1) return path;
  // Rank 0 lists the file (or a folder's files) with sizes and modification times; a rank that sees the same at the
  // same path (one host, or a shared file system) reads it there; otherwise rank 0 sends the contents and the rank
  // reads its copy.
  const bool folder = root() && fs::is_directory(path);
  std::vector<fs::path> files;
  ChunkBytes manifest;
  if (root()) {
    if (folder) {
      for (const auto& e : fs::directory_iterator(path)) {
        if (e.is_regular_file()) files.push_back(e.path());
      }
      std::sort(files.begin(), files.end());
    } else {
      files.emplace_back(path);
    }
    ChunkWriter w;
    w.value<uint8_t>(folder ? 1 : 0).value<uint64_t>(files.size());
    for (const fs::path& f : files) {
      const std::string name = f.filename().string();
      w.values(std::vector<char>(name.begin(), name.end()))
          .value<uint64_t>(fs::file_size(f))
          .value<int64_t>(fs::last_write_time(f).time_since_epoch().count());
    }
    manifest = w.take();
  }
  broadcast(manifest);
  ChunkReader m(manifest);
  const bool is_folder = m.value<uint8_t>() != 0;
  const auto count = m.value<uint64_t>();
  bool same = true;
  std::vector<std::string> names;
  for (uint64_t k = 0; k < count; ++k) {
    const auto chars = m.values<char>();
    names.emplace_back(chars.begin(), chars.end());
    const auto size = m.value<uint64_t>();
    const auto time = m.value<int64_t>();
    const fs::path here = is_folder ? fs::path(path) / names.back() : fs::path(path);
    std::error_code e1, e2;
    const auto local_size = fs::file_size(here, e1);
    const auto local_time = fs::last_write_time(here, e2);
    same = same && !e1 && !e2 && local_size == size && local_time.time_since_epoch().count() == time;
  }
  if (!any(!same)) return path;
  ChunkBytes packed;
  if (root()) {
    ChunkWriter w;
    for (const fs::path& f : files) w.values(read_whole_file(f));
    packed = w.take();
  }
  broadcast(packed);
  if (root() || same) return path;
  if (g_input_dir.empty()) {
    g_input_dir = fs::temp_directory_path() / fmt::format("rtfmri-inputs-{}-rank{}", ::getpid(), rank_);
    fs::create_directories(g_input_dir);
  }
  fs::path dir = g_input_dir / std::to_string(g_inputs++);
  if (is_folder) {  // the folder's name is kept (commands derive output names from it; only rank 0 writes them)
    fs::path name = fs::path(path).lexically_normal();
    if (name.filename().empty()) name = name.parent_path();
    dir /= name.filename();
  }
  fs::create_directories(dir);
  ChunkReader r(packed);
  fs::path first;
  for (const std::string& name : names) {
    const fs::path file = dir / name;
    write_whole_file(file, r.values<uint8_t>());
    if (first.empty()) first = file;
  }
  return is_folder ? dir.string() : first.string();
}

void Ranks::abort(const std::string& message) const {
  std::fprintf(stderr, "rtfmri: error (%s): %s\n", where().c_str(), message.c_str());
  std::fflush(stderr);
#ifdef RTF_HAVE_MPI
  if (mpi_ && !g_finalized) MPI_Abort(MPI_COMM_WORLD, 1);
#endif
  std::exit(1);
}

}  // namespace rtf
