// The target that builds the tests' precompiled header (tests/CMakeLists.txt).
int main() { return 0; }
