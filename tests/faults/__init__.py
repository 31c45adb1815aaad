"""Fault injection: the command line killed with SIGKILL at points spread over its run, a
read-only cache folder, a full disk, and paths with spaces and non-ASCII characters. Each
test asserts what must hold wherever the fault lands: the store whole, nothing half written,
and recovery by running the same command again."""
