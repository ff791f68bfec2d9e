// The static parts of the HTML report page (html_report.h): the head with the inline CSS and
// the body skeleton, and the tail with the inline JavaScript that renders the embedded JSON into
// the skeleton as text and SVG. The script marks <body data-ok="1"> when every section rendered,
// or data-ok="0" and the error text in #error when one failed. Internal to report/.
#ifndef TRAINSCOPE_REPORT_HTML_REPORT_PAGE_H_
#define TRAINSCOPE_REPORT_HTML_REPORT_PAGE_H_

#include <string_view>

namespace trainscope::report {

inline constexpr std::string_view kHtmlReportHead = R"html(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>trainscope report</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#1d2330;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd}
table{border-collapse:collapse}td,th{padding:3px 10px;text-align:right;border-bottom:1px solid #eee}
th:first-child,td:first-child{text-align:left}
.metrics{display:flex;gap:24px;flex-wrap:wrap}.metric{border:1px solid #ddd;border-radius:6px;
padding:8px 14px}.metric b{display:block;font-size:20px}
.legend span{display:inline-block;margin-right:14px}.legend i{display:inline-block;width:12px;
height:12px;margin-right:4px;vertical-align:-1px}
.ok{color:#1a7f37}.bad{color:#c62828}#error{color:#c62828;white-space:pre-wrap}
button{margin-right:6px}svg text{font-size:11px;fill:#333}
</style>
</head>
<body data-ok="0">
<h1>trainscope report: <span id="model"></span></h1>
<div id="error"></div>
<h2>Layout</h2><div id="layout"></div>
<h2>Throughput</h2><div class="metrics" id="metrics"></div>
<h2>Validation</h2><div id="verdict"></div>
<h2>Step time per stage</h2><div id="breakdown"></div>
<h2>Pipeline timeline</h2>
<div><button id="zoom-in">zoom in</button><button id="zoom-out">zoom out</button>
<button id="zoom-reset">reset</button> (mouse wheel zooms around the pointer)</div>
<div id="timeline"></div>
<h2>Memory per stage</h2><div id="memory"></div>
<h2>Communication volume</h2><div id="comm"></div>
)html";

inline constexpr std::string_view kHtmlReportTail = R"html(<script>
(function () {
  "use strict";
  var SVG = "http://www.w3.org/2000/svg";
  var COLORS = {forward: "#4c78a8", backward: "#f58518", recompute: "#b279a2",
    optimizer: "#72b7b2", comm: "#e45756", compute: "#4c78a8", exposed_comm: "#e45756",
    bubble: "#bab0ac", weights: "#4c78a8", grads: "#f58518", optimizer_state: "#72b7b2",
    activations: "#54a24b", buffers: "#bab0ac"};
  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function svg(tag, attrs, text) {
    var e = document.createElementNS(SVG, tag);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function gib(bytes) { return (bytes / 1073741824).toFixed(2) + " GiB"; }
  function ms(seconds) { return (seconds * 1000).toFixed(3) + " ms"; }
  function legend(keys) {
    var d = el("div", {class: "legend"});
    keys.forEach(function (k) {
      var s = el("span", {}); var i = el("i", {style: "background:" + COLORS[k[0]]});
      s.appendChild(i); s.appendChild(document.createTextNode(k[1])); d.appendChild(s);
    });
    return d;
  }
  // A number shown with its exact JSON value in data-value, for tests and copying.
  function metric(key, label, value, text) {
    var m = el("div", {class: "metric"});
    m.appendChild(document.createTextNode(label));
    m.appendChild(el("b", {id: key, "data-value": String(value)}, text));
    return m;
  }
  function renderLayout(sim) {
    var p = sim.parallel, c = sim.cluster, t = el("table", {});
    [["GPUs", p.world_size], ["TP", p.tp], ["PP", p.pp], ["VPP", p.vpp], ["CP", p.cp],
     ["EP", p.ep], ["ETP", p.etp], ["DP", p.dp], ["micro-batches", sim.num_micro_batches],
     ["GPU", c.gpu], ["GPUs per node", c.gpus_per_node], ["tokens per step", sim.tokens_per_step]]
      .forEach(function (r) {
        var tr = el("tr", {}); tr.appendChild(el("td", {}, r[0]));
        tr.appendChild(el("td", {"data-key": r[0]}, String(r[1]))); t.appendChild(tr);
      });
    document.getElementById("layout").appendChild(t);
  }
  function renderMetrics(sim) {
    var m = document.getElementById("metrics");
    m.appendChild(metric("step_time_s", "step time", sim.step_time_s, ms(sim.step_time_s)));
    m.appendChild(metric("tokens_per_s_per_gpu", "tokens/s/GPU", sim.tokens_per_s_per_gpu,
                         sim.tokens_per_s_per_gpu.toFixed(1)));
    m.appendChild(metric("model_tflops_per_gpu", "model TFLOP/s/GPU", sim.model_tflops_per_gpu,
                         sim.model_tflops_per_gpu.toFixed(1)));
    m.appendChild(metric("mfu", "MFU", sim.mfu, (sim.mfu * 100).toFixed(1) + " %"));
    m.appendChild(metric("max_peak_bytes", "peak memory", sim.memory.max_peak_bytes,
                         gib(sim.memory.max_peak_bytes)));
  }
  function renderVerdict(sim, rep) {
    var v = document.getElementById("verdict"), val = rep.validation;
    v.appendChild(el("p", {id: "valid", "data-value": String(val.ok), class: val.ok ? "ok" : "bad"},
      val.ok ? "valid Megatron-Core configuration" : "invalid configuration"));
    v.appendChild(el("p", {id: "fits", "data-value": String(sim.memory.fits),
      class: sim.memory.fits ? "ok" : "bad"}, sim.memory.fits ?
      "fits the GPU memory" : "does not fit the GPU memory"));
    val.errors.concat(val.warnings).forEach(function (w) {
      v.appendChild(el("p", {}, "[" + w.rule + "] " + w.message + " (fix: " + w.fix + ")"));
    });
  }
  // Horizontal stacked bars, one per row, scaled to `total`.
  function stackedBars(container, rows, keys, total, labelOf) {
    var width = 900, left = 90, h = 22, s = svg("svg", {width: width + left + 110,
      height: rows.length * (h + 6) + 10});
    rows.forEach(function (row, i) {
      var x = left, y = 5 + i * (h + 6);
      s.appendChild(svg("text", {x: 0, y: y + 15}, row.label));
      keys.forEach(function (k) {
        var w = total > 0 ? row[k[0]] / total * width : 0;
        var r = svg("rect", {x: x, y: y, width: Math.max(0, w), height: h, fill: COLORS[k[0]]});
        r.appendChild(svg("title", {}, k[1] + ": " + labelOf(row[k[0]]))); s.appendChild(r); x += w;
      });
      s.appendChild(svg("text", {x: x + 6, y: y + 15}, labelOf(row.total)));
    });
    container.appendChild(s);
    return s;
  }
  function renderBreakdown(sim) {
    var keys = [["compute", "compute"], ["exposed_comm", "exposed communication"],
                ["bubble", "bubble and waits"]];
    var rows = sim.stages.map(function (st) {
      return {label: "stage " + st.pp_rank, compute: st.compute_s, exposed_comm: st.exposed_comm_s,
              bubble: st.bubble_s, total: st.compute_s + st.exposed_comm_s + st.bubble_s};
    });
    var c = document.getElementById("breakdown");
    c.appendChild(legend(keys));
    stackedBars(c, rows, keys, sim.step_time_s, ms);
  }
  function renderTimeline(rep) {
    var tl = rep.timeline, width = 1000, left = 70, laneH = 34, view = [0, tl.step_s];
    var c = document.getElementById("timeline");
    c.appendChild(legend([["forward", "forward"], ["backward", "backward"],
      ["recompute", "recompute"], ["optimizer", "grad sync / optimizer"], ["comm", "communication"]]));
    var s = svg("svg", {id: "timeline-svg", width: width + left + 80,
      height: tl.lanes.length * laneH + 30});
    c.appendChild(s);
    function draw() {
      while (s.firstChild) s.removeChild(s.firstChild);
      var scale = width / (view[1] - view[0]);
      tl.lanes.forEach(function (lane, i) {
        var y = 5 + i * laneH;
        s.appendChild(svg("text", {x: 0, y: y + 16}, "stage " + lane.pp_rank));
        [[lane.compute, 0, 18], [lane.comm, 20, 8]].forEach(function (part) {
          part[0].forEach(function (seg) {
            if (seg[1] < view[0] || seg[0] > view[1]) return;
            var x0 = Math.max(seg[0], view[0]), x1 = Math.min(seg[1], view[1]);
            s.appendChild(svg("rect", {x: left + (x0 - view[0]) * scale, y: y + part[1],
              width: Math.max(0.5, (x1 - x0) * scale), height: part[2], fill: COLORS[seg[2]]}));
          });
        });
      });
      var axisY = tl.lanes.length * laneH + 22;
      for (var k = 0; k <= 5; ++k) {
        var t = view[0] + (view[1] - view[0]) * k / 5;
        s.appendChild(svg("text", {x: left + width * k / 5 - 20, y: axisY}, ms(t)));
      }
    }
    function zoom(factor, center) {
      var span = (view[1] - view[0]) * factor;
      span = Math.min(tl.step_s, Math.max(tl.step_s * 1e-6, span));
      var a = center - (center - view[0]) * span / (view[1] - view[0]);
      a = Math.max(0, Math.min(a, tl.step_s - span));
      view = [a, a + span]; draw();
    }
    s.addEventListener("wheel", function (e) {
      e.preventDefault();
      var box = s.getBoundingClientRect();
      var t = view[0] + (e.clientX - box.left - left) / width * (view[1] - view[0]);
      zoom(e.deltaY < 0 ? 0.8 : 1.25, Math.max(view[0], Math.min(view[1], t)));
    });
    document.getElementById("zoom-in").onclick = function () { zoom(0.5, (view[0] + view[1]) / 2); };
    document.getElementById("zoom-out").onclick = function () { zoom(2, (view[0] + view[1]) / 2); };
    document.getElementById("zoom-reset").onclick = function () { view = [0, tl.step_s]; draw(); };
    draw();
  }
  function renderMemory(sim, rep) {
    var mem = rep.memory, cap = mem.gpu_memory_bytes, width = 900, left = 90, h = 22;
    var keys = [["weights", "weights"], ["grads", "gradients"], ["optimizer_state", "optimizer"],
                ["activations", "activations"], ["buffers", "buffers"]];
    var rows = mem.stages.map(function (st) {
      return {label: "stage " + st.pp_rank, weights: st.weights_bytes, grads: st.grads_bytes,
              optimizer_state: st.optimizer_bytes, activations: st.activations_bytes,
              buffers: st.buffers_bytes, total: st.peak_bytes};
    });
    var c = document.getElementById("memory");
    c.appendChild(legend(keys));
    var most = Math.max.apply(null, rows.map(function (r) { return r.total; }).concat([cap]));
    var s = stackedBars(c, rows, keys, most, gib);
    var x = left + cap / most * width;
    s.appendChild(svg("line", {x1: x, x2: x, y1: 0, y2: rows.length * (h + 6) + 10,
      stroke: "#c62828", "stroke-dasharray": "4 3"}));
    s.appendChild(svg("text", {x: x + 3, y: 10}, "GPU " + gib(cap)));
  }
  function renderComm(rep) {
    var t = el("table", {id: "comm-table"}), head = el("tr", {});
    ["group", "collective", "ops", "bytes", "volume"].forEach(function (h) {
      head.appendChild(el("th", {}, h)); });
    t.appendChild(head);
    var most = Math.max.apply(null, rep.comm.map(function (r) { return r.bytes; }).concat([1]));
    rep.comm.forEach(function (r) {
      var tr = el("tr", {});
      tr.appendChild(el("td", {}, r.group)); tr.appendChild(el("td", {}, r.collective));
      tr.appendChild(el("td", {}, String(r.count))); tr.appendChild(el("td", {}, gib(r.bytes)));
      var cell = el("td", {}), s = svg("svg", {width: 300, height: 12});
      s.appendChild(svg("rect", {x: 0, y: 1, height: 10, width: r.bytes / most * 300,
        fill: COLORS.comm}));
      cell.appendChild(s); tr.appendChild(cell); t.appendChild(tr);
    });
    var c = document.getElementById("comm");
    c.appendChild(el("p", {}, "Bytes each stage's representative rank sends or receives in the " +
      rep.timeline.simulated_micro_batches + " simulated micro-batches, summed over stages."));
    c.appendChild(t);
  }
  try {
    var sim = JSON.parse(document.getElementById("simulate-json").textContent);
    var rep = JSON.parse(document.getElementById("report-json").textContent);
    document.getElementById("model").textContent = sim.model;
    renderLayout(sim); renderMetrics(sim); renderVerdict(sim, rep); renderBreakdown(sim);
    renderTimeline(rep); renderMemory(sim, rep); renderComm(rep);
    document.body.setAttribute("data-ok", "1");
  } catch (e) {
    document.body.setAttribute("data-ok", "0");
    document.getElementById("error").textContent = "report error: " + (e && e.stack || e);
  }
})();
</script>
</body>
</html>
)html";

}  // namespace trainscope::report

#endif  // TRAINSCOPE_REPORT_HTML_REPORT_PAGE_H_
