// Live behaviour for toycompiler views. The HTML is the same as the static
// rendering; this adds clicking (provenance), panes side by side, the
// stepper's buttons and the explorer's re-run.

function linesOf(node) {
  const data = node.getAttribute && node.getAttribute("data-tc-lines");
  if (data) return data.split(/\s+/).filter(Boolean);
  const cls = (node.getAttribute && node.getAttribute("class")) || "";
  return (cls.match(/\btc-l(\d+)\b/g) || []).map((c) => c.slice(4));
}

function select(el, lines) {
  el.querySelectorAll(".tc-sel").forEach((n) => n.classList.remove("tc-sel"));
  for (const line of lines) {
    el.querySelectorAll(".tc-l" + line).forEach((n) => n.classList.add("tc-sel"));
  }
  el.setAttribute("data-tc-selected", lines.join(" "));
}

function setupSelection(el) {
  el.addEventListener("click", (event) => {
    if (event.target.closest("button, select, textarea, input, label, .tc-splitter")) return;
    let node = event.target;
    while (node && node !== el) {
      const lines = linesOf(node);
      if (lines.length) { select(el, lines); return; }
      node = node.parentNode;
    }
    select(el, []);
  });
}

// Compiler Explorer's layout: Source on the left (sticky while the right pane scrolls),
// Kernels (or the output code) on the right, a splitter between them to drag; each pane
// picks any stage; "all stages" shows every pane in a grid.
function setupPanes(el) {
  el.querySelectorAll(".tc-stageview").forEach((view) => {
    const grid = view.querySelector(".tc-grid");
    const panes = Array.from(grid.children).filter((c) => c.dataset.tcStage);
    const has = (s) => panes.some((p) => p.dataset.tcStage === s);
    const bar = document.createElement("div");
    bar.className = "tc-toolbar";
    const pick = (value) => {
      const s = document.createElement("select");
      panes.forEach((p) => {
        const o = document.createElement("option");
        o.value = p.dataset.tcStage;
        o.textContent = p.querySelector(".tc-title").textContent;
        s.appendChild(o);
      });
      s.value = value;
      return s;
    };
    const left = pick(has("source") ? "source" : panes[0].dataset.tcStage);
    const right = pick(["kernels", "output", "fx", "bytecode"].find(has) || panes[panes.length - 1].dataset.tcStage);
    const all = document.createElement("input");
    all.type = "checkbox";
    const allLabel = document.createElement("label");
    allLabel.append(all, " all stages");
    const splitter = document.createElement("div");
    splitter.className = "tc-splitter";
    splitter.title = "drag to resize the panes";
    splitter.addEventListener("mousedown", (down) => {
      down.preventDefault();
      const box = grid.getBoundingClientRect();
      const move = (e) => {
        const pct = Math.min(85, Math.max(15, ((e.clientX - box.left) / box.width) * 100));
        grid.style.setProperty("--tc-left", pct + "%");
      };
      const up = () => { window.removeEventListener("mousemove", move); window.removeEventListener("mouseup", up); };
      window.addEventListener("mousemove", move);
      window.addEventListener("mouseup", up);
    });
    const apply = () => {
      const two = !all.checked;
      left.style.display = right.style.display = two ? "" : "none";
      grid.classList.toggle("tc-two", two);
      splitter.style.display = two ? "" : "none";
      panes.forEach((p) => {
        const stage = p.dataset.tcStage;
        const isLeft = stage === left.value, isRight = stage === right.value && !isLeft;
        p.style.display = !two || isLeft || isRight ? "" : "none";
        p.classList.toggle("tc-left", two && isLeft);
        p.style.order = two ? (isLeft ? 1 : 3) : "";
      });
      splitter.style.order = 2;
    };
    [left, right, all].forEach((s) => s.addEventListener("change", apply));
    bar.append("Left ", left, " Right ", right, " ", allLabel, " ", filterBox(view));
    view.insertBefore(bar, grid);
    grid.appendChild(splitter);
    apply();
  });
}

// A filter by name over the kernel list, the FX graph (code and picture), the IR and the output
// code: what does not match hides (graph nodes fade); folded parts holding a match open.
function filterBox(view) {
  const box = document.createElement("input");
  box.type = "search";
  box.className = "tc-filter";
  box.placeholder = "filter by name (node, buffer, kernel)";
  const count = document.createElement("span");
  count.className = "tc-filter-count";
  const has = (n, q) => n.textContent.toLowerCase().includes(q);
  box.addEventListener("input", () => {
    const q = box.value.trim().toLowerCase();
    const kernels = Array.from(view.querySelectorAll(".tc-kernel"));
    kernels.forEach((k) => (k.style.display = !q || has(k, q) ? "" : "none"));
    view.querySelectorAll("[data-tc-stage='fx'] .tc-row, [data-tc-stage='ir'] .tc-row, [data-tc-stage='output'] .tc-row")
      .forEach((r) => (r.style.display = !q || has(r, q) ? "" : "none"));
    view.querySelectorAll("[data-tc-stage='fx'] g.node, [data-tc-stage='fusion'] g.node")
      .forEach((g) => (g.style.opacity = !q || has(g, q) ? "" : "0.2"));
    view.querySelectorAll("details.tc-fold").forEach((d) => {
      if (!d.dataset.tcWasOpen) d.dataset.tcWasOpen = d.open ? "1" : "0";
      d.open = q ? has(d, q) : d.dataset.tcWasOpen === "1";
    });
    const shown = kernels.filter((k) => k.style.display !== "none").length;
    count.textContent = q ? ` ${shown} of ${kernels.length} kernels match` : "";
  });
  const wrap = document.createElement("span");
  wrap.append(box, count);
  return wrap;
}

function setupStepper(el) {
  el.querySelectorAll(".tc-stepper").forEach((box) => {
    const steps = Array.from(box.querySelectorAll(".tc-step"));
    if (!steps.length) return;
    let i = 0;
    const bar = document.createElement("div");
    bar.className = "tc-toolbar";
    const prev = document.createElement("button"), next = document.createElement("button");
    const label = document.createElement("span");
    prev.textContent = "Previous"; next.textContent = "Next";
    const show = () => {
      steps.forEach((s, k) => (s.style.display = k === i ? "" : "none"));
      label.textContent = ` step ${i + 1} of ${steps.length}`;
      select(el, linesOf(steps[i]));
    };
    prev.addEventListener("click", () => { i = Math.max(0, i - 1); show(); });
    next.addEventListener("click", () => { i = Math.min(steps.length - 1, i + 1); show(); });
    bar.append(prev, " ", next, label);
    box.insertBefore(bar, steps[0]);
    show();
  });
}

function setupRerun(el, model) {
  const box = el.querySelector(".tc-explorer");
  if (!box || !model.get("source")) return;
  const wrap = document.createElement("div");
  wrap.className = "tc-rerun";
  const area = document.createElement("textarea");
  area.value = model.get("source");
  area.rows = Math.min(20, area.value.split("\n").length + 1);
  const button = document.createElement("button");
  button.textContent = "Re-run";
  const status = document.createElement("span");
  status.className = "tc-status";
  status.textContent = " " + (model.get("status") || "edit the function, then re-run to see the graph count");
  button.addEventListener("click", () => {
    model.set("source", area.value);
    model.save_changes();
    status.textContent = " running...";
    model.send({ type: "rerun", source: area.value });
  });
  wrap.append(area, button, status);
  box.appendChild(wrap);
}

function render({ model, el }) {
  el.classList.add("tc-live");
  const draw = () => {
    el.innerHTML = model.get("html");
    setupPanes(el);
    setupStepper(el);
    setupRerun(el, model);
  };
  setupSelection(el);
  draw();
  model.on("change:html", draw);
  model.on("change:status", () => {
    const s = el.querySelector(".tc-status");
    if (s) s.textContent = " " + model.get("status");
  });
}

export default { render };
