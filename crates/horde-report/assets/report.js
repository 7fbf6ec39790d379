// report.html's (and the compare page's) behaviour: pages by the URL's hash (no server
// needed), sortable and searchable tables paged so that thousands of rows stay fast, and the
// charts drawn with uPlot from the JSON block `report-charts` when their page is first shown. Everything it shows is already in
// the page or in that JSON: it never fetches anything, and it only ever sets text, never HTML.
(function () {
  "use strict";
  document.documentElement.classList.add("js");

  var ROWS_PER_PAGE = 100;
  var CHART_HEIGHT = 260;
  var chartData = {};
  var plots = [];
  var syncGroups = {};
  var syncingZoom = false;

  // ---- numbers -----------------------------------------------------------------------
  function round(value) {
    if (value === null || value === undefined || isNaN(value)) {
      return "-";
    }
    var abs = Math.abs(value);
    var decimals = abs >= 100 ? 0 : abs >= 10 ? 1 : abs >= 1 ? 2 : 3;
    return value.toFixed(decimals);
  }

  // Tick labels with the decimals their step needs: 0, 0.5, 1 or 0, 20000, 40000.
  function tickLabels(plot, splits) {
    var step = splits.length > 1 ? Math.abs(splits[1] - splits[0]) : 1;
    var decimals = step >= 1 || step === 0 ? 0 : Math.min(6, Math.ceil(-Math.log10(step) - 1e-9));
    return splits.map(function (v) {
      return v === null ? "" : v.toFixed(decimals);
    });
  }

  // A log axis' ticks: 0.001, 0.01, 1, 10, 100 (three significant digits, no trailing zeros).
  function logTickLabels(plot, splits) {
    return splits.map(function (v) {
      return v === null ? "" : String(+v.toPrecision(3));
    });
  }

  // Round steps for each kind of axis: seconds of a run, whole users, 1-2-5 otherwise.
  var TIME_STEPS = [0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 28800, 86400];
  var WHOLE_STEPS = [];
  for (var power = 1; power <= 1e9; power *= 10) {
    WHOLE_STEPS.push(power, 2 * power, 5 * power);
  }

  function percentileLabel(x) {
    // The spectrum's x is -log10(1 - q): 1 is p90, 2 is p99, 3 is p99.9.
    var q = 100 * (1 - Math.pow(10, -x));
    var text = q.toFixed(Math.max(0, Math.round(x) - 1));
    return (text.indexOf(".") >= 0 ? text.replace(/\.?0+$/, "") : text) + "%";
  }

  // 0.5 s, 90 s, then m:ss and h:mm:ss.
  function durationLabel(seconds) {
    if (seconds === null) {
      return "";
    }
    if (seconds < 120) {
      return +seconds.toFixed(1) + " s";
    }
    var whole = Math.round(seconds);
    var two = function (n) {
      return (n < 10 ? "0" : "") + n;
    };
    var minutes = Math.floor(whole / 60) % 60;
    var hours = Math.floor(whole / 3600);
    return (hours > 0 ? hours + ":" + two(minutes) : minutes) + ":" + two(whole % 60);
  }

  // ---- charts ------------------------------------------------------------------------
  // A reader's zoom, by sync group: the live dashboard draws the charts again each interval,
  // and the zoom stays (a double-click, back to the whole run, forgets it).
  var zooms = {};
  var creatingPlot = false;

  function rememberZoom(key, plot, min, max) {
    var xs = plot.data[0];
    var whole = !xs || xs.length === 0 || (min <= xs[0] && max >= xs[xs.length - 1]);
    if (whole) {
      delete zooms[key];
    } else {
      zooms[key] = { min: min, max: max };
    }
  }

  function zoomTogether(key) {
    return function (plot, scaleKey) {
      if (scaleKey !== "x" || syncingZoom || creatingPlot) {
        return;
      }
      syncingZoom = true;
      var min = plot.scales.x.min;
      var max = plot.scales.x.max;
      rememberZoom(key, plot, min, max);
      (syncGroups[key] || []).forEach(function (other) {
        if (other !== plot) {
          other.setScale("x", { min: min, max: max });
        }
      });
      syncingZoom = false;
    };
  }

  function xAxis(spec) {
    if (spec.kind === "spectrum") {
      return {
        label: "percentile",
        splits: function (plot, index, min, max) {
          var splits = [];
          for (var x = Math.ceil(min); x <= Math.floor(max); x++) {
            splits.push(x);
          }
          return splits;
        },
        values: function (plot, splits) {
          return splits.map(percentileLabel);
        },
      };
    }
    if (spec.kind === "histogram") {
      return {
        label: "latency (ms, log scale)",
        values: function (plot, splits) {
          return splits.map(function (v) {
            return v === null ? "" : String(+v.toPrecision(3));
          });
        },
      };
    }
    return {
      label: "time from the start",
      incrs: TIME_STEPS,
      values: function (plot, splits) {
        return splits.map(durationLabel);
      },
    };
  }

  // ---- legends: the cursor's point, else a resting one --------------------------------
  // uPlot's legend shows "-" for every series until the cursor is over the chart: a
  // screenshot or a printed page would read nothing. Without a cursor it shows a resting point:
  // the last one of a chart over time, p99 on a spectrum, the tallest bin of a histogram.
  // Computed at each call, not kept: a chart whose data grows (a live page) rests on its new
  // last point.
  function restingIndex(spec) {
    var at = -1;
    var hasValue = function (i) {
      return spec.series.some(function (s) {
        return s.values[i] !== null && s.values[i] !== undefined;
      });
    };
    if (spec.kind === "spectrum") {
      spec.x.forEach(function (x, i) {
        if (hasValue(i) && (at < 0 || Math.abs(x - 2) < Math.abs(spec.x[at] - 2))) {
          at = i;
        }
      });
    } else if (spec.kind === "histogram") {
      var values = spec.series[0].values;
      values.forEach(function (v, i) {
        if (v !== null && (at < 0 || v > values[at])) {
          at = i;
        }
      });
    } else {
      for (var i = spec.x.length - 1; i >= 0 && at < 0; i--) {
        if (hasValue(i)) {
          at = i;
        }
      }
    }
    return at;
  }

  function legendX(spec) {
    return function (plot, v, seriesIndex, idx) {
      var at = idx === null || idx === undefined ? restingIndex(spec) : idx;
      var x = spec.x[at];
      if (x === undefined || x === null) {
        return "-";
      }
      if (spec.kind === "spectrum") {
        return percentileLabel(x);
      }
      if (spec.kind === "histogram") {
        return round(x) + " ms";
      }
      var text = durationLabel(x);
      var notes = [];
      if (at === spec.x.length - 1 && idx !== at) {
        notes.push("last");
      }
      if (spec.partial && x === spec.partial.x) {
        notes.push("partial: " + round(spec.partial.seconds) + " s of " + round(spec.partial.of_seconds) + " s");
      }
      return notes.length ? text + " (" + notes.join(", ") + ")" : text;
    };
  }

  function legendValue(spec, s) {
    return function (plot, v, seriesIndex, idx) {
      var value = idx === null || idx === undefined ? s.values[restingIndex(spec)] : v;
      if (value === null || value === undefined) {
        return "-";
      }
      return (s.unit === "users" ? String(Math.round(value)) : round(value)) + " " + s.unit;
    };
  }

  // The run ended part-way through the last point: its rates are over the time it measured
  // (summed counts / that time), and a dashed line with a note says the point is shorter.
  function markPartialPoint(options, spec) {
    if (spec.kind !== "time") {
      return;
    }
    options.hooks.draw = (options.hooks.draw || []).concat(function (plot) {
      var partial = spec.partial;
      if (!partial) {
        return;
      }
      var x = plot.valToPos(partial.x, "x", true);
      var top = plot.bbox.top;
      var bottom = top + plot.bbox.height;
      if (!(x >= plot.bbox.left - 1 && x <= plot.bbox.left + plot.bbox.width + 1)) {
        return;
      }
      var context = plot.ctx;
      context.save();
      context.strokeStyle = "#777777";
      context.lineWidth = devicePixelRatio;
      context.setLineDash([4 * devicePixelRatio, 3 * devicePixelRatio]);
      context.beginPath();
      context.moveTo(x, top);
      context.lineTo(x, bottom);
      context.stroke();
      context.fillStyle = "#555555";
      context.font = 11 * devicePixelRatio + "px system-ui, sans-serif";
      context.textAlign = "right";
      context.textBaseline = "top";
      context.fillText("partial: last " + round(partial.seconds) + " s of " + round(partial.of_seconds) + " s", x - 4 * devicePixelRatio, top + 4 * devicePixelRatio);
      context.restore();
    });
  }

  // ---- the compare page's charts: x is the rows of a metric block ---------------------
  // `change`: each row's change as a dot coloured by its verdict, its interval as a whisker,
  // the tolerance as a shaded band around 0. `runs`: each run's value, A's and B's side by
  // side in the row's slot. Dots and whiskers are drawn by a hook on uPlot's canvas.
  function rowLabel(spec, x) {
    var i = Math.round(x);
    return spec.labels[i] === undefined ? "" : spec.labels[i];
  }

  function rowsAxis(spec, width) {
    var ticks = spec.ticks || spec.labels;
    var axis = {
      label: spec.x_label || (spec.kind === "change" ? "" : "row"),
      splits: function () {
        return spec.labels.map(function (label, i) {
          return i;
        });
      },
      grid: { show: false },
    };
    // Labels that do not fit their slot stand upright (up to ROTATED_CHARS characters)
    // rather than each being cut to its first few characters.
    var slot = (width - 100) / Math.max(1, spec.labels.length);
    var longest = ticks.reduce(function (most, t) {
      return Math.max(most, t.length);
    }, 0);
    var room = Math.max(3, Math.floor(slot / 7));
    var rotate = longest > room;
    if (rotate) {
      room = ROTATED_CHARS;
      axis.rotate = -90;
      axis.size = 14 + 7 * Math.min(longest, room);
    }
    axis.values = function (plot, splits) {
      return splits.map(function (x) {
        var label = ticks[Math.round(x)] === undefined ? "" : ticks[Math.round(x)];
        return label.length > room ? label.slice(0, room - 1) + "…" : label;
      });
    };
    return axis;
  }

  var ROTATED_CHARS = 24;

  // The y range of a `change` chart without a range of its own: every value, interval and
  // band, 0 included on a linear axis; on a log axis (positive values spanning orders of
  // magnitude) the positive ones, so that a whisker reaching 0 stops at the axis' bottom.
  function changeRange(spec) {
    var all = spec.log ? [] : [0].concat(spec.band || []);
    spec.series[0].values.concat(spec.low, spec.high).forEach(function (v) {
      if (v !== null && isFinite(v) && (!spec.log || v > 0)) {
        all.push(v);
      }
    });
    var low = Math.min.apply(null, all);
    var high = Math.max.apply(null, all);
    if (spec.log) {
      return all.length ? uPlot.rangeLog(low, high, 10, true) : [1, 10];
    }
    var pad = (high - low) * 0.08 || 1;
    return [low - pad, high + pad];
  }

  // A value beyond the chart's range (spec.range) is drawn at its edge; `arrow` marks it.
  function arrow(context, x, atY, up) {
    var size = 6 * devicePixelRatio;
    var tip = up ? -size : size;
    context.beginPath();
    context.moveTo(x, atY + tip);
    context.lineTo(x - size, atY);
    context.lineTo(x + size, atY);
    context.closePath();
    context.fill();
  }

  function drawChange(plot, spec) {
    var context = plot.ctx;
    var left = plot.bbox.left;
    var right = left + plot.bbox.width;
    // What lies beyond the axis (spec.range, or a log axis' bottom) is drawn at its edge.
    var range = spec.range || [plot.scales.y.min, plot.scales.y.max];
    var clip = function (v) {
      return Math.min(range[1], Math.max(range[0], v));
    };
    var y = function (v) {
      return plot.valToPos(clip(v), "y", true);
    };
    context.save();
    if (spec.band) {
      context.fillStyle = "rgba(85, 85, 85, 0.12)";
      context.fillRect(left, y(spec.band[1]), right - left, y(spec.band[0]) - y(spec.band[1]));
    }
    if (!spec.log) {
      context.strokeStyle = "#555555";
      context.lineWidth = 1;
      context.beginPath();
      context.moveTo(left, y(0));
      context.lineTo(right, y(0));
      context.stroke();
    }
    var values = spec.series[0].values;
    values.forEach(function (value, i) {
      if (value === null) {
        return;
      }
      var x = plot.valToPos(spec.x[i], "x", true);
      context.strokeStyle = context.fillStyle = spec.colors[i];
      context.lineWidth = 2 * devicePixelRatio;
      if (spec.low[i] !== null && spec.high[i] !== null) {
        var cap = 5 * devicePixelRatio;
        context.beginPath();
        context.moveTo(x, y(spec.low[i]));
        context.lineTo(x, y(spec.high[i]));
        [spec.low[i], spec.high[i]].forEach(function (end) {
          if (end === clip(end)) {
            context.moveTo(x - cap, y(end));
            context.lineTo(x + cap, y(end));
          }
        });
        context.stroke();
        [spec.low[i], spec.high[i]].forEach(function (end) {
          if (end !== clip(end)) {
            arrow(context, x, y(end), end > range[1]);
          }
        });
      }
      if (value !== clip(value)) {
        arrow(context, x, y(value), value > range[1]);
        return;
      }
      context.beginPath();
      context.arc(x, y(value), 4.5 * devicePixelRatio, 0, 2 * Math.PI);
      context.fill();
    });
    context.restore();
  }

  function drawRows(element, spec) {
    var yRange = function (plot, min, max) {
      if (spec.kind === "change" && spec.range) {
        return spec.range;
      }
      if (spec.kind === "change") {
        return changeRange(spec);
      }
      if (spec.log) {
        return uPlot.rangeLog(min, max, 10, true);
      }
      return [0, max > 0 ? max * 1.08 : 1];
    };
    var scales = {
      x: { time: false, range: [-0.6, spec.labels.length - 0.4] },
      y: { distr: spec.log ? 3 : 1, range: yRange },
    };
    var series = [
      {
        label: "row",
        value: function (plot, x, seriesIndex, idx) {
          var at = idx === null || idx === undefined ? restingIndex(spec) : idx;
          return at < 0 ? "-" : rowLabel(spec, spec.x[at]);
        },
      },
    ];
    spec.series.forEach(function (s, k) {
      series.push({
        label: s.label,
        scale: "y",
        stroke: s.color,
        width: 0,
        paths: function () {
          return null;
        },
        // The change chart draws its own dots, in the verdicts' colours.
        points: { show: spec.kind === "runs", size: 7, width: 1, fill: s.color, stroke: s.color },
        value: legendValue(spec, s),
      });
    });
    var options = {
      title: spec.title,
      width: Math.max(320, element.clientWidth || 800),
      height: CHART_HEIGHT,
      scales: scales,
      axes: [rowsAxis(spec, Math.max(320, element.clientWidth || 800)), { scale: "y", label: spec.unit, size: 64, values: spec.log ? logTickLabels : tickLabels }],
      series: series,
      legend: { live: true },
      cursor: { drag: { x: false, y: false } },
      hooks: spec.kind === "change" ? { draw: [function (plot) { drawChange(plot, spec); }] } : {},
    };
    var data = [spec.x].concat(
      spec.series.map(function (s) {
        return s.values;
      })
    );
    plots.push({ plot: new uPlot(options, data, element), element: element });
  }

  function draw(element) {
    var id = element.getAttribute("data-chart");
    var spec = chartData[id];
    if (element.getAttribute("data-drawn")) {
      return;
    }
    element.setAttribute("data-drawn", "1");
    if (!spec || !spec.x || spec.x.length === 0 || typeof uPlot === "undefined") {
      element.classList.add("empty");
      element.textContent = (spec ? spec.title + ": " : "") + "no data to chart.";
      return;
    }
    if (spec.kind === "change" || spec.kind === "runs") {
      drawRows(element, spec);
      return;
    }
    var units = [];
    spec.series.forEach(function (s) {
      if (units.indexOf(s.unit) < 0) {
        units.push(s.unit);
      }
    });
    var scales = { x: { time: false } };
    if (spec.kind === "histogram") {
      scales.x.distr = 3;
    }
    units.forEach(function (unit) {
      scales[unit] = {
        range: function (plot, min, max) {
          return [0, max > 0 ? max * 1.05 : 1];
        },
      };
    });
    var axes = [xAxis(spec)];
    units.slice(0, 2).forEach(function (unit, i) {
      var axis = { scale: unit, label: unit, side: i === 0 ? 3 : 1, size: 64, grid: { show: i === 0 }, values: tickLabels };
      if (unit === "users") {
        axis.incrs = WHOLE_STEPS;
      }
      axes.push(axis);
    });
    var steps = spec.kind === "histogram" ? uPlot.paths.stepped({ align: 1 }) : undefined;
    var series = [{ label: axes[0].label, value: legendX(spec) }];
    spec.series.forEach(function (s) {
      series.push({
        label: s.label,
        scale: s.unit,
        stroke: s.color,
        width: 1.5,
        paths: steps,
        points: { show: spec.x.length < 60 },
        value: legendValue(spec, s),
      });
    });
    var options = {
      title: spec.title,
      width: Math.max(320, element.clientWidth || 800),
      height: CHART_HEIGHT,
      scales: scales,
      axes: axes,
      series: series,
      legend: { live: true },
      cursor: spec.sync ? { sync: { key: spec.sync } } : {},
      hooks: spec.sync ? { setScale: [zoomTogether(spec.sync)] } : {},
    };
    var data = [spec.x].concat(
      spec.series.map(function (s) {
        return s.values;
      })
    );
    markPartialPoint(options, spec);
    creatingPlot = true;
    var plot = new uPlot(options, data, element);
    creatingPlot = false;
    plots.push({ plot: plot, element: element });
    if (spec.sync) {
      (syncGroups[spec.sync] = syncGroups[spec.sync] || []).push(plot);
      if (zooms[spec.sync]) {
        plot.setScale("x", zooms[spec.sync]);
      }
    }
  }

  function drawCharts(page) {
    page.querySelectorAll(".chart").forEach(draw);
  }

  var resizeTimer = null;
  window.addEventListener("resize", function () {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(function () {
      plots.forEach(function (p) {
        if (p.element.offsetParent !== null) {
          p.plot.setSize({ width: Math.max(320, p.element.clientWidth), height: CHART_HEIGHT });
        }
      });
    }, 150);
  });

  // ---- pages -------------------------------------------------------------------------
  // `refreshing`: the live dashboard put new content in place; the reader stays where they were.
  function showPage(refreshing) {
    var pages = document.querySelectorAll(".page");
    var id = "";
    try {
      id = decodeURIComponent(location.hash.slice(1));
    } catch (err) {
      id = "";
    }
    var current = id ? document.getElementById(id) : null;
    if (!current || !current.classList.contains("page")) {
      current = pages[0];
    }
    if (!current) {
      return;
    }
    pages.forEach(function (page) {
      page.classList.toggle("current", page === current);
    });
    var section = /^(request|group)-/.test(current.id) ? "requests" : current.id;
    document.querySelectorAll("#nav a").forEach(function (link) {
      link.classList.toggle("current", link.getAttribute("data-page") === section);
    });
    drawCharts(current);
    if (!refreshing) {
      window.scrollTo(0, 0);
    }
  }
  window.addEventListener("hashchange", function () {
    showPage(false);
  });

  // ---- tables ------------------------------------------------------------------------
  function cellKey(row, column, numeric) {
    var cell = row.cells[column];
    var text = cell ? cell.textContent.trim() : "";
    if (!numeric) {
      return text.toLowerCase();
    }
    var value = parseFloat(text);
    return isNaN(value) ? -Infinity : value;
  }

  // Sorting by a header's click; with `paged`, a search box and pages of ROWS_PER_PAGE rows:
  // only the rows of the current page are in the document, so 5,000 names stay fast.
  function enhanceTable(table, paged, search, pager, counter) {
    var body = table.querySelector("tbody.rows");
    if (!body) {
      return;
    }
    var items = Array.prototype.slice.call(body.rows).map(function (row, index) {
      return { row: row, index: index, name: cellKey(row, 0, false), keys: {} };
    });
    var state = { shown: items, page: 0, column: -1, direction: 1 };
    var remembered = tableStates[table.id] || {};
    tableStates[table.id] = remembered;

    function render() {
      var rows = state.shown;
      var pages = Math.max(1, Math.ceil(rows.length / ROWS_PER_PAGE));
      state.page = Math.min(state.page, pages - 1);
      var first = paged ? state.page * ROWS_PER_PAGE : 0;
      var slice = paged ? rows.slice(first, first + ROWS_PER_PAGE) : rows;
      var fragment = document.createDocumentFragment();
      slice.forEach(function (item) {
        fragment.appendChild(item.row);
      });
      body.textContent = "";
      body.appendChild(fragment);
      if (counter) {
        counter.textContent =
          rows.length === items.length
            ? items.length + " requests"
            : rows.length + " of " + items.length + " requests match";
      }
      if (pager) {
        pager.textContent = "";
        if (pages > 1) {
          var previous = document.createElement("button");
          previous.textContent = "previous";
          previous.disabled = state.page === 0;
          previous.addEventListener("click", function () {
            state.page -= 1;
            render();
          });
          var next = document.createElement("button");
          next.textContent = "next";
          next.disabled = state.page >= pages - 1;
          next.addEventListener("click", function () {
            state.page += 1;
            render();
          });
          var where = document.createElement("span");
          where.textContent =
            " rows " + (first + 1) + "–" + (first + slice.length) + " of " + rows.length + " (page " + (state.page + 1) + " of " + pages + ") ";
          pager.appendChild(previous);
          pager.appendChild(where);
          pager.appendChild(next);
        }
      }
    }

    function filter() {
      var needle = search ? search.value.trim().toLowerCase() : "";
      state.shown = needle
        ? items.filter(function (item) {
            return item.name.indexOf(needle) >= 0;
          })
        : items.slice();
      state.page = 0;
      render();
    }

    table.querySelectorAll("thead th").forEach(function (header, column) {
      var kind = header.getAttribute("data-sort");
      if (!kind) {
        return;
      }
      header.classList.add("sortable");
      header.setAttribute("title", "sort");
      function sortBy(direction) {
        var numeric = kind === "num";
        state.direction = direction;
        state.column = column;
        remembered.column = column;
        remembered.direction = direction;
        items.forEach(function (item) {
          if (!(column in item.keys)) {
            item.keys[column] = cellKey(item.row, column, numeric);
          }
        });
        items.sort(function (a, b) {
          var x = a.keys[column];
          var y = b.keys[column];
          return (x < y ? -1 : x > y ? 1 : a.index - b.index) * (x === y ? 1 : direction);
        });
        table.querySelectorAll("thead th").forEach(function (th) {
          th.removeAttribute("aria-sort");
        });
        header.setAttribute("aria-sort", direction > 0 ? "ascending" : "descending");
        filter();
      }
      header.addEventListener("click", function () {
        sortBy(state.column === column ? -state.direction : kind === "num" ? -1 : 1);
      });
      if (remembered.column === column) {
        sortBy(remembered.direction);
      }
    });
    if (search) {
      search.addEventListener("input", filter);
    }
    if (search && search.value) {
      filter();
    } else {
      render();
    }
  }

  // ---- start: once, and again each time the live dashboard puts new content in place -----
  // A table's sorting outlives a refresh (the search box's text is carried over by live.js).
  var tableStates = {};

  function start(refreshing) {
    try {
      chartData = JSON.parse(document.getElementById("report-charts").textContent);
    } catch (err) {
      chartData = {};
    }
    plots.forEach(function (p) {
      p.plot.destroy();
    });
    plots = [];
    syncGroups = {};
    enhanceTable(
      document.getElementById("requests-table") || document.createElement("table"),
      true,
      document.getElementById("request-search"),
      document.getElementById("requests-pager"),
      document.getElementById("requests-shown")
    );
    var groups = document.getElementById("groups-table");
    if (groups) {
      enhanceTable(groups, false, null, null, null);
    }
    showPage(refreshing);
  }

  start(false);
  window.hordeReport = {
    refresh: function () {
      start(true);
    },
    // A drawn chart's x range, as the reader sees it (read by the tests).
    xRange: function (chartId) {
      var found = plots.filter(function (p) {
        return p.element.getAttribute("data-chart") === chartId;
      })[0];
      return found ? [found.plot.scales.x.min, found.plot.scales.x.max] : null;
    },
  };
})();
