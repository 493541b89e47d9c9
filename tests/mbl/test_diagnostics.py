"""Each diagnostic kind, with its message, position and caret."""

from __future__ import annotations

import pytest

from npkit.compiler.mbl import check_source

H = 'import "std/headers.mbl";\n'
OK_END = " forward(0); }"

# kind, program, expected message fragment, expected line:col of the first such diagnostic
CASES = [
    ("syntax", "block b { let x = ; forward(0); }", "syntax error", "1:19"),
    ("import-not-found", 'import "nope.mbl";\nblock b {' + OK_END, 'cannot find import "nope.mbl"',
     "1:1"),
    ("redefinition", "const A: bit<8> = 1;\nconst A: bit<8> = 2;", "'A' is already defined", "2:1"),
    ("bad-width", "const A: bit<200> = 1;", "bit<200> is out of range", "1:10"),
    ("undefined-type", "const A: foo_t = 1;", "unknown type 'foo_t'", "1:10"),
    ("bad-type", "header h { a: bool; }", "header fields must be bit<N>", "1:15"),
    ("header-size", "header h { a: bit<3>; }", "not a whole number of bytes", "1:1"),
    ("literal-range", "const A: bit<8> = 256;", "256 does not fit in bit<8>", "1:19"),
    ("not-constant", "const A: bit<16> = meta.len;", "must be a constant expression", "1:20"),
    ("resource", "array a: bit<8>[3];", "size 3 of a is not a power of two", "1:17"),
    ("resource", "array a: bit<32>[1024] in local;", "local needs 1024 words but has 640", "1:1"),
    ("table-key", "table t: lpm(bit<16>) -> bit<8>[4];", "lpm table key must be bit<32> or "
     "bit<128>", "1:14"),
    ("table-value", "table t: hash(bit<48>) -> bit<64>[4];", "table value must be bit<N> with N "
     "<= 32", "1:27"),
    ("undefined-name", "block b { let x: bit<8> = y;" + OK_END, "'y' is not defined", "1:27"),
    ("type-mismatch", "block b { let x: bit<8> = 1; let y: bit<16> = 2; let z = x + y;" + OK_END,
     "widths differ", "1:60"),
    ("type-mismatch", "block b { let x: bit<8> = 1; if x { drop(a); }" + OK_END,
     "a condition must be bool", "1:33"),
    ("needs-width", "block b { let x = 5;" + OK_END, "cannot tell the width of 'x'", "1:11"),
    ("immutable", "block b { let x: bit<8> = 1; x = 2;" + OK_END, "'x' is immutable", "1:30"),
    ("immutable", "block b { meta.in_port = 2;" + OK_END, "meta.in_port is read-only", "1:11"),
    ("not-assignable", "block b { let x: bit<8> = 1; x[3:0] = 2;" + OK_END,
     "cannot be assigned", "1:30"),
    ("unchecked-access", H + "block b { let ip = packet<ipv4_t>(14);" + OK_END,
     "must be checked against the packet length", "2:20"),
    ("unchecked-lookup", "table t: lpm(bit<32>) -> bit<8>[4];\nblock b { let x = t.lookup(1) + "
     "1;" + OK_END, "a lookup can miss", "2:19"),
    ("else-must-end", H + "block b { let ip = packet<ipv4_t>(14) else { }" + OK_END,
     "must end in a verdict or return", "2:44"),
    ("bad-else", "block b { let x: bit<8> = 1 else drop(a);" + OK_END,
     "only packet<...>(offset), table lookups, buffer.alloc() and buffer.store(...) can "
     "fail", "1:27"),
    ("missing-verdict", "block b { let x: bit<8> = 1; }", "can finish a packet without a verdict",
     "1:1"),
    ("missing-return", "fn f(x: bit<8>) -> bit<8> { if x == 0 { return 1; } }",
     "can end without returning a value", "1:27"),
    ("return-in-block", "block b { return; }", "return is not allowed in a block", "1:11"),
    ("verdict-in-fn", "fn f() { drop(x); }", "verdicts are only allowed in a block", "1:10"),
    ("recursion", "fn f(x: bit<8>) -> bit<8> { return g(x); }\n"
     "fn g(x: bit<8>) -> bit<8> { return f(x); }", "recursive call cycle", "1:1"),
    ("loop-bound", "block b { for i in 0..5000 { }" + OK_END, "the loop runs 5000 times", "1:11"),
    ("not-constant", "block b { var n: bit<32> = 3; for i in 0..n { }" + OK_END,
     "a loop bound must be a constant expression", "1:43"),
    ("arity", "fn f(x: bit<8>) -> bit<8> { return x; }\nblock b { let y = f(1, 2);" + OK_END,
     "f takes 1 arguments, 2 given", "2:19"),
    ("unknown-field", H + "block b { let e = packet<ethernet_t>(0) else drop(r); "
     "let t = e.typ;" + OK_END, "ethernet_t has no field 'typ'", "2:63"),
    ("unknown-field", "block b { let x = meta.port;" + OK_END, "meta has no field 'port'",
     "1:19"),
    ("bad-slice", "block b { let x: bit<8> = 1; let y = x[9:2];" + OK_END,
     "[9:2] is outside bit<8>", "1:38"),
    ("bad-cast", "block b { let x: bit<8> = 1; let y = x as bool;" + OK_END,
     "cannot cast to bool", "1:38"),
    ("not-indexable", "block b { let x: bit<8> = 1; let y = x[1];" + OK_END,
     "bit<8> cannot be indexed", "1:38"),
    ("bad-method", "counter c[4];\nblock b { c.lookup(1);" + OK_END, "has no method 'lookup'",
     "2:11"),
    ("bad-name", "block a { drop(x); }\nblock b { let y = a(1);" + OK_END,
     "block 'a' cannot be called", "2:19"),
    ("bad-meta", "block b { let y = meta;" + OK_END, "meta is used as meta.<field>", "1:19"),
    ("unused-value", "block b { 1 + 2;" + OK_END, "this expression does nothing", "1:11"),
    ("unreachable", "block b { drop(a); forward(1); }", "this statement can never run", "1:20"),
    ("bad-ports", "block a { drop(x); }\npipeline p { ports 4..1; stage s = a; }",
     "the port range is empty", "2:1"),
    ("undefined-name", "pipeline p { stage s = nothere; }", "block 'nothere' is not defined",
     "1:14"),
    # receive / transmit / buffer operations (docs/datapath.md)
    ("unchecked-buffer", "block b { let h = buffer.alloc();" + OK_END,
     "buffer.alloc can fail", "1:19"),
    ("unchecked-buffer", "block b { buffer.store(1, 0, 0);" + OK_END,
     "buffer.store can fail", "1:11"),
    ("media-context", "fn f(h: bit<32>) -> bit<8> { buffer.free(h); return 1; }",
     "buffer.free is only allowed in a block", "1:30"),
    ("media-context", "block a { forward(1); }\nblock r { media.consume(); }\n"
     "pipeline p { stage s = a; stage t = r; s -> t; }", "so it must be the pipeline's first "
     "stage", "3:27"),
    ("media-context", "block a { next; }\nblock f { forward(1); }\nblock t { media.send(1); }\n"
     "pipeline p { stage s = a; stage g = f; stage x = t; s -> g -> x; }",
     "the transmit stage x cannot be connected", "4:40"),
    ("media-context", "block a { forward(0); }\nblock t { media.send(1); }\n"
     "block u { media.send(2); }\npipeline p { stage s = a; stage x = t; stage y = u; }",
     "at most one transmit stage", "4:40"),
    ("media-context", "block a { if media.sop() { media.consume(); } media.send(1); }\n"
     "pipeline p { stage s = a; }", "both receives and transmits", "2:14"),
    ("turn-order", "register r : bit<32> [2] in scratch;\nblock b { media.turn_end();"
     + OK_END, "media.turn_begin() once, then media.turn_end()", "2:11"),
    ("bad-method", "block b { media.rewind();" + OK_END, "media has no method 'rewind'",
     "1:11"),
    ("bad-method", "block b { let v = media.consume();" + OK_END,
     "media.consume(...) is a verdict", "1:19"),
    ("arity", "block b { media.send(1, 2); }", "media.send takes 1 arguments, 2 given", "1:11"),
    ("type-mismatch", "block b { let x: bit<32> = 1; media.send(x); }",
     "an argument of media.send is at most bit<16>", "1:42"),
]


@pytest.mark.parametrize(("kind", "source", "message", "where"), CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_diagnostic(kind, source, message, where):
    program, bag = check_source(source, "t.mbl")
    found = [d for d in bag.items if d.kind == kind]
    assert found, f"no {kind} diagnostic; got:\n{bag.render(program.sources)}"
    d = next((d for d in found if message in d.message), None)
    assert d is not None, [x.message for x in found]
    assert f"{d.location.line}:{d.location.column}" == where
    text = d.render(program.sources)
    line = source.splitlines()[d.location.line - 1]
    assert text.startswith(f"t.mbl:{where}: ")
    assert line in text  # the source line is quoted
    caret_line = text.splitlines()[2]
    assert caret_line.index("^") - 4 == d.location.column - 1  # the caret under the column
    assert text.splitlines()[3].startswith("  hint: ") and len(d.hint) > 5


def test_every_kind_is_covered():
    import re
    from pathlib import Path

    import npkit.compiler.mbl as mbl

    root = Path(mbl.__file__).parent
    kinds = set()
    for f in ("sema.py", "builder.py"):
        kinds |= set(re.findall(r'(?:err|error|warning)\(\s*"([a-z-]+)"', (root / f).read_text()))
    kinds -= {"io", "too-deep", "stale-view", "bad-pipeline",  # tested below
              "too-many-errors", "too-large"}  # tests/mbl/test_hardening.py
    assert kinds <= {c[0] for c in CASES}, kinds - {c[0] for c in CASES}


def test_all_errors_reported_in_one_run():
    src = ("block b {\n let x: bit<8> = 300;\n let y = zz;\n let z: bit<4> = 1;\n"
           " z = 2;\n}\n")
    program, bag = check_source(src, "t.mbl")
    assert [d.kind for d in bag.errors] == ["literal-range", "undefined-name", "immutable",
                                            "missing-verdict"]


def test_too_deep_and_unreadable_file(tmp_path):
    deep = "block b { let x: bit<8> = " + "(" * 5000 + "1" + ")" * 5000 + ";" + OK_END
    _, bag = check_source(deep, "t.mbl")
    assert [d.kind for d in bag.errors] == ["too-deep"]
    from npkit.compiler.mbl import check_file

    _, bag = check_file(tmp_path / "missing.mbl")
    assert [d.kind for d in bag.errors] == ["io"]
    assert "cannot read" in bag.errors[0].message
    assert all(d.hint for d in bag.errors)


def test_stale_view_after_push_pull():
    src = ('import "std/headers.mbl";\nblock b { let e = packet<ethernet_t>(0) else drop(r);\n'
           "packet.pull(14) else drop(r);\nlet t = e.ethertype; forward(0); }")
    program, bag = check_source(src, "t.mbl")
    (d,) = bag.errors
    assert d.kind == "stale-view" and "bound before a packet push/pull" in d.message
    assert (d.location.line, d.location.column) == (4, src.splitlines()[3].index("e.ethertype") + 1)
    src2 = "block b { packet.push(4) else { } forward(0); }"
    _, bag = check_source(src2, "t.mbl")
    assert [x.kind for x in bag.errors] == ["else-must-end"]
    assert "packet.push must end in a verdict" in bag.errors[0].message


@pytest.mark.parametrize(("source", "message"), [
    ("block a { next(x); }\npipeline p { stage s = a; }",
     "stage s can end with next(x) but that output is not connected"),
    ("block a { next; }\nblock b { next; }\npipeline p { stage s = a; stage t = b; s -> t -> s; }",
     "pipeline p has a cycle of stages"),
    ("block a { next(x); }\nblock b { drop(r); }\n"
     "pipeline p { stage s = a; stage t = b; stage u = b; s.x -> t; s.x -> u; }",
     "output s.x is connected twice"),
    ("pipeline p { ports 0..1; }", "pipeline p has no stages"),
])
def test_bad_pipeline(source, message):
    program, bag = check_source(source, "t.mbl")
    assert [d.kind for d in bag.errors] == ["bad-pipeline"], bag.render(program.sources)
    assert message in bag.errors[0].message
    assert bag.errors[0].render(program.sources).startswith(
        f"t.mbl:{bag.errors[0].location.line}:{bag.errors[0].location.column}: error:")


def test_imports_load_each_file_once_even_in_a_cycle(tmp_path):
    from npkit.compiler.mbl import check_file

    (tmp_path / "a.mbl").write_text('import "b.mbl";\nconst A: bit<8> = B + 1;\n'
                                    "block main { forward(A as bit<16>); }\n")
    (tmp_path / "b.mbl").write_text('import "a.mbl";\nimport "c.mbl";\nconst B: bit<8> = C;\n')
    (tmp_path / "c.mbl").write_text('import "b.mbl";\nconst C: bit<8> = 4;\n')
    program, bag = check_file(tmp_path / "a.mbl")
    assert not bag.errors, bag.render(program.sources)
    (tmp_path / "c.mbl").write_text('import "b.mbl";\nconst C: bit<8> = 4;\nconst A: bit<8> = 1;\n')
    program, bag = check_file(tmp_path / "a.mbl")
    (d,) = bag.errors
    assert d.kind == "redefinition" and "'A' is already defined" in d.message
    assert d.render(program.sources).splitlines()[0].split(":")[0].endswith(".mbl")
