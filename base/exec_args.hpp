#pragma once
// The null-terminated char* arrays that execve() and execvp() take, made
// before fork() so that the child allocates nothing.

#include <string>
#include <vector>

namespace scalescope {

// Pointers into `strings` (which must outlive them), then nullptr.
inline std::vector<char*> exec_array(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace scalescope
