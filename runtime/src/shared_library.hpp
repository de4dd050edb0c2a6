// A vendor library opened at run time (dlopen, RTLD_LOCAL), so that gemmlab builds and runs
// without it and reports clearly when it is missing: the references cuBLAS, rocBLAS, CLBlast and
// oneDNN.
// The handle is never closed: such libraries register exit handlers or keep threads parked on
// their code, and a reference lives until the process ends anyway.
#pragma once

#include <dlfcn.h>

#include <initializer_list>
#include <stdexcept>
#include <string>

namespace gemmlab {

class SharedLibrary {
 public:
  // The first of `files` that loads (a null or empty entry is skipped); std::runtime_error with
  // `missing` ("cuBLAS not found (libcublas.so.13): install ...") when none does.
  SharedLibrary(std::initializer_list<const char*> files, const std::string& name, const std::string& missing)
      : name_(name) {
    for (const char* file : files)
      if (file != nullptr && *file != '\0' && (handle_ = dlopen(file, RTLD_NOW | RTLD_LOCAL)) != nullptr) {
        file_ = file;
        return;
      }
    throw std::runtime_error(missing);
  }

  const std::string& file() const { return file_; }  // the one that loaded

  // Sets `f` to the library's `symbol`; std::runtime_error ("cuBLAS lacks cublasGemmEx") without it.
  template <class F>
  void load(F& f, const char* symbol) const {
    f = reinterpret_cast<F>(dlsym(handle_, symbol));
    if (f == nullptr) throw std::runtime_error(name_ + " lacks " + symbol);
  }

 private:
  std::string name_, file_;
  void* handle_ = nullptr;
};

}  // namespace gemmlab
