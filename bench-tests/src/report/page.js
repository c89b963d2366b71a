"use strict";
// Every table sorts by the column whose header is clicked (or given Enter): by the number
// a cell starts with, its unit scaled (so that 900 ms comes before 1.2 s), else by text,
// numbers within it in order (q9 before q10); cells that hold no figure (empty, unknown,
// none, not run) go last either way. A second click reverses. A column with no header
// (a table of one figure a row) does not sort.
(function () {
  const scale = {
    ns: 1e-6, "\u00b5s": 1e-3, us: 1e-3, ms: 1, s: 1e3, min: 6e4, h: 3.6e6,
    B: 1, KiB: 1024, MiB: 1048576, GiB: 1073741824, TiB: 1099511627776,
    K: 1e3, M: 1e6, G: 1e9,
    "": 1, "%": 1, x: 1,
  };
  const collator = new Intl.Collator("en", { numeric: true });
  // A figure is a number, a unit this page knows (or none) and then nothing, a space or
  // what follows a figure ("/ 0.36 s", "/h", "(2 to 3)"); a run id or a date that starts
  // with digits ("20261207T0200", "2026-12-07") is text.
  function numberOf(text) {
    const match = text.trim().replace(/^\$/, "").match(/^([-+]?\d[\d,]*(?:\.\d+)?(?:e[+-]?\d+)?)\s*([A-Za-z\u00b5%]*)(.*)$/);
    if (!match || !(match[2] in scale) || !/^($|[\s\/(,;])/.test(match[3])) return null;
    const value = parseFloat(match[1].replace(/,/g, ""));
    return Number.isFinite(value) ? value * scale[match[2]] : null;
  }
  function sortKey(cell) {
    const text = cell.textContent.trim();
    const number = numberOf(text);
    if (number !== null) return [0, number, ""];
    if (/^(|-|unknown.*|none|n\/a|not (run|measured).*)$/i.test(text)) return [2, 0, ""];
    return [1, 0, text.toLowerCase()];
  }
  function compare(a, b) {
    if (a[0] !== b[0]) return a[0] - b[0];
    if (a[1] !== b[1]) return a[1] - b[1];
    return collator.compare(a[2], b[2]);
  }
  for (const table of document.querySelectorAll("table")) {
    if (!table.tHead || table.tBodies.length === 0) continue;
    const headers = Array.from(table.tHead.rows[0].cells);
    headers.forEach(function (header, column) {
      if (header.textContent.trim() === "") return;
      header.classList.add("sortable");
      header.tabIndex = 0;
      header.title = "sort by this column";
      const sort = function () {
        const ascending = header.getAttribute("aria-sort") !== "ascending";
        headers.forEach(function (other) { other.removeAttribute("aria-sort"); });
        header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
        const body = table.tBodies[0];
        const rows = Array.from(body.rows).map(function (row, index) {
          return { row: row, index: index, key: row.cells[column] ? sortKey(row.cells[column]) : [2, 0, ""] };
        });
        rows.sort(function (a, b) {
          // Unknowns last in both directions; ties keep their order.
          if (a.key[0] === 2 || b.key[0] === 2) return a.key[0] - b.key[0] || a.index - b.index;
          const order = compare(a.key, b.key);
          return (ascending ? order : -order) || a.index - b.index;
        });
        for (const entry of rows) body.appendChild(entry.row);
      };
      header.addEventListener("click", sort);
      header.addEventListener("keydown", function (event) {
        if (event.key === "Enter") sort();
      });
    });
  }
  // A link to a figure's samples opens their list: on the click (the address may not
  // change, when it already names the list), and on an address that names one.
  function open(id) {
    const target = id && document.getElementById(id);
    if (target && target.tagName === "DETAILS") target.open = true;
  }
  function openTarget() {
    try {
      open(decodeURIComponent(location.hash.slice(1)));
    } catch (error) {
      // An address that is not percent-encoded names no list.
    }
  }
  for (const link of document.querySelectorAll("a.samples")) {
    link.addEventListener("click", function () {
      open(link.getAttribute("href").slice(1));
    });
  }
  window.addEventListener("hashchange", openTarget);
  openTarget();
})();
