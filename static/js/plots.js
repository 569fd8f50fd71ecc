/* Draws the console's plotly figures: each <script type="application/json" data-plotly-for="ID"> holds the figure
   of the div ID. A static file rather than plotly's inline script, so that the Content-Security-Policy can allow
   only the site's own scripts; htmx.onLoad also draws figures in fragments that htmx swaps in. */
(function () {
  "use strict";

  function draw(root) {
    root.querySelectorAll("script[data-plotly-for]").forEach(function (data) {
      var target = document.getElementById(data.getAttribute("data-plotly-for"));
      if (!target || !window.Plotly) return;
      var figure = JSON.parse(data.textContent);
      window.Plotly.newPlot(target, figure.data, figure.layout, figure.config);
    });
  }

  if (window.htmx) {
    window.htmx.onLoad(draw);
  } else {
    document.addEventListener("DOMContentLoaded", function () { draw(document); });
  }
})();
