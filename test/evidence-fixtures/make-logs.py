"""Writes the fixture logs in the formats torch_xla prints (see src/evidence/read.ts for the source lines).

Run: /usr/bin/python3 test/evidence-fixtures/make-logs.py  (rewrites logs/*.log; the outputs are committed)."""
import os

HERE = os.path.dirname(os.path.abspath(__file__))
EQ = "=" * 80
DASH = "-" * 80
SITE = "/usr/local/lib/python3.10/site-packages"


def block(kind, cause, graph_hash, frames, inputs=3, outputs=2, more=False, name=None):
    """debug_util.cpp analyze_graph_execution_python_frame (v2.9.0 l. 313-414)."""
    p = {"c": "Compilation Analysis: ", "e": "Execution Analysis: ", "u": "Unexpected Execution Analysis: "}[kind]
    out = ["", p + EQ, p + ("Compilation Cause" if kind == "c" else "Execution Cause"), p + "  " + cause, p + "Graph Info: "]
    if name:
        out.append(p + "  Graph Name: " + name)
    out += [p + "  Graph Hash: " + graph_hash, p + "  Number of Graph Inputs: %d" % inputs, p + "  Number of Graph Outputs: %d" % outputs,
            p + "Python Frame Triggered Execution: "]
    for fn, f, l in frames:
        out.append(p + "  %s (%s:%d)" % (fn, f, l))
    if more:
        out.append(p + "  ..........")
    out += [p + DASH, p + EQ]
    return out


def post(h):
    """debug_util.cpp post_compilation_analysis (v2.9.0 l. 456-503)."""
    p = "Post Compilation Analysis: "
    return ["", "Computation hash: " + h, "", p + EQ, p + "Graph input size: 0.000122 GB", p + "Graph output size: 0.000061 GB",
            p + "Aliased Input size: 0.000000 GB", p + "Intermediate tensor size: 0.000244 GB", p + "Compiled program size: 0.000031 GB",
            p + DASH, p + EQ]


def metric(name, total, acc):
    """metrics.cpp EmitMetricInfo (v2.9.0 l. 38-77)."""
    return ["Metric: " + name, "  TotalSamples: %d" % total, "  Accumulator: " + acc, "  ValueRate: 020ms338.412us / second",
            "  Rate: 1.0173 / second", "  Percentiles: 1%=001ms028.640us; 5%=001ms028.640us; 10%=001ms050.890us; 20%=001ms064.030us; 50%=002ms134.480us; 80%=003ms200.120us; 90%=004ms100.000us; 95%=004ms200.000us; 99%=005ms000.000us"]


def counter(name, v):
    return ["Counter: " + name, "  Value: %d" % v]


def sync_frames(root, line=20):
    return [("mark_step", SITE + "/torch_xla/core/xla_model.py", 1056), ("train", root + "/train.py", line),
            ("<module>", root + "/train.py", 24)]


def read_frames(root):
    return [("_local_scalar_dense", SITE + "/torch/_ops.py", 513), ("train", root + "/train.py", 18), ("<module>", root + "/train.py", 24)]


def forward_frames(root):
    return [("nonzero", SITE + "/torch/_tensor.py", 1300), ("forward", root + "/models/net.py", 11),
            ("_call_impl", SITE + "/torch/nn/modules/module.py", 1501), ("train", root + "/train.py", 14)]


def run_a():
    """Two processes interleaved, each line prefixed by the launcher ("[worker-0] "), ANSI colours, CRLF."""
    root = "/home/alice/jobs/run-7/proj"
    w0, w1 = [], []
    for i in range(6):
        w0 += block("c", "user torch_xla.sync", "%032x" % (0xA0 + i), sync_frames(root))
        w0 += post("%032x" % (0xB0 + i))
        w0 += block("e", "most likely user code trying to access tensor value before torch_xla.sync", "%032x" % 0xC0, read_frames(root))
        w0 += block("c", "most likely user code trying to access tensor value before torch_xla.sync", "%032x" % (0xD0 + i), forward_frames(root), more=True)
        w0 += ["pt-xla-profiler: TransferFromDeviceTime too frequent: %d counts during %d steps" % (i + 1, i + 1)]
        w1 += ["\x1b[33mWARNING\x1b[0m step %d loss 1.0" % i]
    w0 += ["pt-xla-profiler: CompileTime too frequent: 12 counts during 11 steps",
           "pt-xla-profiler: Op(s) not lowered: aten::_ctc_loss, aten::_ctc_loss_backward,  Please open a GitHub issue with the above op lowering requests."]
    w0 += metric("CompileTime", 12, "06m00s000ms000.000us") + metric("ExecuteTime", 40, "08s000ms000.000us")
    w0 += metric("TransferFromDeviceTime", 11, "110ms000.000us")
    w0 += counter("MarkStep", 11) + counter("aten::_ctc_loss", 11) + counter("aten::_ctc_loss_backward", 11) + counter("aten::_local_scalar_dense", 11)
    out, a, b = [], 0, 0
    while a < len(w0) or b < len(w1):
        for _ in range(7):
            if a < len(w0):
                out.append("[worker-0] " + w0[a])
                a += 1
        if b < len(w1):
            out.append("[worker-1] " + w1[b])
            b += 1
    return "\r\n".join(out) + "\r\n"


def run_b():
    """Unprefixed, torch_xla 2.3 wording ("mark_step"), cut off in the middle of a block (truncated log)."""
    root = "/mnt/disks/persist/bob/proj"
    lines = []
    for i in range(4):
        lines += block("c", "user mark_step", "%032x" % (0x100 + i), sync_frames(root))
    lines += block("e", "most likely user code trying to access tensor value before mark_step", "%032x" % 0x200, read_frames(root))
    cut = block("c", "user mark_step", "%032x" % 0x104, sync_frames(root))
    return "\n".join(lines + cut[:8]) + "\n"


def metrics_file():
    """XLA_METRICS_FILE: '[MetricsData; step=N]' then the full report after every step (metrics_saver.py l. 38-50)."""
    out = []
    for step in range(3):
        out += ["[MetricsData; step=%d]" % step] + metric("CompileTime", step + 1, "%02ds000ms000.000us" % (20 * (step + 1)))
        out += counter("MarkStep", step + 1) + counter("aten::nonzero", 5 * (step + 1)) + [""]
    return "\n".join(out)


os.makedirs(os.path.join(HERE, "logs"), exist_ok=True)
for name, text in [("run-a.log", run_a()), ("run-b-truncated.log", run_b()), ("metrics.txt", metrics_file())]:
    with open(os.path.join(HERE, "logs", name), "w", newline="") as f:
        f.write(text)
