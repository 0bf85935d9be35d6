// Dispatch overhead, native vs bwrap backend: filled in by the issue-5 benchmark work.
int main() { return 0; }
