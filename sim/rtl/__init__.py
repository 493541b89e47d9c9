"""An RTL microengine (SystemVerilog, sim/rtl/*.sv) checked against the C++ model.

``gen_decoder`` writes the RTL decoder package from the ISA table; ``build`` Verilates the
RTL into a cached shared library; ``rtlme.RtlME`` drives it from Python; ``cosim.compare``
runs one image on the RTL and on one ME of the model and reports where they differ.
Order inside the package: gen_decoder, build -> rtlme -> cosim.  docs/rtl.md describes
what the RTL covers and what it does not.
"""
