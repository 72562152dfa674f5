// Finding, checking and loading model plugins with Boost.DLL. A plugin is a shared library
// `sgmcmc-model-<name>.so` exporting an ABI record (interface version + build fingerprint), an
// info function and a factory (sgmcmc/plugin.hpp). The record is checked before anything else is
// touched, and every object a plugin makes holds its library open.
module;
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include <elf.h>
#include <link.h>
#include <fmt/format.h>
#include <boost/dll/shared_library.hpp>
#include <sgmcmc/plugin.hpp>
export module sgmcmc.plugins;
export import sgmcmc.model;
import sgmcmc.error;

export namespace sgmcmc {

inline constexpr const char* plugin_file_prefix = "sgmcmc-model-";
inline constexpr const char* plugin_file_suffix = ".so";

/// The fingerprint of this build of the core; a plugin's must be equal.
inline constexpr const char* core_build_fingerprint = SGMCMC_BUILD_FINGERPRINT;

class LoadedPlugin {
public:
  const PluginInfo& info() const { return info_; }
  const std::filesystem::path& path() const { return path_; }
  /// Builds the model. The returned pointer keeps the library loaded for as long as it lives.
  /// Errors from the factory come back as Error naming the plugin.
  std::shared_ptr<const Model> create(const ModelContext& context) const;

private:
  friend LoadedPlugin load_plugin_file(const std::filesystem::path& path);
  std::shared_ptr<boost::dll::shared_library> library_;
  std::filesystem::path path_;
  PluginInfo info_;
  ModelFactoryFunction* factory_ = nullptr;
};

/// Why `path` cannot be handed to dlopen, or "". dlopen maps the file's segments as its headers
/// say; a truncated file then faults (SIGBUS) on the first access beyond its end, killing the
/// process without a word. So the headers are checked against the file's length first.
std::string plugin_file_problem(const std::filesystem::path& path);

/// Loads and checks one plugin file (plugin_file_problem, then the ABI record); an Error says
/// what is wrong and how to fix it.
LoadedPlugin load_plugin_file(const std::filesystem::path& path);

/// The folders searched, in order: `plugin_dir` (--plugin-dir), SGMCMC_PLUGIN_PATH (colon
/// separated), then `defaults` (the build tree, the install prefix).
std::vector<std::filesystem::path> plugin_search_path(const std::optional<std::filesystem::path>& plugin_dir,
                                                      const std::vector<std::filesystem::path>& defaults);

/// A plugin given by name ("gaussian", searched for) or by path (contains '/' or ends in .so).
LoadedPlugin load_plugin(const std::string& name_or_path, const std::vector<std::filesystem::path>& search_path);

struct PluginListing {
  std::string name;
  std::filesystem::path path;
  std::optional<LoadedPlugin> plugin;  // empty when it could not be loaded
  std::string error;                   // why not
  bool shadowed = false;               // an earlier folder has a plugin of the same name
};

/// Every plugin file in the search path, loaded where possible.
std::vector<PluginListing> discover_plugins(const std::vector<std::filesystem::path>& search_path);

}  // namespace sgmcmc

module :private;

namespace sgmcmc {

namespace {

std::string quoted(const std::filesystem::path& path) { return "'" + path.string() + "'"; }

const char* rebuild_hint =
    "rebuild the plugin against this sgmcmc (CMake: find_package(sgmcmc) and sgmcmc_add_model_plugin)";

// The ELF class and machine of this build (ElfW from <link.h> gives its headers' types).
constexpr unsigned char native_class = sizeof(void*) == 8 ? ELFCLASS64 : ELFCLASS32;
#if defined(__x86_64__)
constexpr unsigned native_machine = EM_X86_64;
#elif defined(__aarch64__)
constexpr unsigned native_machine = EM_AARCH64;
#else
constexpr unsigned native_machine = EM_NONE;  // not checked
#endif

/// What the bytes `offset` + `count` × `size` would need of a file of `length` bytes, or "".
std::string beyond_end(const char* what, std::uint64_t offset, std::uint64_t count, std::uint64_t size,
                       std::uint64_t length) {
  if (count == 0 || (offset <= length && count <= (length - offset) / size)) return "";
  return fmt::format("{} (from byte {}, {} × {} bytes) extend beyond its {} bytes: the file is truncated (copy or "
                     "build it again)",
                     what, offset, count, size, length);
}

}  // namespace

std::string plugin_file_problem(const std::filesystem::path& path) {
  std::error_code error;
  // Before opening it: opening a FIFO for reading waits for a writer, for ever.
  if (!std::filesystem::is_regular_file(path, error))
    return error ? fmt::format("cannot read it ({})", error.message()) : "not a regular file (a FIFO, a device or a folder)";
  std::ifstream in(path, std::ios::binary);
  const std::uint64_t length = std::filesystem::file_size(path, error);
  if (!in || error) return fmt::format("cannot read it ({})", error ? error.message() : "cannot open");
  ElfW(Ehdr) header{};
  if (!in.read(reinterpret_cast<char*>(&header), sizeof header) ||
      std::string_view(reinterpret_cast<const char*>(header.e_ident), SELFMAG) != ELFMAG)
    return "not an ELF file (a shared library starts with the bytes 0x7f 'E' 'L' 'F')";
  if (header.e_ident[EI_CLASS] != native_class)
    return fmt::format("a {}-bit ELF file, this sgmcmc is {}-bit", header.e_ident[EI_CLASS] == ELFCLASS32 ? 32 : 64,
                       native_class == ELFCLASS32 ? 32 : 64);
  if (header.e_type != ET_DYN) return fmt::format("an ELF file of type {}, not a shared library (type {})", header.e_type, ET_DYN);
  if (native_machine != EM_NONE && header.e_machine != native_machine)
    return fmt::format("built for machine {} (ELF e_machine), this sgmcmc for machine {}", header.e_machine, native_machine);
  if (header.e_phentsize != sizeof(ElfW(Phdr)) || (header.e_shnum && header.e_shentsize != sizeof(ElfW(Shdr))))
    return "an ELF file whose header sizes are not this machine's: damaged";
  if (auto problem = beyond_end("its section headers", header.e_shoff, header.e_shnum, sizeof(ElfW(Shdr)), length); !problem.empty())
    return problem;
  if (auto problem = beyond_end("its program headers", header.e_phoff, header.e_phnum, sizeof(ElfW(Phdr)), length); !problem.empty())
    return problem;
  in.seekg(static_cast<std::streamoff>(header.e_phoff));
  for (unsigned k = 0; k < header.e_phnum; ++k) {
    ElfW(Phdr) segment{};
    if (!in.read(reinterpret_cast<char*>(&segment), sizeof segment)) return "its program headers cannot be read: damaged";
    if (segment.p_type != PT_LOAD) continue;
    if (auto problem = beyond_end(fmt::format("segment {}'s bytes", k).c_str(), segment.p_offset, segment.p_filesz, 1, length);
        !problem.empty())
      return problem;
  }
  return "";
}

namespace {
/// The model name a plugin file's name gives (sgmcmc-model-<name>.so), or "" for another name.
std::string plugin_name_of(const std::filesystem::path& file) {
  const std::string name = file.filename().string();
  const std::string prefix = plugin_file_prefix, suffix = plugin_file_suffix;
  if (name.size() <= prefix.size() + suffix.size() || !name.starts_with(prefix) || !name.ends_with(suffix)) return "";
  return name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
}
}  // namespace

LoadedPlugin load_plugin_file(const std::filesystem::path& path) {
  if (std::error_code error; !std::filesystem::exists(path, error))
    throw Error(fmt::format("plugin {}: {}", quoted(path), error ? error.message() : "no such file"));
  if (const auto problem = plugin_file_problem(path); !problem.empty())
    throw Error(fmt::format("plugin {}: not a loadable shared library: {}", quoted(path), problem));
  LoadedPlugin loaded;
  loaded.path_ = path;
  try {
    loaded.library_ = std::make_shared<boost::dll::shared_library>(
        path, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  } catch (const std::exception& error) {
    throw Error(fmt::format("plugin {}: not a loadable shared library ({})", quoted(path), error.what()));
  }
  auto& library = *loaded.library_;
  for (const char* symbol : {interface_version_symbol, build_fingerprint_symbol, plugin_info_symbol,
                             model_factory_symbol})
    if (!library.has(symbol))
      throw Error(fmt::format("plugin {}: not an sgmcmc model plugin (it does not export '{}'; "
                              "plugins export it with SGMCMC_MODEL_PLUGIN from sgmcmc/plugin.hpp)",
                              quoted(path), symbol));

  const auto version = library.get<const std::uint32_t>(interface_version_symbol);
  if (version != model_interface_version)
    throw Error(fmt::format("plugin {}: built for model interface version {}, this sgmcmc has version {}; {}",
                            quoted(path), version, model_interface_version, rebuild_hint));
  const std::string fingerprint = &library.get<const char[]>(build_fingerprint_symbol)[0];
  if (fingerprint != core_build_fingerprint)
    throw Error(fmt::format("plugin {}: built with '{}', this sgmcmc with '{}'; {} with the same compiler "
                            "and flags",
                            quoted(path), fingerprint, core_build_fingerprint, rebuild_hint));

  try {
    loaded.info_ = library.get_alias<PluginInfoFunction>(plugin_info_symbol)();
  } catch (const std::exception& error) {
    throw Error(fmt::format("plugin {}: its info function failed: {}", quoted(path), error.what()));
  }
  // A file named for one model that holds another would run under the wrong name (a copy or a
  // rename gone wrong); a path of another form names no model, so there is nothing to compare.
  if (const auto named = plugin_name_of(path); !named.empty() && named != loaded.info_.name)
    throw Error(fmt::format("plugin {}: the file is named for model '{}', but the plugin says it is model '{}'; "
                            "rename it {}{}{} or rebuild it as '{}'",
                            quoted(path), named, loaded.info_.name, plugin_file_prefix, loaded.info_.name,
                            plugin_file_suffix, named));
  loaded.factory_ = &library.get_alias<ModelFactoryFunction>(model_factory_symbol);
  return loaded;
}

std::shared_ptr<const Model> LoadedPlugin::create(const ModelContext& context) const {
  std::unique_ptr<Model> model;
  try {
    model = factory_(context);
  } catch (const std::bad_alloc&) {  // what a plugin did not name itself (sgmcmc::allocate does)
    throw Error(fmt::format("model plugin '{}' ({}): out of memory while building the model; is a size in its data "
                            "or settings far too large?",
                            info_.name, path_.string()));
  } catch (const std::exception& error) {
    throw Error(fmt::format("model plugin '{}' ({}): {}", info_.name, path_.string(), error.what()));
  }
  if (!model) throw Error(fmt::format("model plugin '{}' ({}): its factory returned no model", info_.name, path_.string()));
  // The deleter owns a reference to the library: the model's code stays mapped until it is gone.
  return std::shared_ptr<const Model>(model.release(), [library = library_](const Model* m) { delete m; });
}

std::vector<std::filesystem::path> plugin_search_path(const std::optional<std::filesystem::path>& plugin_dir,
                                                      const std::vector<std::filesystem::path>& defaults) {
  std::vector<std::filesystem::path> folders;
  if (plugin_dir) folders.push_back(*plugin_dir);
  if (const char* variable = std::getenv("SGMCMC_PLUGIN_PATH")) {
    std::string list = variable;
    for (std::size_t start = 0; start <= list.size();) {
      const std::size_t colon = std::min(list.find(':', start), list.size());
      if (colon > start) folders.emplace_back(list.substr(start, colon - start));
      start = colon + 1;
    }
  }
  folders.insert(folders.end(), defaults.begin(), defaults.end());
  return folders;
}


LoadedPlugin load_plugin(const std::string& name_or_path, const std::vector<std::filesystem::path>& search_path) {
  if (name_or_path.find('/') != std::string::npos || name_or_path.ends_with(plugin_file_suffix))
    return load_plugin_file(name_or_path);
  const std::string file = plugin_file_prefix + name_or_path + plugin_file_suffix;
  std::vector<std::string> searched, found;
  for (const auto& folder : search_path) {
    // A folder that cannot be read (a loop of symbolic links, no permission, a name too long) is
    // passed over, as one that does not hold the file: one bad entry of SGMCMC_PLUGIN_PATH must not
    // stop every run.
    const auto candidate = folder / file;
    std::error_code error;
    if (std::filesystem::exists(candidate, error)) return load_plugin_file(candidate);
    searched.push_back(error ? fmt::format("{} ({})", folder.string(), error.message()) : folder.string());
  }
  for (const auto& listing : discover_plugins(search_path))
    if (!listing.shadowed) found.push_back(listing.name);
  std::string message = fmt::format("unknown model '{}': no {} in {}", name_or_path, file,
                                    searched.empty() ? std::string("(no plugin folders)") : fmt::format("{}", fmt::join(searched, ", ")));
  if (auto suggestion = closest_match(name_or_path, found); !suggestion.empty())
    message += fmt::format(" (did you mean '{}'?)", suggestion);
  message += fmt::format("; known models: {}", found.empty() ? std::string("none") : fmt::format("{}", fmt::join(found, ", ")));
  throw Error(message + "; add folders with --plugin-dir or SGMCMC_PLUGIN_PATH");
}

std::vector<PluginListing> discover_plugins(const std::vector<std::filesystem::path>& search_path) {
  std::vector<PluginListing> listings;
  for (const auto& folder : search_path) {
    std::error_code error;
    if (!std::filesystem::is_directory(folder, error)) continue;
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(folder, error))
      if (!plugin_name_of(entry.path()).empty()) files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    for (const auto& file : files) {
      PluginListing listing{plugin_name_of(file), file, std::nullopt, "", false};
      for (const auto& earlier : listings) listing.shadowed |= earlier.name == listing.name;
      try {
        listing.plugin = load_plugin_file(file);
      } catch (const Error& failure) {
        listing.error = failure.what();
      }
      listings.push_back(std::move(listing));
    }
  }
  return listings;
}

}  // namespace sgmcmc
