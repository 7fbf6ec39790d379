// The dashboard's page (`horde run --dashboard`): the report exactly as report.html shows it,
// brought up to date by the server that sent it. Each update is a server-sent event carrying
// the report's parts (header, tabs, pages, chart data), rendered and escaped by horde as
// report.html is; they replace the page's own, and report.js draws them again. The last update
// is the final report, the same content as report.html. This script talks only to the server
// that sent the page (the Content-Security-Policy allows nothing else).
(function () {
  "use strict";
  var meta = document.querySelector('meta[name="horde-dashboard"]');
  if (!meta || typeof EventSource === "undefined" || !window.hordeReport) {
    return;
  }
  var settings = JSON.parse(meta.getAttribute("content"));
  var query = "?token=" + encodeURIComponent(settings.token);
  var shown = String(settings.version);
  var ended = false;
  // A stop was asked and taken: live updates until the final report say so.
  var stopping = false;

  // ---- the live state and the Stop button, in the header --------------------------------
  var state = document.createElement("span");
  state.id = "live-state";
  state.className = "live";
  var stop = null;
  if (settings.control) {
    stop = document.createElement("button");
    stop.id = "live-stop";
    stop.type = "button";
    stop.textContent = "Stop the run";
    stop.title = "Stops the run as Ctrl-C does: users stop, and every result is written";
    stop.addEventListener("click", askToStop);
  }

  function placeControls() {
    var header = document.querySelector("header");
    header.appendChild(state);
    if (stop && !ended) {
      header.appendChild(stop);
    }
  }

  var STOPPING = "stopping: users finish, results are being written";

  function say(text, kind) {
    state.textContent = text;
    state.className = "live " + (kind || "");
  }

  function clock() {
    return new Date().toTimeString().slice(0, 8);
  }

  function askToStop() {
    if (!window.confirm("Stop the run? Users stop as with Ctrl-C, and the results are written.")) {
      return;
    }
    stop.disabled = true;
    fetch("/stop" + query, { method: "POST", headers: { "X-Horde-Token": settings.token } })
      .then(function (response) {
        // The final report may arrive on the event stream before this answer does (the run
        // stops at once, the answer waits its turn): it has the last word then.
        if (ended) {
          return;
        }
        stopping = response.ok;
        say(response.ok ? STOPPING : "the run could not be stopped (" + response.status + ")", response.ok ? "" : "lost");
        stop.disabled = response.ok;
      })
      .catch(function () {
        if (!ended) {
          say("the run could not be stopped: the dashboard is gone", "lost");
        }
      });
  }

  // ---- an update: the parts in place of the page's own -------------------------------------
  function nodes(html) {
    var body = new DOMParser().parseFromString("<!DOCTYPE html><body>" + html, "text/html").body;
    return Array.prototype.slice.call(body.childNodes);
  }

  function replaceInside(element, html) {
    element.replaceChildren.apply(element, nodes(html));
  }

  function apply(update) {
    // The reader's search stays as typed; the page and the table's order stay as chosen.
    var search = document.getElementById("request-search");
    var searched = search ? search.value : "";
    document.title = update.title + " · horde report";
    replaceInside(document.querySelector("header"), update.header);
    replaceInside(document.getElementById("nav"), update.nav);
    replaceInside(document.querySelector("main"), update.main);
    document.getElementById("report-charts").textContent = JSON.stringify(update.charts);
    var newSearch = document.getElementById("request-search");
    if (newSearch) {
      newSearch.value = searched;
    }
    window.hordeReport.refresh();
  }

  var source = new EventSource("/events" + query);
  source.addEventListener("report", function (event) {
    var update = JSON.parse(event.data);
    if (update["final"]) {
      ended = true;
      source.close();
    }
    if (event.lastEventId !== shown) {
      shown = event.lastEventId;
      apply(update);
    }
    placeControls();
    if (ended) {
      say("final report: the run has ended", "ended");
    } else {
      say((stopping ? STOPPING + " · " : "live · ") + "updated " + clock());
    }
  });
  source.addEventListener("error", function () {
    if (!ended) {
      say("live · connection lost at " + clock() + ", reconnecting", "lost");
    }
  });
  placeControls();
  say("live · connecting");
})();
