"""The test bed of the real suite, not part of what a user runs: the toolchain built from the Go
module proxy (toolchain), the loopback cluster (cluster), the stand-ins for the Pulumi Python
language host (langhost) and for KServe's RawDeployment reconciler (kserve_standin).
Nothing in ``tools/`` imports it."""
