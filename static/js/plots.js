/* Draws the console's plotly figures: each <script type="application/json" data-plotly-for="ID"> holds the figure
   of the div ID. A static file rather than plotly's inline script, so that the Content-Security-Policy can allow
   only the site's own scripts; htmx.onLoad also draws figures in fragments that htmx swaps in.
   plotly.js itself (several MB) is fetched only when a figure is on the page: its URL is this script's
   data-plotly-src, and a page or tab without a chart never downloads it. */
(function () {
  "use strict";

  var source = document.currentScript && document.currentScript.getAttribute("data-plotly-src");
  var waiting = [];
  var loading = false;

  function withPlotly(callback) {
    if (window.Plotly) return callback();
    waiting.push(callback);
    if (loading || !source) return;
    loading = true;
    var script = document.createElement("script");
    script.src = source;
    script.onload = function () {
      var callbacks = waiting;
      waiting = [];
      callbacks.forEach(function (each) { each(); });
    };
    document.head.appendChild(script);
  }

  function draw(root) {
    var figures = root.querySelectorAll ? root.querySelectorAll("script[data-plotly-for]") : [];
    if (!figures.length) return;
    withPlotly(function () {
      figures.forEach(function (data) {
        var target = document.getElementById(data.getAttribute("data-plotly-for"));
        if (!target || !target.isConnected) return;
        var figure = JSON.parse(data.textContent);
        window.Plotly.newPlot(target, figure.data, figure.layout, figure.config);
      });
    });
  }

  if (window.htmx) {
    window.htmx.onLoad(draw);
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { draw(document); });
  } else {
    draw(document);
  }
})();
