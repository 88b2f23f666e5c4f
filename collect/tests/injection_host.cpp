// A process without CUDA that loads the collector the way CUDA would, for
// collector_injection_test. Usage: collector_injection_host LIB init|fork
//   init: dlopen + InitializeInjection, then exit 7 (the "job's" own code)
//   fork: dlopen, fork, InitializeInjection in the child only; exit 0 if the child returned 1
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    std::fprintf(stderr, "dlopen: %s\n", dlerror());
    return 3;
  }
  auto init = reinterpret_cast<int (*)()>(dlsym(lib, "InitializeInjection"));
  if (!init) return 4;
  if (std::strcmp(argv[2], "init") == 0) {
    init();
    return 7;
  }
  pid_t child = fork();
  if (child == 0) _exit(init() == 1 ? 0 : 1);
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
}
