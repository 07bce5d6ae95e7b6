// Checkpoint::open: decides the layout (GGUF file, or HF directory with config.json and
// safetensors) and gathers the config and tensor table behind one interface.
#include "checkpoint/checkpoint.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace tf::checkpoint {

namespace {

namespace fs = std::filesystem;

bool has_gguf_magic(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && std::memcmp(magic, "GGUF", 4) == 0;
}

Result<std::string> read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return make_error(ErrorCode::kIo, "{}: cannot open", p.string());
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return make_error(ErrorCode::kIo, "{}: read failed", p.string());
  return ss.str();
}

}  // namespace

Result<std::shared_ptr<Checkpoint>> Checkpoint::open(const std::string& path) {
  std::error_code ec;
  auto st = fs::status(path, ec);
  if (ec || !fs::exists(st)) {
    return make_error(ErrorCode::kNotFound, "{}: no such file or directory", path);
  }
  auto c = std::make_shared<Checkpoint>();
  c->path_ = path;
  if (fs::is_regular_file(st)) {
    if (!has_gguf_magic(path)) {
      return make_error(ErrorCode::kUnsupported,
                        "{}: not a GGUF file (want a .gguf file or a directory with config.json)",
                        path);
    }
    c->format_ = Format::kGguf;
    TF_ASSIGN_OR_RETURN(c->gguf_, GgufFile::open(path));
    TF_ASSIGN_OR_RETURN(c->config_, config_from_gguf(*c->gguf_));
    return c;
  }
  if (!fs::is_directory(st)) {
    return make_error(ErrorCode::kUnsupported, "{}: neither a regular file nor a directory", path);
  }
  fs::path cfg = fs::path(path) / "config.json";
  if (!fs::exists(cfg, ec)) {
    return make_error(ErrorCode::kNotFound,
                      "{}: unknown checkpoint layout: directory has no config.json", path);
  }
  c->format_ = Format::kHuggingFace;
  c->dir_ = path;
  TF_ASSIGN_OR_RETURN(std::string text, read_text(cfg));
  TF_ASSIGN_OR_RETURN(c->config_, config_from_hf_json(text, cfg.string()));
  TF_ASSIGN_OR_RETURN(c->st_, SafetensorsFile::open_dir(path));
  return c;
}

const Tensor* Checkpoint::find(std::string_view name) const {
  if (gguf_) {
    const GgufTensorInfo* t = gguf_->find_tensor(name);
    return t && t->supported ? &t->tensor : nullptr;
  }
  return st_ ? st_->find(name) : nullptr;
}

Result<const Tensor*> Checkpoint::get(std::string_view name) const {
  if (gguf_) return gguf_->get_tensor(name);
  if (!st_) return make_error(ErrorCode::kNotFound, "{}: no tensor '{}'", path_, name);
  auto r = st_->get(name);
  if (!r.ok()) return r.error().with_context(path_);
  return r;
}

std::vector<std::string> Checkpoint::tensor_names() const {
  std::vector<std::string> out;
  if (gguf_) {
    for (const auto& t : gguf_->tensors()) out.push_back(t.name);
  } else if (st_) {
    out = st_->names();
  }
  return out;
}

}  // namespace tf::checkpoint
