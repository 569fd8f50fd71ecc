/* Dialogs opened by htmx (every action also works as a plain page without this file; the CSP allows no inline
   handlers, so closing is done here rather than in hx-on attributes):
   - a console dialog in #modal takes the focus on its first field;
   - while it is open, Tab and Shift+Tab cycle through its own controls (aria-modal alone does not keep the focus in);
   - Escape or Cancel ([data-modal-close]) closes it and gives the focus back to the button that opened it;
   - a link with data-dismiss="<selector>" empties its closest such container (the chat's "Keep it"). */
(function () {
  "use strict";

  var opener = null;

  function dialogHolder() { return document.getElementById("modal"); }

  function close() {
    var holder = dialogHolder();
    if (!holder || !holder.querySelector(".modal")) return false;
    holder.innerHTML = "";
    if (opener && document.contains(opener)) opener.focus();
    return true;
  }

  document.addEventListener("htmx:beforeRequest", function (event) {
    var target = event.detail.target;
    if (target && target.id === "modal" && !dialogHolder().contains(event.detail.elt)) opener = event.detail.elt;
  });

  document.addEventListener("htmx:afterSettle", function (event) {
    if (!event.detail.elt || event.detail.elt.id !== "modal") return;
    var field = dialogHolder().querySelector(".modal textarea, .modal input:not([type=hidden]), .modal select");
    if (field) field.focus();
  });

  var FOCUSABLE = "a[href], button:not([disabled]), input:not([disabled]):not([type=hidden]), select:not([disabled]), " +
    "textarea:not([disabled]), summary, [tabindex]:not([tabindex='-1'])";

  function trap(event) {
    var modal = dialogHolder() && dialogHolder().querySelector(".modal");
    if (!modal) return;
    var stops = Array.prototype.filter.call(modal.querySelectorAll(FOCUSABLE), function (element) {
      return element.offsetParent !== null || element === document.activeElement;
    });
    if (!stops.length) { event.preventDefault(); modal.focus(); return; }
    var first = stops[0], last = stops[stops.length - 1], inside = modal.contains(document.activeElement);
    if (event.shiftKey && (!inside || document.activeElement === first)) {
      event.preventDefault();
      last.focus();
    } else if (!event.shiftKey && (!inside || document.activeElement === last)) {
      event.preventDefault();
      first.focus();
    }
  }

  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && close()) event.preventDefault();
    else if (event.key === "Tab") trap(event);
  });

  // A click outside the dialog (on the backdrop) must not leave the focus behind it either.
  document.addEventListener("focusin", function (event) {
    var modal = dialogHolder() && dialogHolder().querySelector(".modal");
    if (modal && !modal.contains(event.target)) {
      var stop = modal.querySelector(FOCUSABLE);
      (stop || modal).focus();
    }
  });

  document.addEventListener("click", function (event) {
    if (event.target.closest("#modal [data-modal-close]") && close()) event.preventDefault();
    var dismiss = event.target.closest("[data-dismiss]");
    var container = dismiss && dismiss.closest(dismiss.getAttribute("data-dismiss"));
    if (container) {
      event.preventDefault();
      var slot = container.id ? document.querySelector("[hx-target='#" + container.id + "']") : null;
      container.innerHTML = "";
      if (slot) slot.focus();
    }
  });
})();
