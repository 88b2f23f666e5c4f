// A process that looks like a CPython of a version the outside reader does
// not know (3.13): it exports the symbols the reader looks for, holds no
// interpreter, and waits to be read until its stdin closes.
#include <unistd.h>

#include <cstdint>

extern "C" {
// Volatile: kept in the file whatever the optimiser sees of them.
__attribute__((used)) volatile unsigned char _PyRuntime[4096];
__attribute__((used)) const volatile uint32_t Py_Version = 0x030D00F0;  // 3.13.0 final
__attribute__((used)) volatile unsigned char PyCode_Type[256], PyUnicode_Type[256], PyBytes_Type[256];
}

int main() {
  char c;
  while (read(0, &c, 1) > 0) {
  }
  return _PyRuntime[0] + PyCode_Type[0] + PyUnicode_Type[0] + PyBytes_Type[0];
}
