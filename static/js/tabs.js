/* Tabs whose panel htmx loads (the tabs are links, so each also works as a plain page without this file):
   - one tab in the tab order (the selected one); Left/Right, Home/End move between tabs, Enter or Space opens one
     (manual activation: loading a panel is a request, so moving along the tabs must not load each one);
   - once htmx has swapped in the panel a tab opened, the focus goes to that panel (tabindex="-1"), not to <body>,
     because the tab that had the focus was replaced with the rest of the swapped content. */
(function () {
  "use strict";

  function tabsOf(tab) {
    return Array.prototype.slice.call(tab.closest("[role=tablist]").querySelectorAll("[role=tab]"));
  }

  document.addEventListener("keydown", function (event) {
    var tab = event.target.closest && event.target.closest("[role=tablist] [role=tab]");
    if (!tab) return;
    if (event.key === " " || event.key === "Spacebar") {
      event.preventDefault();
      tab.click();
      return;
    }
    var tabs = tabsOf(tab), index = tabs.indexOf(tab), next = null;
    if (event.key === "ArrowRight") next = tabs[(index + 1) % tabs.length];
    else if (event.key === "ArrowLeft") next = tabs[(index - 1 + tabs.length) % tabs.length];
    else if (event.key === "Home") next = tabs[0];
    else if (event.key === "End") next = tabs[tabs.length - 1];
    if (!next) return;
    event.preventDefault();
    tabs.forEach(function (each) { each.setAttribute("tabindex", each === next ? "0" : "-1"); });
    next.focus();
  });

  document.addEventListener("htmx:afterSettle", function (event) {
    var config = event.detail.requestConfig;
    if (!config || !config.elt || !config.elt.matches("[role=tab]")) return;
    var selected = document.querySelector("[role=tab][aria-selected=true]");
    var panel = selected && document.getElementById(selected.getAttribute("aria-controls"));
    if (panel) panel.focus();
  });
})();
