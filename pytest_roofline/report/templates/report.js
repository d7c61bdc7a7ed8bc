/* pytest-roofline report: sort and filter the test table. The page reads the same without it. */
(function () {
  "use strict";
  var table = document.getElementById("test-table");
  if (!table || !table.tBodies.length) { return; }
  document.documentElement.classList.add("js");
  var body = table.tBodies[0];
  var rows = Array.prototype.slice.call(body.rows).filter(function (row) {
    return row.hasAttribute("data-decision");
  });
  var headers = Array.prototype.slice.call(table.tHead.rows[0].cells);
  var text = document.getElementById("filter-text");
  var decision = document.getElementById("filter-decision");
  var shown = document.getElementById("filter-count");

  rows.forEach(function (row) {
    row.setAttribute("data-search", row.textContent.replace(/\s+/g, " ").toLowerCase());
  });

  function keyOf(row, column) {
    var cell = row.cells[column];
    var key = cell ? cell.getAttribute("data-v") : null;
    return key === null ? (cell ? cell.textContent.trim() : "") : key;
  }

  function sortBy(column, numeric, direction) {
    var order = rows.slice().sort(function (a, b) {
      var x = keyOf(a, column);
      var y = keyOf(b, column);
      // Rows without a value go last whichever way the column is sorted.
      if (x === "" || y === "") {
        if (x !== y) { return x === "" ? 1 : -1; }
      } else {
        var c = numeric ? parseFloat(x) - parseFloat(y) : x.localeCompare(y);
        if (c !== 0) { return c * direction; }
      }
      return Number(a.getAttribute("data-order")) - Number(b.getAttribute("data-order"));
    });
    var fragment = document.createDocumentFragment();
    order.forEach(function (row) { fragment.appendChild(row); });
    body.appendChild(fragment);
  }

  headers.forEach(function (th, column) {
    var kind = th.getAttribute("data-sort");
    if (!kind) { return; }
    th.tabIndex = 0;
    function activate() {
      var direction = th.getAttribute("aria-sort") === "ascending" ? -1 : 1;
      headers.forEach(function (other) { other.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", direction === 1 ? "ascending" : "descending");
      sortBy(column, kind === "num", direction);
    }
    th.addEventListener("click", activate);
    th.addEventListener("keydown", function (event) {
      if (event.key === "Enter" || event.key === " ") { event.preventDefault(); activate(); }
    });
  });

  function applyFilter() {
    var needle = text ? text.value.trim().toLowerCase() : "";
    var wanted = decision ? decision.value : "";
    var count = 0;
    rows.forEach(function (row) {
      var d = row.getAttribute("data-decision");
      var match = (!wanted || d === wanted || (wanted === "nonship" && (d === "rollback" || d === "escalate"))) &&
        (!needle || row.getAttribute("data-search").indexOf(needle) !== -1);
      row.hidden = !match;
      if (match) { count += 1; }
    });
    if (shown) { shown.textContent = count + " of " + rows.length + " tests shown"; }
  }

  if (text) { text.addEventListener("input", applyFilter); }
  if (decision) { decision.addEventListener("change", applyFilter); }
  applyFilter();
})();
