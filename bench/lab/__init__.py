"""The simulated test lab: benchmark procedures (NPF IP Forwarding, RFC 2544) that drive a
device under test with the tester (npkit.bench.tester) and report what they measured.

Layers, each talking only down:

* ``device``  -- the device-under-test contract (``Device``, ``Trial``, ``TrialResult``) and
  the devices: the simulated chip running a program, and reference devices with known
  behaviour used to test the procedures.
* ``rfc2544`` / ``npf`` -- the procedures (throughput search, latency, loss curves, ...):
  they build streams, run trials on a ``Device`` and return plain result dataclasses.
* ``report``  -- JSON results (whole configuration and seed) and the Markdown/HTML report.
* ``sweep``   -- running the trials of a suite serially or as dask.distributed tasks.
* ``verdict`` -- the line-rate verdict (docs/verdict.md): what each ME stage and memory
  channel of a chip can carry, from the linked images, one frame on the idle chip and a
  light-load profile; ``verdict_runs`` measures what it is checked against.
"""
