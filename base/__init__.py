"""The pieces every layer of npkit shares, and so the bottom layer: user errors, source
locations and diagnostics, Internet checksums and header helpers, packet files, and
``PORT=FILE`` specs.  Nothing here imports any other part of npkit
(docs/architecture.md, "Layers").
"""
